//! `assert!` and `dbg!` print their argument's tokens, so executions inside them are left
//! as written: a failed `assert!` shows the user's `db.prepare("SELECT 1")...`, not the
//! rewrite. The read before it makes the function one with an execution to retry.
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

#[d1_retry]
async fn checked(db: &Db) -> Result<(), DbError> {
    db.prepare("SELECT 0").first().await?;
    assert!(db.prepare("SELECT 1").first().await?.is_none());
    Ok(())
}

fn main() {
    std::panic::set_hook(Box::new(|_| {}));
    let panic = std::panic::catch_unwind(|| block_on(checked(&Db))).unwrap_err();
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    let _ = std::panic::take_hook();
    assert_eq!(
        message,
        "assertion failed: db.prepare(\"SELECT 1\").first().await?.is_none()"
    );
}
