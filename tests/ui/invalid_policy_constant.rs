use d1_retry::{RetryPolicy, d1_retry};

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

const NEVER: RetryPolicy = RetryPolicy::DEFAULT.with_max_attempts(0);

#[d1_retry(policy = NEVER)]
async fn find(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

// A whole body, and one whose error type cannot be named: each checked too, once.
#[d1_retry(read_only, policy = NEVER)]
async fn find_whole(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

#[d1_retry(read_only, policy = NEVER)]
async fn find_opaque(db: &Db) -> Result<Option<i64>, impl std::error::Error + use<>> {
    db.prepare("SELECT 1").first().await
}

fn main() {
    let _ = (find, find_whole, find_opaque);
}
