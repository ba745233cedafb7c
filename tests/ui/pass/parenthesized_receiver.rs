//! A parenthesized receiver loses its parentheses in the rewrite, so `unused_parens`
//! does not fire in the user's code.
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
