//! Should pass. A parenthesized receiver becomes a `match` scrutinee with its parentheses,
//! and rustc's lint fires in the user's code: error: unnecessary parentheses around
//! `match` scrutinee expression (`#[deny(unused_parens)]` implied by `#[deny(warnings)]`),
//! spanned at the user's parentheses. Without the attribute there is no warning.
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

#[d1_retry]
async fn parenthesized(db: &Db) -> Result<u64, DbError> {
    let statement = db.prepare("SELECT 1");
    (db.prepare("SELECT 1")).run().await?;
    (&statement).run().await
}

fn main() {
    assert_eq!(block_on(parenthesized(&Db)).ok(), Some(1));
}
