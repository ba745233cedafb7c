use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

#[d1_retry]
async fn create(db: &Db) -> Result<Vec<u64>, DbError> {
    let first = db.prepare("SELECT 1");
    let statements = vec![first];
    db.batch(statements).await
}

fn main() {
    let _ = create;
}
