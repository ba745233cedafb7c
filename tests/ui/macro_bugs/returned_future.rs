//! Should pass. A call on a variable is rewritten even where it is not awaited, and its
//! future then borrows the function's schedule, so it cannot leave the function:
//! error[E0515]: cannot return value referencing temporary value, "temporary value created
//! here" at `#[d1_retry]`. Without the attribute the future borrows only `statement`.
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
