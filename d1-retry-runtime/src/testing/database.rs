//! The local D1: a SQLite connection behind D1's call shapes, with a fault plan in front
//! and a journal behind.
//!
//! Every call goes through one function, `D1Database::call`, so that the fault plan,
//! the journal, the counts and the session bookmarks see every kind of call the same way.
//! A call the plan does not stall runs under one lock, start to finish; a stalled one
//! releases it while it hangs, and records itself even if its caller drops it then.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::time::Duration;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::Connection;

use super::execute::{Output, Produced, execute, may_write};
use super::fault::Strike;
use super::session::SessionLink;
use super::{
    Call, CallInfo, D1ExecResult, D1PreparedStatement, D1Result, Error, Fault, FaultPlan, Message,
    Operation, Timing, Value,
};
use crate::Sleeper;

/// A D1 database on a local SQLite connection, with the call shapes of `worker::D1Database`
/// and failures injected by a [`FaultPlan`].
///
/// The handle is cheap to clone and every clone is the same database; it is `Send + Sync`
/// and may be used from concurrent tasks (the connection sits behind a mutex that is never
/// held across an `.await`).
///
/// Every call is recorded in a journal ([`calls`](Self::calls), [`take_calls`](Self::take_calls)):
/// its SQL and parameters, the fault injected, whether it stalled, whether its changes were
/// committed, the error the caller got, and whether the caller dropped it mid-stall.
///
/// A call the fault plan stalls ([`Fault::stall`], [`Fault::stalling`]) waits through the
/// database's sleeper: `tokio::time::sleep` with the `tokio` feature (so tokio's paused
/// clock, the time [`Clock::tokio`](super::Clock::tokio) reads), or the one given to
/// [`set_sleeper`](Self::set_sleeper).
///
/// ```
/// use d1_retry_runtime::testing::D1Database;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), d1_retry_runtime::testing::Error> {
/// let db = D1Database::open_in_memory()?;
/// db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)").await?;
/// db.prepare("INSERT INTO users (name) VALUES (?1)")
///     .bind(&["ada".into()])?
///     .run()
///     .await?;
/// let name: Option<String> = db
///     .prepare("SELECT name FROM users WHERE id = ?1")
///     .bind(&[1.into()])?
///     .first(Some("name"))
///     .await?;
/// assert_eq!(name.as_deref(), Some("ada"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct D1Database {
    shared: Arc<Mutex<State>>,
}

struct State {
    connection: Connection,
    faults: FaultPlan,
    journal: Vec<Call>,
    stats: Stats,
    /// How many calls that may have written have run: the state session bookmarks name.
    version: u64,
    /// What stalls wait with; `None`: tokio's clock (or, without tokio, a panic).
    sleeper: Option<StallSleeper>,
}

/// A [`Sleeper`], boxed to live in the database.
type StallSleeper = Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Counts of what happened on a [`D1Database`] since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Calls made (`first`, `all`, `run`, `raw`, `batch`, `exec`, `dump`).
    pub calls: u64,
    /// Calls failed by the fault plan before the statement ran.
    pub injected_before: u64,
    /// Calls failed by the fault plan after the statement ran and was committed.
    pub injected_after: u64,
    /// Calls that failed on their own (constraint, syntax, ...), without a fault.
    pub sql_errors: u64,
    /// Calls the fault plan made hang ([`Fault::stall`], [`Fault::stalling`]), counted when
    /// the stall begins.
    pub stalled: u64,
    /// Stalled calls whose caller dropped the future before they answered.
    pub dropped: u64,
}

impl D1Database {
    /// A fresh database in memory.
    ///
    /// # Errors
    ///
    /// SQLite could not open it (out of memory).
    pub fn open_in_memory() -> Result<Self, Error> {
        Connection::open_in_memory()
            .map(Self::from_connection)
            .map_err(|e| Error::setup(&e))
    }

