//! A fake D1 for the `#[d1_retry]` tests: its statements fail from a script, in order, and
//! it counts what ran. Shaped like `worker::D1Database` (`prepare`, `bind`, `first`, `run`,
//! `exec`, `batch`), and `Send` so that it also serves `#[async_trait]` methods.
//!
//! ```
//! use test_support::block_on;
//! use test_support::fake_db::{FakeDb, NETWORK_LOST};
//!
//! let db = FakeDb::failing(&[NETWORK_LOST]);
//! let first = block_on(db.prepare("SELECT 1").run());
//! assert_eq!(first.unwrap_err().message, NETWORK_LOST);
//! assert_eq!(block_on(db.prepare("SELECT 1").run()), Ok(1));
//! assert_eq!(db.calls(), 2);
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What D1 answers to one statement run (a `batch` is one run).
#[derive(Clone, Copy, Debug)]
pub enum Outcome {
    /// The statement runs and succeeds.
    Ok,
    /// The statement fails with this message.
    Fail(&'static str),
}

pub use Outcome::{Fail, Ok as Succeed};

/// A maybe-executed failure.
pub const NETWORK_LOST: &str = "D1_ERROR: Network connection lost.";
/// A not-executed failure.
pub const NOT_REACHED: &str = "Cannot resolve D1 DB due to transient issue on remote node.";
/// D1's internal error: maybe executed.
pub const INTERNAL: &str = "D1_ERROR: internal error; reference = abc";
/// A permanent failure.
pub const UNIQUE: &str = "UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT";

#[derive(Default)]
struct State {
    script: VecDeque<Outcome>,
    ran: Vec<String>,
    prepared: usize,
}

/// Answers from its script, then succeeds.
#[derive(Default)]
pub struct FakeDb {
    state: Mutex<State>,
}

impl FakeDb {
    /// Answers with each outcome of `script` in turn, then succeeds.
    pub fn new(script: impl IntoIterator<Item = Outcome>) -> Self {
        FakeDb {
            state: Mutex::new(State {
                script: script.into_iter().collect(),
                ran: Vec::new(),
                prepared: 0,
            }),
        }
    }

    /// Fails with each message in turn, then succeeds.
    pub fn failing(messages: &[&'static str]) -> Self {
        Self::new(messages.iter().map(|message| Fail(message)))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many statements (or batches) were sent to the database.
    pub fn calls(&self) -> usize {
        self.state().ran.len()
    }

    /// How many statements [`prepare`](Self::prepare) made.
    pub fn prepared(&self) -> usize {
        self.state().prepared
    }

    /// The SQL sent, in order; a batch's statements joined with " ; ".
    pub fn ran(&self) -> Vec<String> {
        self.state().ran.clone()
    }

    fn run_sql(&self, sql: String) -> Result<u64, DbError> {
        let mut state = self.state();
        state.ran.push(sql);
        match state.script.pop_front() {
            Some(Fail(message)) => Err(DbError::new(message)),
            Some(Outcome::Ok) | None => Ok(1),
        }
    }

    /// A statement of `sql`, run by [`Statement::first`] or [`Statement::run`].
    pub fn prepare(&self, sql: impl Into<String>) -> Statement<'_> {
        self.state().prepared += 1;
        Statement {
            db: self,
            sql: sql.into(),
            binds: Vec::new(),
        }
    }

    /// Runs `sql` as one call.
    pub async fn exec(&self, sql: &str) -> Result<u64, DbError> {
        self.run_sql(sql.to_owned())
    }

    /// Runs `statements` as one call, as D1's `batch` does (one transaction).
    pub async fn batch(&self, statements: Vec<Statement<'_>>) -> Result<Vec<u64>, DbError> {
        let sql: Vec<String> = statements.iter().map(|s| s.sql.clone()).collect();
        let count = statements.len();
        self.run_sql(sql.join(" ; ")).map(|_| vec![1; count])
    }
}

/// `#[d1_retry]` retries the executions of a `FakeDb` and its statements, as it does
/// `worker::D1Database`'s, and judges a statement by the SQL handed to its `prepare`.
impl d1_retry_runtime::D1Receiver for FakeDb {}
impl d1_retry_runtime::D1Receiver for Statement<'_> {}
impl d1_retry_runtime::D1Prepare for FakeDb {}
impl d1_retry_runtime::D1Prepare for &FakeDb {}

/// A prepared statement of a [`FakeDb`].
#[derive(Clone)]
pub struct Statement<'db> {
    db: &'db FakeDb,
    sql: String,
    binds: Vec<i64>,
}

impl Statement<'_> {
    /// Binds more values; never fails (the `Result` is the shape of D1's `bind`).
    pub fn bind(mut self, values: &[i64]) -> Result<Self, DbError> {
        self.binds.extend_from_slice(values);
        Ok(self)
    }

    /// The first bound value back, as if the row with that id was found.
    pub async fn first(&self) -> Result<Option<i64>, DbError> {
        let id = self.binds.first().copied();
        self.db.run_sql(self.sql.clone()).map(|_| id)
    }

    /// Runs the statement; `Ok(1)`, one row changed, on success.
    pub async fn run(&self) -> Result<u64, DbError> {
        self.db.run_sql(self.sql.clone())
    }
}

/// D1's error, reduced to its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbError {
    /// D1's message.
    pub message: String,
}

impl DbError {
    /// An error with this message.
    pub fn new(message: &str) -> Self {
        DbError {
            message: message.to_owned(),
        }
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DbError {}

/// An application error whose own message says nothing about D1: only its `source()` does.
#[derive(Debug)]
pub struct RepoError {
    /// The database error behind it.
    pub source: DbError,
}

impl From<DbError> for RepoError {
    fn from(source: DbError) -> Self {
        RepoError { source }
    }
}

impl fmt::Display for RepoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("could not load the user")
    }
}

impl std::error::Error for RepoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
