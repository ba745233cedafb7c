//! A `let mut` statement variable may be replaced (`std::mem::replace`, a destructuring
//! assignment, through `&mut`), so its SQL is out of sight: a `DELETE` swapped in for the
//! `SELECT` and failing with "Network connection lost" (maybe executed) is not retried.
#![deny(warnings)]

use std::sync::atomic::{AtomicU32, Ordering};

use d1_retry::{D1Receiver, d1_retry};

static RUNS: AtomicU32 = AtomicU32::new(0);

#[derive(Debug)]
struct Lost;

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("D1_ERROR: Network connection lost.")
    }
}

impl std::error::Error for Lost {}

/// Fails its first run with a maybe-executed error.
#[derive(Clone)]
struct Statement;

impl D1Receiver for Statement {}

impl Statement {
    async fn run(&self) -> Result<u32, Lost> {
        if RUNS.fetch_add(1, Ordering::SeqCst) == 0 {
            Err(Lost)
        } else {
            Ok(1)
        }
    }
}

struct Db;

impl Db {
    fn prepare(&self, _sql: &str) -> Statement {
        Statement
    }
}

#[d1_retry]
async fn replaced(db: &Db) -> Result<u32, Lost> {
    let mut statement = db.prepare("SELECT 1");
    let _ = std::mem::replace(&mut statement, db.prepare("DELETE FROM t"));
    statement.run().await
}

#[d1_retry]
async fn destructured(db: &Db) -> Result<u32, Lost> {
    let mut statement = db.prepare("SELECT 1");
    let _ = &statement;
    let n;
    (statement, n) = (db.prepare("DELETE FROM t"), 1);
    Ok(statement.run().await? + n)
}

#[d1_retry]
async fn through_mut(db: &Db) -> Result<u32, Lost> {
    let mut statement = db.prepare("SELECT 1");
    let slot = &mut statement;
    *slot = db.prepare("DELETE FROM t");
    statement.run().await
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    RUNS.store(0, Ordering::SeqCst);
    assert!(
        replaced(&Db).await.is_err(),
        "mem::replace: the DELETE ran twice"
    );
    RUNS.store(0, Ordering::SeqCst);
    assert!(
        destructured(&Db).await.is_err(),
        "destructuring: the DELETE ran twice"
    );
    RUNS.store(0, Ordering::SeqCst);
    assert!(
        through_mut(&Db).await.is_err(),
        "through &mut: the DELETE ran twice"
    );
}