    /// The database in the SQLite file at `path`, created if missing.
    ///
    /// # Errors
    ///
    /// SQLite could not open the file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Connection::open(path)
            .map(Self::from_connection)
            .map_err(|e| Error::setup(&e))
    }

    /// A database on an open SQLite connection.
    #[must_use]
    pub fn from_connection(connection: Connection) -> Self {
        D1Database {
            shared: Arc::new(Mutex::new(State {
                connection,
                faults: FaultPlan::new(),
                journal: Vec::new(),
                stats: Stats::default(),
                version: 0,
                sleeper: None,
            })),
        }
    }

    /// A statement for `query`, as `worker::D1Database::prepare`. Nothing runs until
    /// `first`, `all`, `run` or `raw` is awaited (or the statement itself), or the
    /// statement is part of a `batch`.
    pub fn prepare<T: Into<String>>(&self, query: T) -> D1PreparedStatement {
        D1PreparedStatement::new(self.clone(), query.into(), None)
    }

    /// Runs `statements` in one transaction: all of them are committed, or none.
    ///
    /// # Errors
    ///
    /// The first statement's failure (after which nothing is committed), or an injected fault.
    pub async fn batch(
        &self,
        statements: Vec<D1PreparedStatement>,
    ) -> Result<Vec<D1Result>, Error> {
        self.run_batch(&statements, None).await
    }

    /// A batch, in `session` if any.
    pub(crate) async fn run_batch(
        &self,
        statements: &[D1PreparedStatement],
        session: Option<&SessionLink>,
    ) -> Result<Vec<D1Result>, Error> {
        let parts: Vec<(&str, &[Value])> = statements
            .iter()
            .map(|statement| (statement.sql(), statement.params()))
            .collect();
        let produced = self.call(Operation::Batch, &parts, session).await?;
        Ok(produced
            .outputs
            .into_iter()
            .map(Output::into_result)
            .collect())
    }

    /// Runs `query` without parameters, one line at a time, as D1's `exec` does. Lines that
    /// ran before a failing one stay applied.
    ///
    /// # Errors
    ///
    /// `D1_EXEC_ERROR: Error in line N: <line>: <SQLite message>`, or an injected fault.
    pub async fn exec(&self, query: &str) -> Result<D1ExecResult, Error> {
        let produced = self.call(Operation::Exec, &[(query, &[])], None).await?;
        Ok(D1ExecResult::new(produced.lines))
    }

    /// The whole database as the bytes of one SQLite file, as `worker::D1Database::dump`.
    ///
    /// The file is a compacted copy (`VACUUM INTO`), not the live file byte for byte: the
    /// same schema and rows, readable by any SQLite (write it out and open it). A dump is a
    /// call like the others: the fault plan sees it as [`Operation::Dump`], and the
    /// journal records it, with no statements.
    ///
    /// # Errors
    ///
    /// An injected fault, or `D1_ERROR: dump failed: ...` when the copy cannot be made.
    pub async fn dump(&self) -> Result<Vec<u8>, Error> {
        Ok(self.call(Operation::Dump, &[], None).await?.file)
    }

    /// Replaces the fault plan.
    pub fn set_faults(&self, plan: FaultPlan) {
        self.lock().faults = plan;
    }

    /// Adds `fault` after the plan's existing rules.
    pub fn add_fault(&self, fault: Fault) {
        self.lock().faults.push(fault);
    }

    /// Removes every rule: no call fails any more, except on its own.
    pub fn clear_faults(&self) {
        self.lock().faults = FaultPlan::new();
    }

    /// Sets what a stalled call waits with: any [`Sleeper`] whose future is `Send`, such
    /// as `|d| tokio::time::sleep(d)` or a simulated clock's. Pair it with the [`Clock`]
    /// your timelines read, so a stall and a scripted outage agree on the time.
    ///
    /// Without one, a stall waits with `tokio::time::sleep` (a tokio runtime with time
    /// enabled must be running; under its paused clock a stall takes virtual time only).
    /// Built without the `tokio` feature, there is no default: a stalled call on a database
    /// without a sleeper panics, naming this method.
    ///
    /// [`Clock`]: super::Clock
    ///
    /// ```
    /// use core::time::Duration;
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use d1_retry_runtime::testing::{Clock, D1Database, Fault};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// // A simulated clock, in milliseconds: a stall moves it forward and returns at once.
    /// let millis = Arc::new(AtomicU64::new(0));
    /// let read = millis.clone();
    /// let clock = Clock::new(move || Duration::from_millis(read.load(Ordering::Relaxed)));
    /// let db = D1Database::open_in_memory().unwrap();
    /// let moved = millis.clone();
    /// db.set_sleeper(move |stall: Duration| {
    ///     moved.fetch_add(stall.as_millis() as u64, Ordering::Relaxed);
    ///     core::future::ready(())
    /// });
    /// db.add_fault(Fault::stall(Duration::from_secs(50)).times(1));
    /// db.prepare("SELECT 1").all().await.unwrap();
    /// assert_eq!(clock.now(), Duration::from_secs(50));
    /// # }
    /// ```
    pub fn set_sleeper<S>(&self, sleeper: S)
    where
        S: Sleeper + Send + Sync + 'static,
        S::Sleep: Send + 'static,
    {
        let sleep: StallSleeper = Arc::new(
            move |duration| -> Pin<Box<dyn Future<Output = ()> + Send>> {
                Box::pin(sleeper.sleep(duration))
            },
        );
        self.lock().sleeper = Some(sleep);
    }

    /// How many calls each rule of the plan has struck (failed, or stalled), in rule order.
    #[must_use]
    pub fn injected_per_rule(&self) -> Vec<u64> {
        self.lock()
            .faults
            .rules()
            .iter()
            .map(Fault::injected)
            .collect()
    }

    /// The counts of calls and failures so far.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.lock().stats
    }

    /// A copy of the journal: every call since it was last taken, in the order the calls
    /// answered (or were dropped): a call still stalled is not there yet.
    #[must_use]
    pub fn calls(&self) -> Vec<Call> {
        self.lock().journal.clone()
    }

    /// The journal, emptied; a long test takes it now and then to bound its memory.
    #[must_use]
    pub fn take_calls(&self) -> Vec<Call> {
        core::mem::take(&mut self.lock().journal)
    }

    /// Runs `f` on the SQLite connection directly, behind the kit's back: no fault is
    /// injected and nothing is recorded. For schema setup, and for checking what the
    /// database really holds.
    pub fn with_connection<R>(&self, f: impl FnOnce(&Connection) -> R) -> R {
        f(&self.lock().connection)
    }

    /// The state bookmarks name now.
    pub(crate) fn version(&self) -> u64 {
        self.lock().version
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked elsewhere must not make every later call panic too.
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One statement of `first`/`all`/`run`/`raw`, in `session` if any.
    pub(crate) async fn call_one(
        &self,
        operation: Operation,
        sql: &str,
        params: &[Value],
        session: Option<&SessionLink>,
    ) -> Result<Output, Error> {
        self.call(operation, &[(sql, params)], session)
            .await?
            .outputs
            .into_iter()
            .next()
            .ok_or_else(|| Error::d1("No SQL statements detected.".to_owned()))
    }

    /// Every call: asks the fault plan, stalls (or not), runs the SQL (or not), moves the
    /// bookmarks, and records what happened.
    async fn call(
        &self,
        operation: Operation,
        statements: &[(&str, &[Value])],
        session: Option<&SessionLink>,
    ) -> Result<Produced, Error> {
        let (call, strike, sleeper) = match self.begin(operation, statements, session) {
            Begun::Answered(result) => return result,
            Begun::Stalled {
                call,
                strike,
                sleeper,
            } => (call, strike, sleeper),
        };
        let Some((duration, _)) = strike.stall else {
            unreachable!("`begin` answers every call that does not stall");
        };
        let index = call.index;
        // From here the caller may drop this future at any `.await`: the guard records
        // the call then.
        let mut flight = InFlight {
            db: self,
            call: Some(call),
        };
        if strike.stalls_first() {
            stall(sleeper.as_ref(), duration).await;
        }
        let (result, executed, seen) =
            self.lock()
                .run(index, strike.failure, operation, statements);
        if let Some(call) = &mut flight.call {
            call.executed = executed;
        }
        if !strike.stalls_first() {
            stall(sleeper.as_ref(), duration).await;
        }
        let call = flight.call.take().expect("the call is recorded once");
        self.lock().answer(call, &result, seen, session);
        result
    }

    /// The start of a call: its number, the fault plan's decision and, unless it stalls,
    /// the whole call, under one lock.
    fn begin(
        &self,
        operation: Operation,
        statements: &[(&str, &[Value])],
        session: Option<&SessionLink>,
    ) -> Begun {
        let mut state = self.lock();
        let index = state.stats.calls;
        state.stats.calls += 1;
        let sql: Vec<&str> = statements.iter().map(|(sql, _)| *sql).collect();
        let strike = state.faults.decide(&CallInfo {
            index,
            operation,
            sql: &sql,
            session: session.is_some(),
        });
        let failure = strike.and_then(|strike| strike.failure);
        let call = Call {
            index,
            operation,
            statements: statements
                .iter()
                .map(|(sql, params)| ((*sql).to_owned(), params.to_vec()))
                .collect(),
            session: session.is_some(),
            injected: failure,
            stalled: strike
                .and_then(|strike| strike.stall)
                .map(|(stall, _)| stall),
            executed: false,
            dropped: false,
            error: None,
        };
        match strike {
            Some(strike) if strike.stall.is_some() => {
                state.stats.stalled += 1;
                Begun::Stalled {
                    call,
                    strike,
                    sleeper: state.sleeper.clone(),
                }
            }
            _ => {
                let (result, executed, seen) = state.run(index, failure, operation, statements);
                state.answer(Call { executed, ..call }, &result, seen, session);
                Begun::Answered(result)
            }
        }
    }
}

