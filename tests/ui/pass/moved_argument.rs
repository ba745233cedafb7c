//! Was a compile error while the whole body was retried ("value moved here, in previous
//! iteration of loop"): the default mode has no loop around the body, so a body may move
//! its arguments, and neither has a `read_only` body that is one D1 call, retried as that
//! call. `#[d1_retry(read_only)]` on any other body, and `idempotent`, still refuse it
//! (`tests/ui/moved_argument.rs`).
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

#[d1_retry]
async fn rename(db: &Db, name: String) -> Result<u64, DbError> {
    let name: Vec<u8> = name.into_bytes();
    db.prepare("UPDATE users SET name = ?1")
        .bind(&[name.len() as i64])?
        .run()
        .await
}

/// A `read_only` body that is one D1 call.
#[d1_retry(read_only)]
async fn find(db: &Db, name: String) -> Result<Option<i64>, DbError> {
    let name: Vec<u8> = name.into_bytes();
    db.prepare("SELECT id FROM users WHERE length(name) = ?1")
        .bind(&[name.len() as i64])?
        .first()
        .await
}

/// The moved value is used after the execution, and moved into it.
#[d1_retry]
async fn insert(db: &Db, sql: String, tags: Vec<String>) -> Result<Vec<String>, DbError> {
    db.exec(&sql).await?;
    db.prepare(sql).run().await?;
    Ok(tags)
}

fn main() {
    assert_eq!(block_on(rename(&Db, "ada".to_owned())).ok(), Some(1));
    assert!(block_on(find(&Db, "ada".to_owned())).is_ok());
    let tags = vec!["a".to_owned()];
    assert_eq!(
        block_on(insert(&Db, "INSERT INTO t VALUES (1)".to_owned(), tags)).ok(),
        Some(vec!["a".to_owned()])
    );
}
