//! Was a compile error while the whole body was retried: a constant that writes among
//! several statements. Each execution is now retried on its own, its constant judged by
//! the compiler where it is used.
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

mod sql {
    pub const FIND: &str = "SELECT id FROM users WHERE email = ?1";
    pub const AUDIT: &str = "INSERT INTO audit (event) VALUES ('lookup')";
}

#[d1_retry]
async fn find_and_audit(db: &Db) -> Result<u64, DbError> {
    db.prepare(sql::FIND).run().await?;
    db.prepare(sql::AUDIT).run().await
}

fn main() {
    assert_eq!(block_on(find_and_audit(&Db)).ok(), Some(1));
}
