//! Should pass. An execution's arguments are evaluated once, before the call (a retry gets
//! clones), so the parameter's type no longer guides the expression inside them: D1's
//! `first(col_name: Option<&str>)` handed `Some(&column)` with a `String` column fails with
//! error[E0308]: mismatched types, expected `Option<&str>`, found `Option<&String>`, at the
//! argument. Without the attribute, `&column` coerces to `&str` inside `Some(..)`. The
//! README says to write `Some(column.as_str())`, which compiles either way.
#![deny(warnings)]

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, Error};

#[d1_retry]
async fn column(db: &D1Database, column: String) -> Result<Option<i64>, Error> {
    db.prepare("SELECT 1 AS n").first::<i64>(Some(&column)).await
}

fn main() {
    let _ = column;
}
