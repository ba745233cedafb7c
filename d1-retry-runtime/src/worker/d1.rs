//! `D1Retry`: `worker::D1Database` with every call retried, for code without `#[d1_retry]`.

use core::future::{Future, IntoFuture};
use core::ops::ControlFlow;
use core::pin::Pin;
use std::rc::Rc;

use serde::Deserialize;
use worker::wasm_bindgen::JsValue;
use worker::worker_sys::types::{D1ExecResult, D1PreparedStatement as D1PreparedStatementSys};
use worker::{
    D1Argument, D1Database, D1DatabaseSession, D1PreparedStatement, D1Result, D1SessionBookmark,
    D1SessionConstraint, Error, Result,
};

use crate::dispatch::receiver::{Retrying, decoded};
use crate::retry::call::TimedCall;
use crate::retry::decide::Access;
use crate::retry::operation::OperationName;
use crate::schedule::timeout::TimedOut;
use crate::worker::WorkerSleeper;
use crate::{RetryPolicy, is_read_only, is_read_only_prepared};

/// A [`worker::D1Database`] whose calls are retried through transient D1 failures.
///
/// It has the methods of `D1Database`, with the same names, arguments and results, so
/// switching is one line:
///
/// ```no_run
/// use d1_retry_runtime::worker::D1Retry;
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct User { id: i64, name: String }
///
/// # async fn handler(env: worker::Env) -> worker::Result<Option<User>> {
/// // was: let db = env.d1("DB")?;
/// let db = D1Retry::new(env.d1("DB")?);
/// db.prepare("SELECT id, name FROM users WHERE id = ?1")
///     .bind(&[7.into()])?
///     .first::<User>(None)
///     .await
/// # }
/// ```
///
/// # What is retried
///
/// Each call is decided on its own, with the classes and schedule of `#[d1_retry]`:
///
/// - a statement is read-only when [`is_read_only_prepared`] says so for its SQL (D1 sends
///   a prepared statement to SQLite whole), judged once in [`prepare`](Self::prepare); a
///   read is retried after failures that did not run it and after failures that may have
///   run it;
/// - a statement that may write is retried only when D1 was not reached
///   ([`NotExecuted`](crate::FailureClass::NotExecuted)): after a failure that may have
///   run it, the caller gets the error, because running it again could write twice;
/// - a [`batch`](Self::batch) is one transaction: it counts as read-only only when every
///   statement in it is;
/// - [`exec`](Self::exec) is judged by the whole SQL text it is given, with
///   [`is_read_only`] (`exec` runs each line on its own), [`dump`](Self::dump) is a read;
/// - permanent failures (constraint violations, SQL errors, limits) are never retried;
/// - with a policy's time limits ([`RetryPolicy::with_attempt_timeout`],
///   [`RetryPolicy::with_deadline`]), a call that stalls is cut and fails as maybe executed
///   with a [`TimedOut`] (as a `worker::Error`): a read is retried, a write
///   is not, since D1 may still run it.
///
/// Retries log the `tracing` lines of [`Retry`](crate::Retry), with the statement's SQL
/// (its first line, at most 80 bytes) as `d1.operation`, or `D1Retry::batch` /
/// `D1Retry::dump`.
///
/// Work that spans several statements, where a later one must not run again after an
/// earlier one wrote, needs `#[d1_retry]` on the function that holds them, or a
/// [`batch`](Self::batch): this type sees one call at a time.
#[derive(Debug)]
pub struct D1Retry {
    db: D1Database,
    policy: RetryPolicy,
}

impl D1Retry {
    /// Wraps the binding, with [`RetryPolicy::DEFAULT`].
    #[must_use]
    pub fn new(db: D1Database) -> Self {
        D1Retry {
            db,
            policy: RetryPolicy::DEFAULT,
        }
    }

