//! Was a compile error while the whole body was retried: a write in a loop. Each run of
//! the statement is now retried on its own; the rows already tagged are not tagged again.
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

#[d1_retry]
async fn tag_all(db: &Db, ids: &[i64]) -> Result<(), DbError> {
    for id in ids {
        db.prepare("INSERT INTO tags (user_id, tag) VALUES (?1, 'new')")
            .bind(&[*id])?
            .run()
            .await?;
    }
    Ok(())
}

fn main() {
    assert!(block_on(tag_all(&Db, &[1, 2, 3])).is_ok());
}
