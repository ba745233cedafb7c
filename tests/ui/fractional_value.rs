use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

#[d1_retry(max_attempts = 2.5)]
async fn find(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

fn main() {
    let _ = find;
}
