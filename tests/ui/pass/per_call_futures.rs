//! Default (per-call) mode: executions in loops, closures, `async` blocks and macros, and
//! execution futures that are not awaited where they are written.
#![deny(warnings)]

use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, Statement, block_on, join_all};

/// A statement prepared once and run in a `for` loop.
#[d1_retry]
async fn prepared_once(db: &Db, ids: &[i64]) -> Result<u64, DbError> {
    let statement = db.prepare("INSERT INTO tags (user_id) VALUES (?1)");
    let mut total = 0;
    for _ in ids {
        total += statement.run().await?;
    }
    let mut left = ids.len();
    while left > 0 {
        statement.first().await?;
        left -= 1;
    }
    Ok(total)
}

/// Futures collected into a `Vec` and joined: calls on a statement variable, `async`
/// blocks, and chains that are not awaited where written.
#[d1_retry]
async fn joined(db: &Db, ids: &[i64]) -> Result<u64, DbError> {
    let statement = db.prepare("UPDATE users SET n = n + 1");
    let runs: Vec<_> = ids.iter().map(|_| statement.run()).collect();
    let blocks: Vec<_> = ids
        .iter()
        .map(|id| async move {
            db.prepare("DELETE FROM users WHERE id = ?1")
                .bind(&[*id])?
                .run()
                .await
        })
        .collect();
    let execs: Vec<_> = ids.iter().map(|_| db.exec("DELETE FROM t")).collect();
    let mut total = 0;
    for result in join_all(runs).await {
        total += result?;
    }
    for result in join_all(blocks).await {
        total += result?;
    }
    for result in join_all(execs).await {
        total += result?;
    }
    Ok(total)
}

fn spawn_local<F>(future: F) -> F
where
    F: Future + 'static,
{
    future
}

fn spawn<F>(future: F) -> F
where
    F: Future + Send + 'static,
{
    future
}

/// An `async move` block that must be `'static` (spawned), with executions inside.
#[d1_retry]
async fn spawned(db: Rc<Db>, shared: Arc<Db>) -> Result<u64, DbError> {
    let local = spawn_local(async move {
        db.prepare("INSERT INTO audit (event) VALUES ('a')")
            .run()
            .await?;
        db.exec("DELETE FROM sessions").await
    });
    let sent = spawn(async move { shared.prepare("SELECT 1").first().await });
    let n = local.await?;
    Ok(n + sent.await?.map_or(0, |n| n as u64))
}

/// `move` closures returning an execution future that is not awaited in them (their
/// receiver is a reference they copy), and `async` closures, `move` or not.
#[d1_retry]
async fn move_closures(db: &Db, statement: &Statement) -> Result<u64, DbError> {
    let run = move || statement.run();
    let exec = move |sql: &'static str| db.exec(sql);
    let delete = async move |id: i64| {
        db.prepare("DELETE FROM t WHERE id = ?1")
            .bind(&[id])?
            .run()
            .await
    };
    let borrowed = async |id: i64| {
        db.prepare("DELETE FROM t WHERE id = ?1")
            .bind(&[id])?
            .run()
            .await
    };
    let plain = |id: i64| db.prepare("SELECT ?1").bind(&[id]);
    plain(2)?.run().await?;
    Ok(run().await? + exec("DELETE FROM t").await? + delete(1).await? + borrowed(2).await?)
}

/// `[a.run(), b.run()]`: an array of execution futures that are not awaited, joined.
#[d1_retry]
async fn array_of_futures(db: &Db) -> Result<u64, DbError> {
    let a = db.prepare("INSERT INTO t VALUES (1)");
    let b = db.prepare("INSERT INTO t VALUES (2)");
    let mut total = 0;
    for result in join_all([a.run(), b.run()]).await {
        total += result?;
    }
    for result in join_all(vec![a.first(), b.first()]).await {
        total += result?.map_or(0, |n| n as u64);
    }
    Ok(total)
}

/// Executions inside `dbg!`, `format!`, `assert!`, `vec!` and `matches!`.
#[d1_retry]
async fn in_macros(db: &Db) -> Result<String, DbError> {
    let n = dbg!(db.prepare("SELECT 1").first().await?);
    let text = format!("{:?} {}", n, db.prepare("UPDATE t SET n = 1").run().await?);
    assert!(db.prepare("SELECT 2").first().await?.is_some());
    let all = vec![
        db.exec("DELETE FROM t").await?,
        db.prepare("SELECT 3").run().await?,
    ];
    let found = matches!(db.prepare("SELECT 4").first().await, Ok(Some(_)));
    Ok(format!("{text} {all:?} {found}"))
}

/// A project's own macro, matching tokens: its tokens are left as written.
macro_rules! twice {
    ($statement:ident . $method:ident ()) => {
        $statement.$method().await? + $statement.$method().await?
    };
}

/// Token macros, `stringify!`, and `tokio::join!` / `try_join!` of execution futures.
#[d1_retry]
async fn token_macros(db: &Db) -> Result<String, DbError> {
    let statement = db.prepare("SELECT 1");
    let n = twice!(statement.run()) + statement.run().await?;
    let (a, b) = tokio::join!(statement.run(), db.exec("DELETE FROM t"));
    let (c, d) = tokio::try_join!(statement.first(), db.exec("SELECT 2"))?;
    let sum = n + a? + b? + c.map_or(0, |c| c as u64) + d;
    Ok(format!("{} {sum}", stringify!(statement.run())))
}

/// A non-`move` `async` block and a labelled block.
#[d1_retry]
async fn blocks(db: &Db) -> Result<u64, DbError> {
    let statement = db.prepare("SELECT 1");
    let future = async { statement.run().await };
    let n = 'found: {
        if let Some(n) = statement.first().await? {
            break 'found n as u64;
        }
        0
    };
    Ok(future.await? + n)
}

fn main() {
    /// An annotated function nested in a block: its doc paragraph fires no lint.
    #[d1_retry]
    async fn nested(db: &Db) -> Result<u64, DbError> {
        db.prepare("SELECT 1").run().await
    }
    let db = Db;
    assert_eq!(block_on(nested(&db)).ok(), Some(1));
    assert_eq!(
        block_on(token_macros(&db)).ok().as_deref(),
        Some("statement.run() 26")
    );
    assert_eq!(block_on(prepared_once(&db, &[1, 2])).ok(), Some(2));
    assert_eq!(block_on(joined(&db, &[1, 2])).ok(), Some(2 + 2 + 2 * 13));
    assert_eq!(
        block_on(spawned(Rc::new(Db), Arc::new(Db))).ok(),
        Some("DELETE FROM sessions".len() as u64 + 1)
    );
    assert_eq!(
        block_on(move_closures(&db, &db.prepare("SELECT 1"))).ok(),
        Some(16)
    );
    assert_eq!(block_on(array_of_futures(&db)).ok(), Some(4));
    assert_eq!(
        block_on(in_macros(&db)).ok().as_deref(),
        Some("Some(1) 1 [13, 1] true")
    );
    assert_eq!(block_on(blocks(&db)).ok(), Some(2));
}
