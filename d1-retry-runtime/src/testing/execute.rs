//! Running a call's SQL on the SQLite connection, the way D1 runs it.
//!
//! Apart from `database.rs`, which decides *whether* a call runs (the fault plan) and
//! records it (the journal); this file only knows SQLite and D1's execution rules: one
//! statement at a time, a batch in one transaction, `exec` line by line, a dump as a copy
//! of the file.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::Connection;

use super::error::sqlite_detail;
use super::{D1Result, Error, Operation, Value};

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
/// statement; for `exec`, the number of lines run; for `dump`, the database file.
#[derive(Default)]
pub(crate) struct Produced {
    pub(crate) outputs: Vec<Output>,
    pub(crate) lines: u32,
    pub(crate) file: Vec<u8>,
}

/// Runs the call's SQL. On failure, also says whether something was committed anyway
/// (earlier lines of an `exec`).
pub(crate) fn execute(
    connection: &mut Connection,
    operation: Operation,
    statements: &[(&str, &[Value])],
) -> Result<Produced, (Error, bool)> {
    match operation {
        Operation::Exec => {
            let mut count = 0u32;
            let query = statements.first().map_or("", |(sql, _)| *sql);
            // D1 splits `exec`'s input on newlines and runs each line on its own.
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
                lines: count,
                ..Produced::default()
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
            Ok(Produced {
                outputs,
                ..Produced::default()
            })
        }
        Operation::Dump => Ok(Produced {
            file: dump(connection).map_err(|e| (e, false))?,
            ..Produced::default()
        }),
        Operation::First | Operation::All | Operation::Run | Operation::Raw => {
            let mut outputs = Vec::with_capacity(1);
            for (sql, params) in statements {
                outputs.push(run_statement(connection, sql, params).map_err(|e| (e, false))?);
            }
            Ok(Produced {
                outputs,
                ..Produced::default()
            })
        }
    }
}

/// Whether a call that ran can have written: any statement the read-only scanner does not
/// vouch for, as `exec` text (run line by line) or as a prepared statement (run whole). A
/// dump has no statements: it only reads.
pub(crate) fn may_write(operation: Operation, statements: &[(&str, &[Value])]) -> bool {
    let read_only = if operation == Operation::Exec {
        crate::is_read_only
    } else {
        crate::is_read_only_prepared
    };
    statements.iter().any(|(sql, _)| !read_only(sql))
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

/// The database as one SQLite file: `VACUUM INTO` a fresh temporary file, read back, then
/// removed. (rusqlite's `serialize` would avoid the file, but it is an optional feature of
/// rusqlite that the kit does not turn on.)
fn dump(connection: &Connection) -> Result<Vec<u8>, Error> {
    /// Numbers the files of one process, so concurrent dumps never share one.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let path: PathBuf = std::env::temp_dir().join(format!(
        "d1-retry-dump-{}-{}.sqlite",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let failed = |detail: String| Error::d1(format!("dump failed: {detail}"));
    let Some(name) = path.to_str() else {
        return Err(failed(format!(
            "temporary path {} is not UTF-8",
            path.display()
        )));
    };
    // `VACUUM INTO` refuses an existing file; one left by a crashed run of an earlier
    // process with the same id is stale.
    let _ = std::fs::remove_file(&path);
    let vacuumed = connection
        .execute("VACUUM INTO ?1", [name])
        .map_err(|e| failed(sqlite_detail(&e)));
    let read = vacuumed.and_then(|_| std::fs::read(&path).map_err(|e| failed(e.to_string())));
    let _ = std::fs::remove_file(&path);
    read
}
