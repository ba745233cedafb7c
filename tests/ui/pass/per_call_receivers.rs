//! Default (per-call) mode: receivers behind `&mut self`, fields, generics, `Box`, `Rc`
//! and `Arc`, and the dispatch that leaves calls on other types as written.
#![deny(warnings)]

use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;

use d1_retry::{D1Receiver, d1_retry};

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, Statement, block_on};

struct Repo {
    db: Db,
    touch: Statement,
    lookups: u64,
}

impl Repo {
    /// `&mut self`: the body mutates `self` between executions on its fields.
    #[d1_retry]
    async fn counted(&mut self, id: i64) -> Result<u64, DbError> {
        self.lookups += 1;
        self.db
            .prepare("UPDATE users SET n = n + 1 WHERE id = ?1")
            .bind(&[id])?
            .run()
            .await?;
        self.lookups += self.touch.run().await?;
        let touch = &mut self.touch;
        touch.run().await?;
        Ok(self.lookups)
    }

    /// `&mut self` returning a borrow of `self`.
    #[d1_retry]
    async fn touched(&mut self) -> Result<&mut u64, DbError> {
        self.touch.first().await?;
        Ok(&mut self.lookups)
    }
}

/// What a generic repository asks of its database.
trait Database {
    fn prepare(&self, sql: &str) -> Statement;
    fn exec(&self, sql: &str) -> impl Future<Output = Result<u64, DbError>>;
}

impl Database for Db {
    fn prepare(&self, sql: &str) -> Statement {
        Db::prepare(self, sql)
    }

    fn exec(&self, sql: &str) -> impl Future<Output = Result<u64, DbError>> {
        Db::exec(self, sql)
    }
}

/// A generic repository whose database carries the mark: retried.
struct Generic<D> {
    db: D,
}

impl<D: D1Receiver + Database> Generic<D> {
    #[d1_retry]
    async fn purge(&self) -> Result<u64, DbError> {
        self.db.prepare("DELETE FROM sessions").run().await?;
        self.db.exec("DELETE FROM audit").await
    }
}

/// A generic database without the mark in its bounds: its calls are made as written.
impl<D: Database> Generic<Vec<D>> {
    #[d1_retry]
    async fn purge_all(&self) -> Result<u64, DbError> {
        let mut total = 0;
        for db in &self.db {
            total += db.exec("DELETE FROM sessions").await?;
        }
        Ok(total)
    }
}

/// Generic functions, with the bound in a `where` clause and `impl Trait`.
#[d1_retry]
async fn generic<D>(
    db: &D,
    statement: impl D1Receiver + Clone + Into<Statement>,
) -> Result<u64, DbError>
where
    D: D1Receiver + Database + ?Sized,
{
    let statement: Statement = statement.into();
    db.exec("DELETE FROM t").await?;
    statement.run().await
}

/// Dynamic SQL, a loop and a batch, in a future that must stay `Send`.
#[d1_retry]
async fn smart_pointers_send(db: &Db, table: String) -> Result<u64, DbError> {
    let arc = Arc::new(Db);
    let mut total = arc.exec(&table).await?;
    for _ in 0..2 {
        total += db.prepare(format!("DELETE FROM {table}")).run().await?;
    }
    let batch = Box::new(Db).batch(vec![db.prepare(table)]).await?;
    Ok(total + batch.len() as u64)
}

/// `Box`, `Rc` and `Arc` receivers, and references to them.
#[d1_retry]
async fn smart_pointers(
    boxed: Box<Db>,
    rc: Rc<Db>,
    arc: &Arc<Db>,
    statement: Box<Statement>,
    shared: Rc<Statement>,
) -> Result<u64, DbError> {
    let a = boxed.exec("DELETE FROM a").await?;
    let b = rc.exec("DELETE FROM b").await?;
    let c = arc.exec("DELETE FROM c").await?;
    let d = statement.run().await? + shared.run().await?;
    let e = arc.prepare("SELECT 1").run().await?;
    let f = Arc::clone(arc)
        .batch(vec![boxed.prepare("SELECT 1")])
        .await?;
    Ok(a + b + c + d + e + f.len() as u64)
}

/// Methods of the D1 types themselves: `self` is the receiver.
trait Purge {
    async fn purge(&self) -> Result<u64, DbError>;
}

impl Purge for Db {
    #[d1_retry]
    async fn purge(&self) -> Result<u64, DbError> {
        self.exec("DELETE FROM t").await
    }
}

/// `self` by value, a field of it, then destructured.
struct Owned(Statement);

impl Owned {
    #[d1_retry]
    async fn run_twice(self) -> Result<u64, DbError> {
        let first = self.0.run().await?;
        let Owned(statement) = self;
        Ok(first + statement.run().await?)
    }
}

fn assert_send<T: Send>(_: &T) {}

fn main() {
    // The shared schedule and the scanned SQL keep a future `Send`.
    assert_send(&Generic { db: Db }.purge());
    assert_send(&smart_pointers_send(&Db, String::new()));
    assert_eq!(block_on(Db.purge()).ok(), Some(13));
    assert_eq!(
        block_on(Owned(Db.prepare("SELECT 1")).run_twice()).ok(),
        Some(2)
    );

    let mut repo = Repo {
        db: Db,
        touch: Db.prepare("UPDATE users SET seen_at = unixepoch()"),
        lookups: 0,
    };
    assert_eq!(block_on(repo.counted(1)).ok(), Some(2));
    assert_eq!(block_on(repo.touched()).ok().copied(), Some(2));
    assert_eq!(block_on(Generic { db: Db }.purge()).ok(), Some(17));
    assert_eq!(
        block_on(Generic { db: vec![Db, Db] }.purge_all()).ok(),
        Some(40)
    );
    assert_eq!(block_on(generic(&Db, Db.prepare("SELECT 1"))).ok(), Some(1));
    let arc = Arc::new(Db);
    let pointers = smart_pointers(
        Box::new(Db),
        Rc::new(Db),
        &arc,
        Box::new(Db.prepare("SELECT 1")),
        Rc::new(Db.prepare("SELECT 2")),
    );
    assert_eq!(block_on(pointers).ok(), Some(13 * 3 + 2 + 1 + 1));
}