/// How a call's start went: answered already, or stalled.
enum Begun {
    /// The call ran (or failed) without a stall.
    Answered(Result<Produced, Error>),
    /// The call hangs first (or after running): the rest is up to the caller's future.
    Stalled {
        call: Call,
        strike: Strike,
        sleeper: Option<StallSleeper>,
    },
}

impl State {
    /// Runs the statements, unless `failure` strikes before execution; counts the failure;
    /// moves the version if the call may have written. Returns what the caller gets,
    /// whether the call ran, and the version it saw.
    fn run(
        &mut self,
        index: u64,
        failure: Option<(Message, Timing)>,
        operation: Operation,
        statements: &[(&str, &[Value])],
    ) -> (Result<Produced, Error>, bool, u64) {
        let (result, executed) = match failure {
            Some((message, timing)) => {
                // After execution, the statement's own outcome only decides what was
                // committed; the caller hears the injected failure either way.
                let executed = timing == Timing::AfterExecution
                    && match execute(&mut self.connection, operation, statements) {
                        Ok(produced) => operation != Operation::Exec || produced.lines > 0,
                        Err((_, partial)) => partial,
                    };
                match timing {
                    Timing::BeforeExecution => self.stats.injected_before += 1,
                    Timing::AfterExecution => self.stats.injected_after += 1,
                }
                let error = Error::injected_fault(message.render(index), timing);
                (Err(error), executed)
            }
            None => match execute(&mut self.connection, operation, statements) {
                Ok(produced) => {
                    let executed = operation != Operation::Exec || produced.lines > 0;
                    (Ok(produced), executed)
                }
                Err((error, partial)) => {
                    self.stats.sql_errors += 1;
                    (Err(error), partial)
                }
            },
        };
        if executed && may_write(operation, statements) {
            self.version += 1;
        }
        (result, executed, self.version)
    }

