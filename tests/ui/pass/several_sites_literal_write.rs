//! Was a compile error while the whole body was retried: two literal writes. Each is now
//! retried on its own, so the first never runs again when the second fails.
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

#[d1_retry]
async fn transfer(db: &Db, from: i64, to: i64) -> Result<u64, DbError> {
    db.prepare("UPDATE accounts SET balance = balance - 10 WHERE id = ?1")
        .bind(&[from])?
        .run()
        .await?;
    db.prepare("UPDATE accounts SET balance = balance + 10 WHERE id = ?1")
        .bind(&[to])?
        .run()
        .await
}

fn main() {
    assert_eq!(block_on(transfer(&Db, 1, 2)).ok(), Some(1));
}
