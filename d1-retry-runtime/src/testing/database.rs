//! The local D1: a SQLite connection behind D1's call shapes, with a fault plan in front.

use core::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::Connection;

use super::error::sqlite_detail;
use super::{
    CallInfo, D1ExecResult, D1PreparedStatement, D1Result, Error, Fault, FaultPlan, Message,
    Operation, Timing, Value,
};

/// A D1 database on a local SQLite connection, with the call shapes of `worker::D1Database`
/// and failures injected by a [`FaultPlan`].
///
/// The handle is cheap to clone and every clone is the same database; it is `Send + Sync`
/// and may be used from concurrent tasks (the connection sits behind a mutex that is never
/// held across an `.await`).
///
/// Every call is recorded in a journal ([`calls`](Self::calls), [`take_calls`](Self::take_calls)):
/// its SQL and parameters, the fault injected, whether its changes were committed, and the
/// error the caller got.
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
}

/// Counts of what happened on a [`D1Database`] since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Calls made (`first`, `all`, `run`, `raw`, `batch`, `exec`).
    pub calls: u64,
    /// Calls failed by the fault plan before the statement ran.
    pub injected_before: u64,
    /// Calls failed by the fault plan after the statement ran and was committed.
    pub injected_after: u64,
    /// Calls that failed on their own (constraint, syntax, ...), without a fault.
    pub sql_errors: u64,
}

/// One call as the journal recorded it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Call {
    /// The call's number on this database, from 0.
    pub index: u64,
    /// The kind of call.
    pub operation: Operation,
    /// The SQL of each statement (several for a batch), with its parameters.
    pub statements: Vec<(String, Vec<Value>)>,
    /// The failure the fault plan injected, if any.
    pub injected: Option<(Message, Timing)>,
    /// Whether the call's changes are in the database (for `exec`: at least one line's).
    pub executed: bool,
    /// The message of the error the caller got, if any.
    pub error: Option<String>,
}

/// The rows of one statement.
pub(crate) struct Output {
    pub(crate) columns: Vec<String>,
    pub(crate) rows: Vec<Vec<Value>>,
    pub(crate) changes: usize,
    pub(crate) last_row_id: i64,
}

impl Output {
    pub(crate) fn into_result(self) -> D1Result {
        D1Result::new(self.columns, self.rows, self.changes, self.last_row_id)
    }
}

