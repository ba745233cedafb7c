//! Generic functions, `where` clauses, `impl Trait` arguments, lifetimes, generic errors.
#![deny(warnings)]
use std::fmt::Display;

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError};

trait Database {
    fn prepare(&self, sql: &str) -> db::Statement;
}

impl Database for Db {
    fn prepare(&self, sql: &str) -> db::Statement {
        Db::prepare(self, sql)
    }
}

#[d1_retry]
async fn generic<D>(db: &D) -> Result<Option<i64>, DbError>
where
    D: Database + ?Sized,
{
    db.prepare("SELECT 1").first().await
}

#[d1_retry]
async fn with_impl_trait(
    db: &impl Database,
    ids: impl IntoIterator<Item = i64> + Clone,
) -> Result<u64, DbError> {
    let _ = ids.clone().into_iter().count();
    db.prepare("SELECT 1").run().await
}

#[d1_retry]
async fn with_lifetimes<'a, 'b: 'a>(db: &'a Db, name: &'b str) -> Result<&'a Db, DbError> {
    let _ = name;
    db.prepare("SELECT 1").run().await?;
    Ok(db)
}

#[d1_retry]
async fn std_error<E>(db: &Db, fail: impl Fn() -> Option<E>) -> Result<u64, E>
where
    E: std::error::Error + From<DbError> + 'static,
{
    if let Some(error) = fail() {
        return Err(error);
    }
    Ok(db.prepare("SELECT 1").run().await?)
}

#[d1_retry]
async fn display_error<E: Display + From<DbError>>(db: &Db) -> Result<u64, E> {
    Ok(db.prepare("SELECT 1").run().await?)
}

#[d1_retry]
async fn const_generic<const N: usize>(db: &Db) -> Result<[u64; N], DbError> {
    let changed = db.prepare("SELECT 1").run().await?;
    Ok([changed; N])
}

#[d1_retry]
async fn opaque(db: &Db) -> Result<impl Display, DbError> {
    Ok(db.prepare("SELECT 1").run().await?)
}

/// A method of a generic type with a lifetime: its name, `Borrowed::find`, is a constant
/// (`type_name::<Self>` is a function), which the expansion borrows as a `'static` whatever
/// `Self` is.
struct Borrowed<'a, D: ?Sized> {
    db: &'a D,
}

impl<D: Database + ?Sized> Borrowed<'_, D> {
    #[d1_retry]
    async fn find(&self) -> Result<Option<i64>, DbError> {
        self.db.prepare("SELECT 1").first().await
    }
}

fn main() {
    let _ = opaque;
    let _ = Borrowed::<Db>::find;
    let _ = Borrowed { db: &Db as &dyn Database }.find();
    let _ = generic::<Db>;
    let _ = with_impl_trait(&Db, vec![1]);
    let _ = with_lifetimes;
    let _ = std_error(&Db, || None::<DbError>);
    let _ = display_error::<Message>;
    let _ = const_generic::<3>;
}

/// Only `Display`: classified by its text.
struct Message(String);

impl Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<DbError> for Message {
    fn from(error: DbError) -> Self {
        Message(error.to_string())
    }
}
