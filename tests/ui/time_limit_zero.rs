use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

#[d1_retry(attempt_timeout_ms = 0)]
async fn find(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

#[d1_retry(deadline_ms = 0)]
async fn count(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT count(*) FROM t").run().await
}

#[d1_retry(attempt_timeout_ms = 1000, attempt_timeout_ms = 2000)]
async fn twice(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

fn main() {
    let _ = (find, count, twice);
}
