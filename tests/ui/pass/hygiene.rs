//! The expansion names everything absolutely and its locals are hygienic: a caller with
//! its own `core`, `std`, `Result`, `Option`, `Ok`, and locals named like the expansion's
//! compiles, warning-free.
#![deny(warnings)]
#![allow(non_camel_case_types)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError};

mod core {}
mod std {}

#[allow(dead_code)]
struct Option;
#[allow(dead_code)]
struct Some;
#[allow(dead_code)]
struct None;
#[allow(dead_code)]
struct Default;

#[allow(unused_macros)]
macro_rules! panic {
    () => {};
}

#[d1_retry]
async fn find(db: &Db, __d1_retry_attempt: i64) -> ::core::result::Result<u64, DbError> {
    let __d1_retry_driver = __d1_retry_attempt;
    let sql = "SELECT 1";
    let _ = __d1_retry_driver;
    db.prepare(sql).run().await
}

#[d1_retry]
async fn find_more(db: &Db) -> ::core::result::Result<u64, DbError> {
    let __d1_retry_error = 1;
    let _ = __d1_retry_error;
    db.prepare(SQL).run().await
}

const SQL: &str = "SELECT 2";

fn main() {
    let _ = (find, find_more);
}
