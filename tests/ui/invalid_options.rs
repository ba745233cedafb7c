use d1_retry::{RetryPolicy, d1_retry};

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

const FAST: RetryPolicy = RetryPolicy::DEFAULT.with_max_attempts(3);
const ATTEMPTS: u32 = 3;

#[d1_retry(read_only, read_only)]
async fn flag_twice(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

#[d1_retry(max_attempts = 2, policy = FAST)]
async fn policy_after_knob(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

#[d1_retry(max_attempts = ATTEMPTS)]
async fn constant_knob(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

#[d1_retry(max_delay_ms = 99999999999999999999)]
async fn too_large(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

#[d1_retry(name = users_find)]
async fn unquoted_name(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

#[d1_retry(crate = "not a path")]
async fn bad_crate(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

fn main() {
    let _ = FAST;
    let _ = (
        flag_twice,
        policy_after_knob,
        constant_knob,
        too_large,
        unquoted_name,
        bad_crate,
    );
}
