//! Should pass. SQL named like a constant is judged by `const { is_read_only(PATH) }`,
//! which only takes `&str`: a `static LazyLock<String>` (coerced to `&str` by `exec`) or a
//! `const String` fails with error[E0308]: mismatched types, expected `&str`, found
//! `LazyLock<String>`, "arguments to this function are incorrect" at `#[d1_retry]`, and a
//! note pointing into d1-retry-runtime's `is_read_only`.
#![deny(warnings)]

use std::sync::LazyLock;

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

static PURGE: LazyLock<String> = LazyLock::new(|| format!("DELETE FROM {}", "sessions"));

#[d1_retry]
async fn purge(db: &Db) -> Result<u64, DbError> {
    db.exec(&PURGE).await
}

fn main() {
    assert_eq!(block_on(purge(&Db)).ok(), Some(20));
}
