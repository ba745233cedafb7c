use d1_retry::{RetryPolicy, d1_retry};

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

const FAST: RetryPolicy = RetryPolicy::DEFAULT.with_max_attempts(3);

#[d1_retry(policy = FAST, max_attempts = 2)]
async fn find(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

fn main() {
    let _ = find;
}