/// What a call produced before any injected failure replaced it: the rows of each
/// statement, or for `exec`, the number of lines run.
struct Produced {
    outputs: Vec<Output>,
    lines: u32,
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
            })),
        }
    }

    /// A statement for `query`, as `worker::D1Database::prepare`. Nothing runs until
    /// `first`, `all`, `run` or `raw` is awaited, or the statement is part of a `batch`.
    pub fn prepare<T: Into<String>>(&self, query: T) -> D1PreparedStatement {
        D1PreparedStatement::new(self.clone(), query.into())
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
        let parts: Vec<(&str, &[Value])> = statements
            .iter()
            .map(|statement| (statement.sql(), statement.params()))
            .collect();
        let produced = self.call(Operation::Batch, &parts)?;
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
        let produced = self.call(Operation::Exec, &[(query, &[])])?;
        Ok(D1ExecResult::new(produced.lines))
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

    /// How many calls each rule of the plan has failed, in rule order.
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

    /// A copy of the journal: every call since it was last taken.
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

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked elsewhere must not make every later call panic too.
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One statement of `first`/`all`/`run`/`raw`.
    pub(crate) fn call_one(
        &self,
        operation: Operation,
        sql: &str,
        params: &[Value],
    ) -> Result<Output, Error> {
        self.call(operation, &[(sql, params)])?
            .outputs
            .into_iter()
            .next()
            .ok_or_else(|| Error::d1("No SQL statements detected.".to_owned()))
    }

    fn call(
        &self,
        operation: Operation,
        statements: &[(&str, &[Value])],
    ) -> Result<Produced, Error> {
        let mut guard = self.lock();
        let state = &mut *guard;
        let index = state.stats.calls;
        state.stats.calls += 1;
        let sql: Vec<&str> = statements.iter().map(|(sql, _)| *sql).collect();
        let fault = state.faults.decide(&CallInfo {
            index,
            operation,
            sql: &sql,
        });
        let (result, executed) = match fault {
            Some((message, timing)) => {
                // After execution, the statement's own outcome only decides what was
                // committed; the caller hears the injected failure either way.
                let executed = timing == Timing::AfterExecution
                    && match execute(&mut state.connection, operation, statements) {
                        Ok(produced) => operation != Operation::Exec || produced.lines > 0,
                        Err((_, partial)) => partial,
                    };
                match timing {
                    Timing::BeforeExecution => state.stats.injected_before += 1,
                    Timing::AfterExecution => state.stats.injected_after += 1,
                }
                let error = Error::injected_fault(render(message, index), timing);
                (Err(error), executed)
            }
            None => match execute(&mut state.connection, operation, statements) {
                Ok(produced) => {
                    let executed = operation != Operation::Exec || produced.lines > 0;
                    (Ok(produced), executed)
                }
                Err((error, partial)) => {
                    state.stats.sql_errors += 1;
                    (Err(error), partial)
                }
            },
        };
        state.journal.push(Call {
            index,
            operation,
            statements: statements
                .iter()
                .map(|(sql, params)| ((*sql).to_owned(), params.to_vec()))
                .collect(),
            injected: fault,
            executed,
            error: result.as_ref().err().map(|e| e.message().to_owned()),
        });
        result
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

/// The text of an injected message; an internal error gets a reference id, derived from the
/// call number so that a seeded run prints the same ids every time.
pub(crate) fn render(message: Message, index: u64) -> String {
    match message {
        Message::InternalError => {
            // Multiplying by an odd constant is a bijection on u64 that scatters consecutive
            // call numbers, so every call gets its own id, and the ids do not look sequential.
            let mut x = index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut id = String::with_capacity(13);
            // 13 base-36 digits hold any u64.
            for _ in 0..13 {
                let digit = u32::try_from(x % 36).unwrap_or(0);
                id.push(char::from_digit(digit, 36).unwrap_or('0'));
                x /= 36;
            }
            format!("{}{id}", message.text())
        }
        other => other.text().to_owned(),
    }
}

/// Runs the call's SQL. On failure, also says whether something was committed anyway
/// (earlier lines of an `exec`).
fn execute(
    connection: &mut Connection,
    operation: Operation,
    statements: &[(&str, &[Value])],
) -> Result<Produced, (Error, bool)> {
    match operation {
        Operation::Exec => {
            let mut count = 0u32;
            let query = statements.first().map_or("", |(sql, _)| *sql);
            for (number, line) in query.split('\n').enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                if let Err(e) = connection.execute_batch(line) {
                    return Err((Error::exec(number + 1, line, sqlite_detail(&e)), count > 0));
                }
                count = count.saturating_add(1);
            }
            Ok(Produced {
                outputs: Vec::new(),
                lines: count,
            })
        }
        Operation::Batch => {
            let transaction = connection
                .transaction()
                .map_err(|e| (Error::d1(sqlite_detail(&e)), false))?;
            let mut outputs = Vec::with_capacity(statements.len());
            for (sql, params) in statements {
                // Dropping the transaction on the way out rolls every statement back.
                outputs.push(run_statement(&transaction, sql, params).map_err(|e| (e, false))?);
            }
            transaction
                .commit()
                .map_err(|e| (Error::d1(sqlite_detail(&e)), false))?;
            Ok(Produced { outputs, lines: 0 })
        }
        Operation::First | Operation::All | Operation::Run | Operation::Raw => {
            let mut outputs = Vec::with_capacity(1);
            for (sql, params) in statements {
                outputs.push(run_statement(connection, sql, params).map_err(|e| (e, false))?);
            }
            Ok(Produced { outputs, lines: 0 })
        }
    }
}

/// One statement, run to completion: SQLite makes it atomic on its own.
fn run_statement(connection: &Connection, sql: &str, params: &[Value]) -> Result<Output, Error> {
    if sql.trim().is_empty() {
        return Err(Error::d1("No SQL statements detected.".to_owned()));
    }
    let sqlite = |e: rusqlite::Error| Error::d1(sqlite_detail(&e));
    let mut statement = connection.prepare(sql).map_err(sqlite)?;
    if statement.parameter_count() != params.len() {
        return Err(Error::d1(
            "Wrong number of parameter bindings for SQL query.".to_owned(),
        ));
    }
    let columns: Vec<String> = statement
        .column_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let before = connection.total_changes();
    let mut rows = Vec::new();
    {
        let mut cursor = statement
            .query(rusqlite::params_from_iter(params))
            .map_err(sqlite)?;
        while let Some(row) = cursor.next().map_err(sqlite)? {
            let mut values = Vec::with_capacity(columns.len());
            for i in 0..columns.len() {
                values.push(Value::from(row.get_ref(i).map_err(sqlite)?));
            }
            rows.push(values);
        }
    }
    let changed = connection.total_changes() > before;
    let changes = if changed {
        usize::try_from(connection.changes()).unwrap_or(usize::MAX)
    } else {
        0
    };
    Ok(Output {
        columns,
        rows,
        changes,
        last_row_id: connection.last_insert_rowid(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_error_references_are_stable_and_distinct() {
        let a = render(Message::InternalError, 1);
        assert_eq!(a, render(Message::InternalError, 1));
        assert_ne!(a, render(Message::InternalError, 2));
        let id = a.strip_prefix("internal error; reference = ").unwrap();
        assert_eq!(id.len(), 13);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        );
        assert_eq!(render(Message::CpuLimit, 1), Message::CpuLimit.text());
    }
}
