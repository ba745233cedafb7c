//! An execution's arguments are evaluated once, before the call (a retry gets clones),
//! where D1's `first(col_name: Option<&str>)` cannot type them: `Some(&column)` with a
//! `String` column would be an `Option<&String>` there (E0308). The expansion hands the
//! argument through a method with `first`'s parameter type (the runtime's
//! `first_column.rs`), so `&column` coerces to `&str` inside `Some(..)` as it does without
//! the attribute; `as_ref()` finds its target type the same way.
#![deny(warnings)]

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, Error};

#[d1_retry]
async fn column(db: &D1Database, column: String) -> Result<Option<i64>, Error> {
    db.prepare("SELECT 1 AS n").first::<i64>(Some(&column)).await
}

#[d1_retry]
async fn column_as_ref(db: &D1Database, column: &String) -> Result<Option<i64>, Error> {
    let statement = db.prepare("SELECT 1 AS n");
    let kept = statement.first::<i64>(Some(column.as_ref()));
    kept.await
}

fn main() {
    let _ = (column, column_as_ref);
}
