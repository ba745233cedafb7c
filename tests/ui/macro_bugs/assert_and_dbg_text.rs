//! Should pass; compiles, but its assertion fails. Executions inside `assert!` and `dbg!`
//! are rewritten before those macros stringify their argument, so a failed `assert!` says
//! "assertion failed: match db.prepare(\"SELECT 1\") { #[allow(unused_mut)] mut
//! __d1_retry_recv => (&& :: d1_retry :: __private :: Receiver :: of(..." and `dbg!`
//! prints the same, instead of the user's `db.prepare("SELECT 1").first().await?...`.
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

#[d1_retry]
async fn checked(db: &Db) -> Result<(), DbError> {
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
