//! A `policy = PATH` that is not a `RetryPolicy`: one error, at the path, though the
//! expansion reads the policy in several places (its check, the loop's choice, the call).
use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

const ATTEMPTS: u32 = 3;

#[d1_retry(policy = ATTEMPTS)]
async fn find(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

#[d1_retry(read_only, policy = ATTEMPTS)]
async fn find_whole(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

fn main() {
    let _ = (find, find_whole);
}
