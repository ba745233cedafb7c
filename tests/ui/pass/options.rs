//! Every option, and a renamed dependency through `crate = "..."`.
#![deny(warnings)]
extern crate d1_retry as renamed_d1_retry;

use d1_retry::{RetryPolicy, d1_retry};

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError};

const FAST: RetryPolicy = RetryPolicy::DEFAULT.with_max_attempts(3);

#[d1_retry(read_only)]
async fn read_only(db: &Db, sql: &str) -> Result<u64, DbError> {
    db.prepare(sql).run().await
}

#[d1_retry(idempotent)]
async fn idempotent(db: &Db) -> Result<u64, DbError> {
    db.prepare("INSERT OR IGNORE INTO tags (name) VALUES ('a')")
        .run()
        .await?;
    db.prepare("INSERT OR IGNORE INTO tags (name) VALUES ('b')")
        .run()
        .await
}

#[d1_retry(max_attempts = 3, base_delay_ms = 50, max_delay_ms = 500)]
async fn knobs(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

#[d1_retry(policy = FAST, name = "users.find")]
async fn policy(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

#[d1_retry(crate = "renamed_d1_retry", read_only)]
async fn renamed(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

/// The expansion's paths through the renamed dependency: a policy constant (checked, and
/// its time limits chosen, by the compiler) and each call retried on its own.
#[d1_retry(crate = "renamed_d1_retry", policy = FAST)]
async fn renamed_per_call(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await?;
    db.prepare("INSERT INTO tags (name) VALUES ('c')").run().await
}

#[d1_retry(read_only)]
async fn no_site(db: &Db) -> Result<u64, DbError> {
    helper(db).await
}

async fn helper(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

fn main() {
    let _ = (
        read_only,
        idempotent,
        knobs,
        policy,
        renamed,
        renamed_per_call,
        no_site,
    );
}