    /// The same wrapper with another schedule. An invalid policy (see
    /// [`RetryPolicy::validate`]) makes every call a single attempt and logs why.
    #[must_use]
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The schedule every call follows.
    #[must_use]
    pub fn policy(&self) -> RetryPolicy {
        self.policy
    }

    /// The binding, for calls that must not be retried.
    #[must_use]
    pub fn inner(&self) -> &D1Database {
        &self.db
    }

    /// Unwraps the binding.
    #[must_use]
    pub fn into_inner(self) -> D1Database {
        self.db
    }

    /// Prepares a statement, as [`D1Database::prepare`]; its SQL is scanned here, once.
    pub fn prepare<T: Into<String>>(&self, query: T) -> D1RetryStatement {
        let sql: String = query.into();
        let statement = self.db.prepare(sql.as_str());
        D1RetryStatement::new(statement, sql, self.policy)
    }

    /// Runs the statements in one transaction, as [`D1Database::batch`]. After a failure
    /// that may have run the batch, it is retried only when every statement is read-only.
    ///
    /// # Errors
    ///
    /// The last attempt's error, as `D1Database::batch` returned it.
    #[inline]
    pub fn batch(
        &self,
        statements: Vec<D1RetryStatement>,
    ) -> impl Future<Output = Result<Vec<D1Result>>> {
        run_batch(&self.policy, statements, |inner| self.db.batch(inner))
    }

    /// Runs one or more `\n`-separated queries without preparing them, as
    /// [`D1Database::exec`]; retried as a read only when the whole text is read-only.
    ///
    /// # Errors
    ///
    /// The last attempt's error, as `D1Database::exec` returned it.
    #[inline]
    pub fn exec(&self, query: &str) -> impl Future<Output = Result<D1ExecResult>> {
        let read_only = is_read_only(query);
        retried(
            &self.policy,
            operation_name(query),
            Access::judged(read_only),
            move |()| self.db.exec(query),
        )
    }

    /// The database's contents, as [`D1Database::dump`]; retried as a read.
    ///
    /// # Errors
    ///
    /// The last attempt's error, as `D1Database::dump` returned it.
    #[inline]
    pub fn dump(&self) -> impl Future<Output = Result<Vec<u8>>> {
        retried(&self.policy, "D1Retry::dump", Access::ReadOnly, |()| {
            self.db.dump()
        })
    }

    /// Starts a session, as [`D1Database::with_session`]; its calls are retried too.
    /// Starting a session does not reach the database, so this call itself is not retried.
    ///
    /// # Errors
    ///
    /// The error of `D1Database::with_session`.
    pub fn with_session(&self, constraint_or_bookmark: Option<&str>) -> Result<D1RetrySession> {
        let session = self.db.with_session(constraint_or_bookmark)?;
        Ok(D1RetrySession {
            session,
            policy: self.policy,
        })
    }

    /// Starts a session with a typed constraint, as [`D1Database::with_session_constraint`].
    ///
    /// # Errors
    ///
    /// The error of `D1Database::with_session_constraint`.
    pub fn with_session_constraint(
        &self,
        constraint: D1SessionConstraint,
    ) -> Result<D1RetrySession> {
        let session = self.db.with_session_constraint(constraint)?;
        Ok(D1RetrySession {
            session,
            policy: self.policy,
        })
    }
}

impl From<D1Database> for D1Retry {
    fn from(db: D1Database) -> Self {
        D1Retry::new(db)
    }
}

/// A [`worker::D1DatabaseSession`] whose calls are retried, from [`D1Retry::with_session`].
#[derive(Debug)]
pub struct D1RetrySession {
    session: D1DatabaseSession,
    policy: RetryPolicy,
}

impl D1RetrySession {
    /// Prepares a statement in this session, as [`D1DatabaseSession::prepare`].
    pub fn prepare<T: Into<String>>(&self, query: T) -> D1RetryStatement {
        let sql: String = query.into();
        let statement = self.session.prepare(sql.as_str());
        D1RetryStatement::new(statement, sql, self.policy)
    }

