//! An async block without `move` may outlive the function too, when all it captures does:
//! one that reaches the database through `&self` can be returned, pushed into a `Vec` the
//! caller lent, or made by a returned closure. Each block has a schedule of its own, as a
//! `move` block has, so none borrows the function's (E0515, E0716 otherwise).
#![deny(warnings)]

use std::future::Future;
use std::pin::Pin;

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T, DbError>> + 'a>>;

struct Repo {
    db: Db,
}

impl Repo {
    #[d1_retry]
    async fn returned(&self) -> Result<impl Future<Output = Result<Option<i64>, DbError>> + '_, DbError> {
        Ok(async { self.db.prepare("SELECT 1").first().await })
    }

    #[d1_retry]
    async fn lent<'a>(&'a self, out: &mut Vec<Boxed<'a, u64>>) -> Result<(), DbError> {
        out.push(Box::pin(async { self.db.prepare("DELETE FROM t").run().await }));
        Ok(())
    }

    #[d1_retry]
    async fn bound_then_returned(&self) -> Result<Boxed<'_, Option<i64>>, DbError> {
        let future: Boxed<'_, Option<i64>> =
            Box::pin(async { self.db.prepare("SELECT 1").first().await });
        Ok(future)
    }

    #[d1_retry]
    async fn made_by_a_closure<'a>(&'a self) -> Result<impl Fn() -> Boxed<'a, Option<i64>> + 'a, DbError> {
        Ok(|| Box::pin(async { self.db.prepare("SELECT 1").first().await }) as Boxed<'a, Option<i64>>)
    }

    #[d1_retry]
    async fn collected(&self) -> Result<Vec<Boxed<'_, Option<i64>>>, DbError> {
        let mut futures: Vec<Boxed<'_, Option<i64>>> = Vec::new();
        for _ in 0..2 {
            futures.push(Box::pin(async { self.db.prepare("SELECT 1").first().await }));
        }
        Ok(futures)
    }
}

fn main() {
    let repo = Repo { db: Db };
    assert_eq!(block_on(block_on(repo.returned()).unwrap()).unwrap(), Some(1));
    let mut lent = Vec::new();
    block_on(repo.lent(&mut lent)).unwrap();
    assert_eq!(block_on(lent.pop().unwrap()).unwrap(), 1);
    assert_eq!(block_on(block_on(repo.bound_then_returned()).unwrap()).unwrap(), Some(1));
    let make = block_on(repo.made_by_a_closure()).unwrap();
    assert_eq!(block_on(make()).unwrap(), Some(1));
    assert_eq!(block_on(repo.collected()).unwrap().len(), 2);
}
