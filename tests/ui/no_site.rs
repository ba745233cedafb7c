use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

async fn load(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

#[d1_retry]
async fn find(db: &Db) -> Result<Option<i64>, DbError> {
    load(db).await
}

fn main() {
    let _ = find;
}