    /// Runs the statements in one transaction in this session, as
    /// [`D1DatabaseSession::batch`], retried like [`D1Retry::batch`].
    ///
    /// # Errors
    ///
    /// The last attempt's error, as `D1DatabaseSession::batch` returned it.
    #[inline]
    pub fn batch(
        &self,
        statements: Vec<D1RetryStatement>,
    ) -> impl Future<Output = Result<Vec<D1Result>>> {
        run_batch(&self.policy, statements, |inner| self.session.batch(inner))
    }

    /// The latest bookmark this session saw, as [`D1DatabaseSession::get_bookmark`].
    ///
    /// # Errors
    ///
    /// The error of `D1DatabaseSession::get_bookmark`.
    pub fn get_bookmark(&self) -> Result<Option<D1SessionBookmark>> {
        self.session.get_bookmark()
    }

    /// The session, for calls that must not be retried.
    #[must_use]
    pub fn inner(&self) -> &D1DatabaseSession {
        &self.session
    }
}

/// A prepared statement whose calls are retried, from [`D1Retry::prepare`].
///
/// It has the methods of [`worker::D1PreparedStatement`]. Awaiting it runs it, like
/// awaiting a `D1PreparedStatement`.
#[derive(Clone, Debug)]
#[must_use = "a statement does nothing until you run or await it"]
pub struct D1RetryStatement {
    statement: D1PreparedStatement,
    /// Shared by the statements `bind_refs` and `batch_bind` derive from this one.
    sql: Rc<String>,
    read_only: bool,
    policy: RetryPolicy,
}

impl D1RetryStatement {
    fn new(statement: D1PreparedStatement, sql: String, policy: RetryPolicy) -> Self {
        D1RetryStatement {
            statement,
            read_only: is_read_only_prepared(&sql),
            sql: Rc::new(sql),
            policy,
        }
    }

    fn with_statement(&self, statement: D1PreparedStatement) -> Self {
        D1RetryStatement {
            statement,
            sql: Rc::clone(&self.sql),
            read_only: self.read_only,
            policy: self.policy,
        }
    }

    /// Whether the statement's SQL is read-only, so that failures after which it may have
    /// run are retried.
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The SQL the statement was prepared from.
    #[must_use]
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// Binds parameters, as [`D1PreparedStatement::bind`].
    ///
    /// # Errors
    ///
    /// The error of `D1PreparedStatement::bind`.
    pub fn bind(self, values: &[JsValue]) -> Result<Self> {
        let D1RetryStatement {
            statement,
            sql,
            read_only,
            policy,
        } = self;
        Ok(D1RetryStatement {
            statement: statement.bind(values)?,
            sql,
            read_only,
            policy,
        })
    }

    /// Binds parameters to a new statement, as [`D1PreparedStatement::bind_refs`].
    ///
    /// # Errors
    ///
    /// The error of `D1PreparedStatement::bind_refs`.
    pub fn bind_refs<'a, T, U>(&self, values: T) -> Result<Self>
    where
        T: IntoIterator<Item = &'a U>,
        U: D1Argument + 'a,
    {
        let bound = self.statement.bind_refs(values)?;
        Ok(self.with_statement(bound))
    }

    /// One bound statement per set of values, as [`D1PreparedStatement::batch_bind`],
    /// ready for [`D1Retry::batch`].
    ///
    /// # Errors
    ///
    /// The error of `D1PreparedStatement::batch_bind`.
    pub fn batch_bind<'a, U, T, V>(&self, values: T) -> Result<Vec<Self>>
    where
        U: IntoIterator<Item = &'a V> + 'a,
        T: IntoIterator<Item = U> + 'a,
        V: D1Argument + 'a,
    {
        let bound = self.statement.batch_bind(values)?;
        Ok(bound
            .into_iter()
            .map(|statement| self.with_statement(statement))
            .collect())
    }

