use std::future::Future;
use std::pin::Pin;

use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

type Found<'a> = Pin<Box<dyn Future<Output = Result<Option<i64>, DbError>> + 'a>>;

#[d1_retry]
fn find(db: &Db) -> Result<Option<i64>, DbError> {
    let _ = db.prepare("SELECT 1");
    Ok(None)
}

/// A boxed future written by hand, without `move`: not what `#[async_trait]` writes.
#[d1_retry]
fn find_boxed(db: &Db) -> Found<'_> {
    Box::pin(async { db.prepare("SELECT 1").first().await })
}

/// `async move` handed to something other than `Box::pin`.
#[d1_retry]
fn find_wrapped(db: &Db) -> Found<'_> {
    wrap(async move { db.prepare("SELECT 1").first().await })
}

fn wrap<'a>(future: impl Future<Output = Result<Option<i64>, DbError>> + 'a) -> Found<'a> {
    Box::pin(future)
}

fn main() {
    let _ = (find, find_boxed, find_wrapped);
}