    /// Records a call that answered `result`, having seen the database at `seen`.
    fn answer(
        &mut self,
        call: Call,
        result: &Result<Produced, Error>,
        seen: u64,
        session: Option<&SessionLink>,
    ) {
        if let (Ok(_), Some(session)) = (result, session) {
            // A failed call brings no bookmark back, as in D1.
            session.saw(seen);
        }
        self.journal.push(Call {
            error: result.as_ref().err().map(|e| e.message().to_owned()),
            ..call
        });
    }
}

/// A stalled call between its start and its answer. If the caller drops the call's future
/// first, dropping this records the call as dropped.
struct InFlight<'a> {
    db: &'a D1Database,
    /// `None` once the call has answered.
    call: Option<Call>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            let mut state = self.db.lock();
            state.stats.dropped += 1;
            state.journal.push(Call {
                dropped: true,
                ..call
            });
        }
    }
}

/// Hangs for `duration` through `sleeper`, or tokio's clock without one.
async fn stall(sleeper: Option<&StallSleeper>, duration: Duration) {
    match sleeper {
        Some(sleep) => sleep(duration).await,
        #[cfg(feature = "tokio")]
        None => tokio::time::sleep(duration).await,
        #[cfg(not(feature = "tokio"))]
        None => panic!(
            "d1_retry::testing: a stalled call needs a sleeper: give the database one \
             with `D1Database::set_sleeper`, or enable the `tokio` feature"
        ),
    }
}

impl fmt::Debug for D1Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("D1Database")
            .field("stats", &state.stats)
            .field("rules", &state.faults.len())
            .finish_non_exhaustive()
    }
}