    /// The first row, or one column of it, as [`D1PreparedStatement::first`].
    ///
    /// # Errors
    ///
    /// The last attempt's error, as `D1PreparedStatement::first` returned it.
    pub fn first<T>(&self, col_name: Option<&str>) -> impl Future<Output = Result<Option<T>>>
    where
        T: for<'a> Deserialize<'a>,
    {
        self.retried(true, move |()| self.statement.first::<T>(col_name))
    }

    /// Runs the statement and returns its metadata, as [`D1PreparedStatement::run`].
    ///
    /// # Errors
    ///
    /// The last attempt's error, as `D1PreparedStatement::run` returned it.
    #[inline]
    pub fn run(&self) -> impl Future<Output = Result<D1Result>> {
        self.retried(false, |()| self.statement.run())
    }

    /// All rows and metadata, as [`D1PreparedStatement::all`].
    ///
    /// # Errors
    ///
    /// The last attempt's error, as `D1PreparedStatement::all` returned it.
    #[inline]
    pub fn all(&self) -> impl Future<Output = Result<D1Result>> {
        self.retried(false, |()| self.statement.all())
    }

    /// Rows as arrays of values, as [`D1PreparedStatement::raw`].
    ///
    /// # Errors
    ///
    /// The last attempt's error, as `D1PreparedStatement::raw` returned it.
    pub fn raw<T>(&self) -> impl Future<Output = Result<Vec<Vec<T>>>>
    where
        T: for<'a> Deserialize<'a>,
    {
        self.retried(true, |()| self.statement.raw::<T>())
    }

    /// Rows as JavaScript values, as [`D1PreparedStatement::raw_js_value`].
    ///
    /// # Errors
    ///
    /// The last attempt's error, as `D1PreparedStatement::raw_js_value` returned it.
    #[inline]
    pub fn raw_js_value(&self) -> impl Future<Output = Result<Vec<JsValue>>> {
        self.retried(false, |()| self.statement.raw_js_value())
    }

    /// The JavaScript statement object, as [`D1PreparedStatement::inner`].
    #[must_use]
    pub fn inner(&self) -> &D1PreparedStatementSys {
        self.statement.inner()
    }

    /// The statement without retries.
    pub fn into_inner(self) -> D1PreparedStatement {
        self.statement
    }

    /// `decodes`: the call decodes the rows into the caller's type (`first`, `raw`).
    fn retried<T, Fut>(
        &self,
        decodes: bool,
        attempt: impl FnMut(()) -> Fut,
    ) -> impl Future<Output = Result<T>>
    where
        Fut: Future<Output = Result<T>>,
    {
        retried(
            &self.policy,
            operation_name(&self.sql),
            access(self.read_only, decodes),
            attempt,
        )
    }
}

impl IntoFuture for D1RetryStatement {
    type Output = Result<D1Result>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<D1Result>>>>;

    /// Runs the statement, as awaiting a [`D1PreparedStatement`] does.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.run().await })
    }
}

/// The access of a call of SQL judged `read_only`; `decodes`: the call decodes the rows
/// into the caller's type (`first`, `raw`), so that a write is an
/// [`Access::DecodedWrite`], never retried, as `#[d1_retry]` makes it (`decoded`).
fn access(read_only: bool, decodes: bool) -> Access {
    let access = Access::judged(read_only);
    if decodes { decoded(access) } else { access }
}

