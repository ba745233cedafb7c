//! A `read_only` body's executions of statements it did not make in sight are observed
//! where they run (the attempt reads the SQL they hold), in every receiver shape, and the
//! code compiles as written: a parameter, a field, a guard's value, an index, a deref, a
//! stored future, futures made in a closure, a `batch` of a list collected elsewhere, a
//! closure made into a `fn` pointer and an `async move` block that must own all it holds
//! (neither may borrow the attempt), also in a generic repository that borrows (the
//! function's name, which such an observation logs, names `Self` there); and calls named
//! like executions on values that are not D1's (`slice.first()`).
#![deny(warnings)]

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, Statement, block_on};

/// A statement's `run`, boxed, for a `fn` pointer to name.
type Running<'s> = Pin<Box<dyn Future<Output = Result<u64, DbError>> + 's>>;

/// Hands back a future that must own all it holds, as a spawned task's must.
fn owning<F: Future + 'static>(future: F) -> F {
    future
}

struct Repo {
    db: Db,
    stmt: Statement,
    cell: RefCell<Statement>,
    list: Vec<Statement>,
    items: Vec<i64>,
}

impl Repo {
    #[d1_retry(read_only)]
    async fn shapes(&self, passed: &Statement, boxed: Box<Statement>) -> Result<i64, DbError> {
        let first = self.items.first().copied().unwrap_or(0);
        let slice: &[i64] = &self.items;
        let last = (*slice).first().copied().unwrap_or(0);
        passed.run().await?;
        self.stmt.first().await?;
        self.cell.borrow().all().await?;
        self.list[0].run().await?;
        (*boxed).run().await?;
        let pending = self.stmt.run();
        pending.await?;
        let runs: Vec<_> = self.list.iter().map(|s| s.run()).collect();
        for run in runs {
            run.await?;
        }
        self.db.batch(self.list.clone()).await?;
        let run: for<'s> fn(&'s Statement) -> Running<'s> = |s| Box::pin(s.run());
        run(passed).await?;
        let (owned, list) = (passed.clone(), self.list.clone());
        owning(async move {
            owned.run().await?;
            Db.batch(list).await
        })
        .await?;
        Ok(first + last)
    }
}

/// A generic repository that borrows its database.
struct Borrowed<'a, T> {
    db: &'a Db,
    tag: T,
}

impl<'a, T: Clone> Borrowed<'a, T> {
    #[d1_retry(read_only)]
    async fn out_of_sight(&self, passed: &Statement, sql: &str) -> Result<u64, DbError> {
        let _tag = self.tag.clone();
        let run: for<'s> fn(&'s Statement) -> Running<'s> = |s| Box::pin(s.run());
        run(passed).await?;
        let exec: fn(String) -> Pin<Box<dyn Future<Output = Result<u64, DbError>>>> =
            |sql| Box::pin(async move { Db.exec(&sql).await });
        exec(sql.to_owned()).await?;
        let (owned, sql) = (passed.clone(), sql.to_owned());
        owning(async move {
            owned.run().await?;
            Db.prepare(sql).run().await
        })
        .await?;
        self.db.prepare("SELECT 6").run().await
    }
}

fn main() {
    let db = Db;
    let repo = Repo {
        stmt: db.prepare("SELECT 1"),
        cell: RefCell::new(db.prepare("SELECT 2")),
        list: vec![db.prepare("SELECT 3")],
        items: vec![1],
        db,
    };
    let passed = repo.db.prepare("SELECT 4");
    let boxed = Box::new(repo.db.prepare("SELECT 5"));
    assert_eq!(block_on(repo.shapes(&passed, boxed)).ok(), Some(2));
    let borrowed = Borrowed {
        db: &repo.db,
        tag: String::from("tag"),
    };
    assert!(block_on(borrowed.out_of_sight(&passed, "SELECT 7")).is_ok());
}
