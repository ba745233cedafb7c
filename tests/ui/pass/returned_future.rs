//! A call on a variable that is not awaited is rewritten, but not in the function's
//! returned value: a future returned from the function must not borrow the call's schedule
//! (E0515), so it is left as written.
#![deny(warnings)]

use std::future::Future;

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, Statement, block_on};

#[d1_retry]
async fn later<'a>(
    statement: &'a Statement,
) -> Result<impl Future<Output = Result<u64, DbError>> + 'a, DbError> {
    statement.first().await?;
    Ok(statement.run())
}

fn main() {
    let statement = Db.prepare("DELETE FROM t");
    let future = block_on(later(&statement)).ok();
    assert_eq!(future.map(block_on).and_then(Result::ok), Some(1));
}