/// Retries a batch: read-only only when every statement is. The binding is handed its own
/// statements, rebuilt for each attempt because it consumes them. Like the other methods,
/// not an `async fn` around the retried future: the closure owns the statements, and
/// `read_only` is settled when the batch is made.
fn run_batch<'a, F, Fut>(
    policy: &'a RetryPolicy,
    statements: Vec<D1RetryStatement>,
    mut batch: F,
) -> impl Future<Output = Result<Vec<D1Result>>> + 'a
where
    F: FnMut(Vec<D1PreparedStatement>) -> Fut + 'a,
    Fut: Future<Output = Result<Vec<D1Result>>> + 'a,
{
    let read_only = statements.iter().all(|statement| statement.read_only);
    retried(
        policy,
        "D1Retry::batch",
        Access::judged(read_only),
        move |()| batch(statements.iter().map(|s| s.statement.clone()).collect()),
    )
}

/// Runs `attempt` as [`Retry::run_timed`](crate::Retry::run_timed) would, with the
/// policy's time limits, through the loop an awaited `#[d1_retry]` call site is rewritten
/// into (`timed_execution.rs`): what is instantiated per method and result type is one
/// small future, and the decisions are compiled once, which keeps the wrapper's wasm small.
///
/// The wrapper's methods return this future itself rather than being `async fn`s that
/// await it: each `async fn` layer would be one more state machine, and one more drop glue
/// with a long generic name, per method and result type in a Worker's wasm (1.0 KB of the
/// example's, `scripts/bench-wasm-size.sh`). So the few that look at their input before
/// the call (`exec` scans its SQL) do so when called, not at the first poll.
async fn retried<T, Fut>(
    policy: &RetryPolicy,
    operation: &str,
    access: Access,
    mut attempt: impl FnMut(()) -> Fut,
) -> Result<T>
where
    Fut: Future<Output = Result<T>>,
{
    let operation = OperationName::Named(operation);
    let timed = TimedCall::with_sleeper(policy, &operation, WorkerSleeper);
    let mut execution = Retrying.begin_timed(&timed, access);
    loop {
        let timed_out = |_| Some(<Error as From<TimedOut>>::from as fn(TimedOut) -> Error);
        match execution.attempt_timed(attempt(()), timed_out).await {
            ControlFlow::Break(result) => return result,
            ControlFlow::Continue(again) => execution.again(again),
        }
    }
}

/// The longest `d1.operation` taken from SQL; a log field, not the query.
const OPERATION_NAME_MAX: usize = 80;

/// The SQL's first non-blank line, at most [`OPERATION_NAME_MAX`] bytes, cut at a
/// character boundary: a borrowed slice, so naming the operation allocates nothing.
///
/// Blanks are ASCII whitespace, the only spaces SQLite's tokenizer knows; `trim_start` would
/// also link Unicode's whitespace table into every Worker (about 600 bytes of wasm).
fn operation_name(sql: &str) -> &str {
    let sql = sql.trim_ascii_start();
    // A byte search: `split('\n')` would link a `char` searcher into every Worker.
    let line = match sql.bytes().position(|byte| byte == b'\n') {
        Some(end) => sql.get(..end).unwrap_or(sql),
        None => sql,
    }
    .trim_ascii_end();
    if line.len() <= OPERATION_NAME_MAX {
        return line;
    }
    let mut end = OPERATION_NAME_MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line.get(..end).unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_name_is_the_first_line() {
        assert_eq!(operation_name("  \n SELECT id\n  FROM users"), "SELECT id");
        assert_eq!(operation_name("SELECT 1;\r\n"), "SELECT 1;");
        assert_eq!(operation_name("\t\x0c SELECT 2 \t"), "SELECT 2");
        assert_eq!(operation_name(""), "");
    }

    #[test]
    fn operation_name_is_bounded_at_a_char_boundary() {
        let long = format!("SELECT '{}'", "é".repeat(100));
        let name = operation_name(&long);
        assert!(name.len() <= OPERATION_NAME_MAX, "{}", name.len());
        assert!(name.len() >= OPERATION_NAME_MAX - 1, "{}", name.len());
        assert!(long.starts_with(name));
        let ascii = "x".repeat(200);
        assert_eq!(operation_name(&ascii).len(), OPERATION_NAME_MAX);
    }
}
