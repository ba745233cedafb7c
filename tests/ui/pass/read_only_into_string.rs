//! Under `read_only`, SQL that `prepare` accepts as `impl Into<String>` but that is not
//! `AsRef<str>` compiles: it cannot be read, so the attempt counts it as a write.
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

struct Query(&'static str);

impl From<Query> for String {
    fn from(query: Query) -> String {
        query.0.to_owned()
    }
}

#[d1_retry(read_only)]
async fn find(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare(Query("SELECT 1")).first().await
}

fn main() {
    assert_eq!(block_on(find(&Db)).ok(), Some(Some(1)));
}
