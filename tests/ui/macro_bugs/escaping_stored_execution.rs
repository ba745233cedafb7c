//! Should pass. An execution on a variable that is not awaited where it is written is
//! rewritten to share the function's schedule, which the function holds: a future of it
//! that leaves the function by another way than its returned value (pushed into a `Vec`
//! the caller lent, stored in a field of `&mut self`, bound by `let` and returned later,
//! handed to a spawner that wants `'static`) fails with error[E0716]: temporary value
//! dropped while borrowed, or error[E0521]: borrowed data escapes outside of associated
//! function, at `#[d1_retry]`. Written inside an async block, which has a schedule of its
//! own, it compiles and is retried: `out.push(Box::pin(async { s.run().await }))`.
#![deny(warnings)]

use std::future::Future;
use std::pin::Pin;

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, Statement, block_on};

type Boxed<'a> = Pin<Box<dyn Future<Output = Result<u64, DbError>> + 'a>>;

#[d1_retry]
async fn lent<'a>(statement: &'a Statement, out: &mut Vec<Boxed<'a>>) -> Result<(), DbError> {
    out.push(Box::pin(statement.run()));
    Ok(())
}

#[d1_retry]
async fn bound_then_returned<'a>(statement: &'a Statement) -> Result<Boxed<'a>, DbError> {
    let future: Boxed<'a> = Box::pin(statement.run());
    Ok(future)
}

fn main() {
    let statement = Db.prepare("DELETE FROM t");
    let mut lent_futures = Vec::new();
    block_on(lent(&statement, &mut lent_futures)).unwrap();
    assert_eq!(block_on(lent_futures.pop().unwrap()).unwrap(), 1);
    assert_eq!(block_on(block_on(bound_then_returned(&statement)).unwrap()).unwrap(), 1);
}
