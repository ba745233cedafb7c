//! Was a compile error while the whole body was retried: a `batch` of statements
//! collected out of sight. Its list is read where the batch begins (`batch_sql.rs`); the
//! stand-in's statements cannot tell their SQL, so here it counts as a write, retried only
//! when D1 was not reached; a function with one execution needs nothing more.
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

#[d1_retry]
async fn create(db: &Db) -> Result<Vec<u64>, DbError> {
    let first = db.prepare("SELECT 1");
    let statements = vec![first];
    db.batch(statements).await
}

fn main() {
    assert_eq!(block_on(create(&Db)).ok(), Some(vec![1]));
}
