//! Whole-body mode (`read_only`, `idempotent`): the attempt's `async` block has the
//! function's declared output type before its body is type-checked, so a body that needs
//! it compiles as it would without the attribute. Most bodies would compile without it
//! (rustc defers `?`'s conversion and a tail's inference to the end of the function); a
//! coercion does not wait: a tail or a `return` of `Box<Row>` for `Box<dyn Display>`, or
//! of `&Vec<_>` for `&[_]`, coerces only where the expected type is already known. Also
//! here: `?` converting into the declared error, a tail whose type comes from the declared
//! one (`collect()`, `Default::default()`, `.into()`), an alias of `Result`, and an
//! `impl Trait` in the output.
#![deny(warnings)]

use std::fmt;

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, block_on};
#[path = "../support/app_error.rs"]
mod app_error;
use app_error::AppError;

/// An alias of `Result`, named as the attribute requires (`worker::Result<T>` is one).
mod app {
    pub type Result<T> = std::result::Result<T, super::AppError>;
}

#[derive(Debug, Default, PartialEq)]
struct Id(i64);

impl From<i64> for Id {
    fn from(id: i64) -> Self {
        Id(id)
    }
}

/// `?` converts `DbError` into `AppError`, the output's `Ok` comes from `Option`'s.
#[d1_retry(read_only)]
async fn found(db: &Db, id: i64) -> Result<i64, AppError> {
    let row = db
        .prepare("SELECT id FROM users WHERE id = ?1")
        .bind(&[id])?
        .first()
        .await?;
    row.ok_or(AppError::NotFound)
}

/// `collect()` into the declared type, through an alias.
#[d1_retry(read_only)]
async fn ids(db: &Db) -> app::Result<Vec<Id>> {
    let rows = db.prepare("SELECT id FROM users").all().await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// `Default::default()` and `.into()` of the declared type.
#[d1_retry(idempotent)]
async fn touched(db: &Db, id: i64) -> Result<Id, AppError> {
    let changed = db
        .prepare("UPDATE users SET seen_at = 1 WHERE id = ?1")
        .bind(&[id])?
        .run()
        .await?;
    if changed == 0 {
        return Ok(Default::default());
    }
    Ok(id.into())
}

/// An `impl Trait` in the output.
#[d1_retry(read_only)]
async fn shown(db: &Db) -> Result<impl fmt::Display, AppError> {
    let n = db.prepare("SELECT count(*) FROM users").first().await?;
    Ok(n.unwrap_or_default())
}

/// A tail coerced to a trait object, and an early `return` too.
#[d1_retry(read_only)]
async fn boxed(db: &Db, id: i64) -> Result<Box<dyn fmt::Display>, AppError> {
    let n = db
        .prepare("SELECT id FROM users WHERE id = ?1")
        .bind(&[id])?
        .first()
        .await?;
    if n.is_none() {
        return Ok(Box::new("none"));
    }
    Ok(Box::new(n.unwrap_or_default()))
}

/// A borrow coerced to a slice of what the function was handed.
#[d1_retry(idempotent)]
async fn kept<'a>(db: &Db, ids: &'a Vec<i64>) -> Result<&'a [i64], AppError> {
    db.prepare("DELETE FROM sessions").run().await?;
    Ok(ids)
}

fn main() {
    assert_eq!(block_on(found(&Db, 1)).ok(), Some(1));
    assert_eq!(block_on(ids(&Db)).ok(), Some(vec![Id(1)]));
    assert_eq!(block_on(touched(&Db, 7)).ok(), Some(Id(7)));
    assert_eq!(block_on(shown(&Db)).ok().map(|n| n.to_string()), Some("1".to_owned()));
    assert_eq!(block_on(boxed(&Db, 1)).ok().map(|n| n.to_string()), Some("1".to_owned()));
    let ids = vec![1, 2];
    assert_eq!(block_on(kept(&Db, &ids)).ok(), Some(&[1, 2][..]));
}
