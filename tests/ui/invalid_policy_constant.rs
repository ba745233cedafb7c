use d1_retry::{RetryPolicy, d1_retry};

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

const NEVER: RetryPolicy = RetryPolicy::DEFAULT.with_max_attempts(0);

#[d1_retry(policy = NEVER)]
async fn find(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

fn main() {
    let _ = find;
}
