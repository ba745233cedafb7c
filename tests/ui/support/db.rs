//! A stand-in for `worker::D1Database`, enough for the expansion to type-check.
//!
//! Its database and statement carry the `D1Receiver` mark, and keep the mark's contract
//! (execution methods take `&self` and arguments that can be cloned, the statement is
//! `Clone` and `IntoFuture`), so the pass cases go through the retrying path of the
//! expansion, as code on `worker`'s types does.
#![allow(dead_code)]

use std::fmt;
use std::future::{Future, IntoFuture, Ready, ready};
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

pub struct Db;

#[derive(Clone)]
pub struct Statement {
    sql: String,
}

#[derive(Debug)]
pub struct DbError;

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("D1_ERROR: Network connection lost.")
    }
}

impl std::error::Error for DbError {}

impl d1_retry::D1Receiver for Db {}
impl d1_retry::D1Prepare for Db {}
impl d1_retry::D1Prepare for &Db {}

/// The stand-in under the name the attribute follows function paths by
/// (`D1Database::prepare(&db, sql)`, `D1Database::exec(&db, sql)`).
pub type D1Database = Db;
impl d1_retry::D1Receiver for Statement {}

impl Db {
    pub fn prepare(&self, sql: impl Into<String>) -> Statement {
        Statement { sql: sql.into() }
    }

    pub async fn exec(&self, sql: &str) -> Result<u64, DbError> {
        Ok(sql.len() as u64)
    }

    pub async fn batch(&self, statements: Vec<Statement>) -> Result<Vec<u64>, DbError> {
        Ok(statements.iter().map(|_| 1).collect())
    }

    pub async fn dump(&self) -> Result<Vec<u8>, DbError> {
        Ok(Vec::new())
    }
}

impl Statement {
    pub fn bind(self, _values: &[i64]) -> Result<Self, DbError> {
        Ok(self)
    }

    pub fn sql(&self) -> &str {
        &self.sql
    }

    pub async fn run(&self) -> Result<u64, DbError> {
        Ok(1)
    }

    pub async fn first(&self) -> Result<Option<i64>, DbError> {
        Ok(Some(1))
    }

    pub async fn all(&self) -> Result<Vec<i64>, DbError> {
        Ok(vec![1])
    }

    pub async fn raw<T: Default>(&self) -> Result<Vec<T>, DbError> {
        Ok(vec![T::default()])
    }

    pub async fn raw_js_value(&self) -> Result<Vec<String>, DbError> {
        Ok(Vec::new())
    }
}

/// `statement.await` runs it, as `worker::D1PreparedStatement` does.
impl IntoFuture for Statement {
    type Output = Result<u64, DbError>;
    type IntoFuture = Ready<Result<u64, DbError>>;

    fn into_future(self) -> Self::IntoFuture {
        ready(Ok(1))
    }
}

/// Polls a future that never waits (the stand-in never fails, so nothing sleeps).
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

/// Awaits every future, as `futures::future::join_all` does.
pub async fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (future, output) in futures.iter_mut().zip(&mut outputs) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => done = false,
                }
            }
        }
        if done { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    outputs.into_iter().flatten().collect()
}
