//! Calls named like D1 executions on types that are not D1's (`slice.first()`,
//! `Iterator::all`, a user's `Job::run(self)`): the attribute cannot see types, so it
//! rewrites them too, and the receiver dispatch makes each exactly as written.
#![deny(warnings)]

use std::future::Future;

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, block_on};

/// A job of the user's own, consumed by `run`.
struct Job {
    id: i64,
}

impl Job {
    async fn run(self) -> Result<i64, DbError> {
        Ok(self.id)
    }
}

/// Not `Clone`: an argument the plain call moves.
struct Payload(String);

/// A runner whose methods are named like D1's, taking `&mut self` and values.
#[derive(Default)]
struct Runner {
    ran: Vec<String>,
}

impl Runner {
    fn exec(&mut self, payload: Payload) -> usize {
        self.ran.push(payload.0);
        self.ran.len()
    }

    fn batch(&mut self, payloads: Vec<Payload>) -> usize {
        payloads.into_iter().map(|payload| self.exec(payload)).sum()
    }

    fn raw(&mut self) -> &mut Vec<String> {
        &mut self.ran
    }

    fn dump(&self) -> String {
        self.ran.join(",")
    }

    fn first(&self, n: usize) -> Option<&str> {
        self.ran.get(n).map(String::as_str)
    }
}

#[d1_retry]
async fn not_d1(db: &Db, ids: &[i64], job: Job, mut runner: Runner) -> Result<String, DbError> {
    let first = ids.first().copied().unwrap_or_default();
    let last = ids.iter().rev().next();
    let mut iter = ids.iter();
    let positive = iter.all(|id| *id > 0);
    let list = vec![1, 2, 3];
    let head = list.first();
    let ran = job.run().await?;
    // A temporary consumed by its own method, awaited where it is made: moved, not
    // borrowed.
    let made = Job { id: ran + 1 }.run().await?;
    let n = runner.exec(Payload("a".to_owned())) + runner.batch(vec![Payload("b".to_owned())]);
    runner.raw().push("c".to_owned());
    let second = runner.first(1).map(str::to_owned);
    let dump = runner.dump();
    let written = db
        .prepare("UPDATE t SET n = ?1")
        .bind(&[ran])?
        .run()
        .await?;
    Ok(format!(
        "{first} {last:?} {positive} {head:?} {ran} {made} {n} {second:?} {dump} {written}"
    ))
}

/// A job's future, and a plain future, awaited by name; a consumed `Job` in a loop.
#[d1_retry]
async fn awaited_by_name(db: &Db, jobs: Vec<Job>) -> Result<i64, DbError> {
    let future = async { 1 };
    let ready = std::future::ready(2);
    let mut total = future.await + ready.await;
    for job in jobs {
        let running = job.run();
        total += running.await?;
    }
    let pinned = std::pin::pin!(async { 3 });
    total += pinned.await;
    total += db.prepare("SELECT 1").first().await?.unwrap_or_default();
    Ok(total)
}

/// A receiver whose type is only known through a generic without the mark.
#[d1_retry]
async fn generic_future<F: Future<Output = i64>>(db: &Db, future: F) -> Result<i64, DbError> {
    let n = future.await;
    db.exec("DELETE FROM t").await?;
    Ok(n)
}

fn main() {
    let text = block_on(not_d1(&Db, &[1, 2], Job { id: 7 }, Runner::default()));
    assert_eq!(
        text.ok().as_deref(),
        Some("1 Some(2) true Some(1) 7 8 3 Some(\"b\") a,b,c 1")
    );
    let jobs = vec![Job { id: 10 }, Job { id: 20 }];
    assert_eq!(
        block_on(awaited_by_name(&Db, jobs)).ok(),
        Some(1 + 2 + 30 + 3 + 1)
    );
    assert_eq!(block_on(generic_future(&Db, async { 5 })).ok(), Some(5));
}
