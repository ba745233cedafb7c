//! Errors in the shapes real D1 produces.

use core::fmt;

use super::value::DeError;
use super::{Timing, Value};

/// A failed call on the local D1, shaped like the errors a Worker sees.
///
/// Its `Display` is the JS error's message (`D1_ERROR: Network connection lost.`,
/// `D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT (extended:
/// SQLITE_CONSTRAINT_UNIQUE)`, `D1_EXEC_ERROR: Error in line 1: ...`), and its
/// [`source()`](std::error::Error::source) is the detail, as the JS `cause` is. So
/// [`classify`](crate::classify()) reads it exactly as it reads a real one.
///
/// ```
/// use std::error::Error as _;
/// use d1_retry_runtime::testing::{D1Database, Fault, Message};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let db = D1Database::open_in_memory().unwrap();
/// db.add_fault(Fault::new(Message::NetworkConnectionLost).times(1));
/// let error = db.prepare("SELECT 1").run().await.unwrap_err();
/// assert_eq!(error.to_string(), "D1_ERROR: Network connection lost.");
/// assert_eq!(error.source().unwrap().to_string(), "Network connection lost.");
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Error {
    message: String,
    cause: Option<Cause>,
    injected: Option<Timing>,
}

/// The detail of an [`Error`], returned by its `source()` like a JS error's `cause`.
#[derive(Clone, Debug)]
pub struct Cause {
    message: String,
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Cause {}

impl Error {
    /// The message, as `Display` shows it.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The detail held as the cause, if any.
    #[must_use]
    pub fn cause(&self) -> Option<&str> {
        self.cause.as_ref().map(|cause| cause.message.as_str())
    }

    /// When the failure was injected by a fault plan: before or after the statement ran.
    /// `None` for the database's own errors (constraint, syntax, ...), after which nothing
    /// of the call was committed.
    #[must_use]
    pub fn injected(&self) -> Option<Timing> {
        self.injected
    }

    /// `D1_ERROR: <detail>`, with the detail as the cause.
    pub(crate) fn d1(detail: String) -> Self {
        Error {
            message: format!("D1_ERROR: {detail}"),
            cause: Some(Cause { message: detail }),
            injected: None,
        }
    }

    pub(crate) fn injected_fault(detail: String, timing: Timing) -> Self {
        Error {
            injected: Some(timing),
            ..Error::d1(detail)
        }
    }

    /// What `exec` reports: the failing line, echoed, and SQLite's message.
    pub(crate) fn exec(line: usize, sql: &str, detail: String) -> Self {
        Error {
            message: format!("D1_EXEC_ERROR: Error in line {line}: {sql}: {detail}"),
            cause: Some(Cause { message: detail }),
            injected: None,
        }
    }

    /// What `first(Some(column))` reports when the row has no such column.
    pub(crate) fn column_not_found(column: &str) -> Self {
        Error {
            message: format!("D1_COLUMN_NOTFOUND: Column not found ({column})"),
            cause: Some(Cause {
                message: "Column not found".to_owned(),
            }),
            injected: None,
        }
    }

    /// A row that does not deserialize into the type asked for (`worker` reports the
    /// serde error alone, without a D1 prefix).
    pub(crate) fn deserialize(error: &DeError) -> Self {
        Error {
            message: error.to_string(),
            cause: None,
            injected: None,
        }
    }

    /// The kit's own setup failing (opening the SQLite file).
    pub(crate) fn setup(error: &rusqlite::Error) -> Self {
        Error {
            message: format!("could not open the local D1: {error}"),
            cause: None,
            injected: None,
        }
    }
}

/// An error of the repository's own, as `worker::Error::RustError`: the text alone, no
/// cause. `Err("no such user".into())` compiles against both.
impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Error::from(message.to_owned())
    }
}

/// As `From<&str>`.
impl From<String> for Error {
    fn from(message: String) -> Self {
        Error {
            message,
            cause: None,
            injected: None,
        }
    }
}

/// A call cut by a time limit, as d1-retry's `From<TimedOut> for worker::Error`: the
/// timeout's text, which classifies as maybe executed.
impl From<crate::TimedOut> for Error {
    fn from(error: crate::TimedOut) -> Self {
        Error::from(error.to_string())
    }
}

/// A thrown JS value, as `worker`'s `From<JsValue>`: its text (`null` for `NULL`). For
/// code such as `exec_result.count().map_err(Error::from)`.
impl From<Value> for Error {
    fn from(value: Value) -> Self {
        Error::from(match value {
            Value::Null => "null".to_owned(),
            Value::Integer(n) => n.to_string(),
            Value::Real(x) => x.to_string(),
            Value::Text(text) => text,
            Value::Blob(bytes) => format!("{bytes:?}"),
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_ref()
            .map(|cause| cause as &(dyn std::error::Error + 'static))
    }
}

/// SQLite's error as D1 words it: `<message>: <CODE>`, plus `(extended: <CODE>)` when the
/// extended code says more, and ` at offset <n>` for syntax errors.
pub(crate) fn sqlite_detail(error: &rusqlite::Error) -> String {
    match error {
        rusqlite::Error::SqliteFailure(code, message) => {
            let message = message.clone().unwrap_or_else(|| code.to_string());
            format!("{message}: {}", code_names(code.extended_code))
        }
        rusqlite::Error::SqlInputError {
            error, msg, offset, ..
        } => {
            // D1 reports the offset of syntax errors only ("no such table: t: SQLITE_ERROR").
            if msg.contains("syntax error") {
                format!(
                    "{msg} at offset {offset}: {}",
                    code_names(error.extended_code)
                )
            } else {
                format!("{msg}: {}", code_names(error.extended_code))
            }
        }
        rusqlite::Error::InvalidParameterCount(..) => {
            "Wrong number of parameter bindings for SQL query.".to_owned()
        }
        other => other.to_string(),
    }
}

fn code_names(extended: i32) -> String {
    let primary = extended & 0xff;
    let primary_name = primary_code_name(primary);
    match extended_code_name(extended) {
        Some(name) => format!("{primary_name} (extended: {name})"),
        None => primary_name.to_owned(),
    }
}

fn primary_code_name(code: i32) -> &'static str {
    match code {
        2 => "SQLITE_INTERNAL",
        3 => "SQLITE_PERM",
        4 => "SQLITE_ABORT",
        5 => "SQLITE_BUSY",
        6 => "SQLITE_LOCKED",
        7 => "SQLITE_NOMEM",
        8 => "SQLITE_READONLY",
        9 => "SQLITE_INTERRUPT",
        10 => "SQLITE_IOERR",
        11 => "SQLITE_CORRUPT",
        12 => "SQLITE_NOTFOUND",
        13 => "SQLITE_FULL",
        14 => "SQLITE_CANTOPEN",
        15 => "SQLITE_PROTOCOL",
        16 => "SQLITE_EMPTY",
        17 => "SQLITE_SCHEMA",
        18 => "SQLITE_TOOBIG",
        19 => "SQLITE_CONSTRAINT",
        20 => "SQLITE_MISMATCH",
        21 => "SQLITE_MISUSE",
        22 => "SQLITE_NOLFS",
        23 => "SQLITE_AUTH",
        24 => "SQLITE_FORMAT",
        25 => "SQLITE_RANGE",
        26 => "SQLITE_NOTADB",
        // SQLITE_ERROR (1), and the generic name for anything newer.
        _ => "SQLITE_ERROR",
    }
}

fn extended_code_name(code: i32) -> Option<&'static str> {
    Some(match code {
        275 => "SQLITE_CONSTRAINT_CHECK",
        531 => "SQLITE_CONSTRAINT_COMMITHOOK",
        787 => "SQLITE_CONSTRAINT_FOREIGNKEY",
        1043 => "SQLITE_CONSTRAINT_FUNCTION",
        1299 => "SQLITE_CONSTRAINT_NOTNULL",
        1555 => "SQLITE_CONSTRAINT_PRIMARYKEY",
        1811 => "SQLITE_CONSTRAINT_TRIGGER",
        2067 => "SQLITE_CONSTRAINT_UNIQUE",
        2323 => "SQLITE_CONSTRAINT_VTAB",
        2579 => "SQLITE_CONSTRAINT_ROWID",
        2835 => "SQLITE_CONSTRAINT_PINNED",
        3091 => "SQLITE_CONSTRAINT_DATATYPE",
        257 => "SQLITE_ERROR_MISSING_COLLSEQ",
        513 => "SQLITE_ERROR_RETRY",
        769 => "SQLITE_ERROR_SNAPSHOT",
        264 => "SQLITE_READONLY_RECOVERY",
        516 => "SQLITE_ABORT_ROLLBACK",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_names_add_the_extended_code_only_when_it_says_more() {
        assert_eq!(code_names(1), "SQLITE_ERROR");
        assert_eq!(
            code_names(2067),
            "SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)"
        );
        assert_eq!(
            code_names(1299),
            "SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_NOTNULL)"
        );
        assert_eq!(code_names(19), "SQLITE_CONSTRAINT");
        // An extended code this table does not know still names its primary code.
        assert_eq!(code_names(19 | (60 << 8)), "SQLITE_CONSTRAINT");
    }

    /// The names against SQLite's own constants, so a wrong number cannot hide.
    #[test]
    fn code_names_match_sqlite() {
        use rusqlite::ffi;
        let primary = [
            (ffi::SQLITE_ERROR, "SQLITE_ERROR"),
            (ffi::SQLITE_INTERNAL, "SQLITE_INTERNAL"),
            (ffi::SQLITE_PERM, "SQLITE_PERM"),
            (ffi::SQLITE_ABORT, "SQLITE_ABORT"),
            (ffi::SQLITE_BUSY, "SQLITE_BUSY"),
            (ffi::SQLITE_LOCKED, "SQLITE_LOCKED"),
            (ffi::SQLITE_NOMEM, "SQLITE_NOMEM"),
            (ffi::SQLITE_READONLY, "SQLITE_READONLY"),
            (ffi::SQLITE_INTERRUPT, "SQLITE_INTERRUPT"),
            (ffi::SQLITE_IOERR, "SQLITE_IOERR"),
            (ffi::SQLITE_CORRUPT, "SQLITE_CORRUPT"),
            (ffi::SQLITE_NOTFOUND, "SQLITE_NOTFOUND"),
            (ffi::SQLITE_FULL, "SQLITE_FULL"),
            (ffi::SQLITE_CANTOPEN, "SQLITE_CANTOPEN"),
            (ffi::SQLITE_PROTOCOL, "SQLITE_PROTOCOL"),
            (ffi::SQLITE_EMPTY, "SQLITE_EMPTY"),
            (ffi::SQLITE_SCHEMA, "SQLITE_SCHEMA"),
            (ffi::SQLITE_TOOBIG, "SQLITE_TOOBIG"),
            (ffi::SQLITE_CONSTRAINT, "SQLITE_CONSTRAINT"),
            (ffi::SQLITE_MISMATCH, "SQLITE_MISMATCH"),
            (ffi::SQLITE_MISUSE, "SQLITE_MISUSE"),
            (ffi::SQLITE_NOLFS, "SQLITE_NOLFS"),
            (ffi::SQLITE_AUTH, "SQLITE_AUTH"),
            (ffi::SQLITE_FORMAT, "SQLITE_FORMAT"),
            (ffi::SQLITE_RANGE, "SQLITE_RANGE"),
            (ffi::SQLITE_NOTADB, "SQLITE_NOTADB"),
        ];
        for (code, name) in primary {
            assert_eq!(primary_code_name(code), name);
            assert_eq!(extended_code_name(code), None, "{name}");
        }
        let extended = [
            (ffi::SQLITE_CONSTRAINT_CHECK, "SQLITE_CONSTRAINT_CHECK"),
            (
                ffi::SQLITE_CONSTRAINT_COMMITHOOK,
                "SQLITE_CONSTRAINT_COMMITHOOK",
            ),
            (
                ffi::SQLITE_CONSTRAINT_FOREIGNKEY,
                "SQLITE_CONSTRAINT_FOREIGNKEY",
            ),
            (
                ffi::SQLITE_CONSTRAINT_FUNCTION,
                "SQLITE_CONSTRAINT_FUNCTION",
            ),
            (ffi::SQLITE_CONSTRAINT_NOTNULL, "SQLITE_CONSTRAINT_NOTNULL"),
            (
                ffi::SQLITE_CONSTRAINT_PRIMARYKEY,
                "SQLITE_CONSTRAINT_PRIMARYKEY",
            ),
            (ffi::SQLITE_CONSTRAINT_TRIGGER, "SQLITE_CONSTRAINT_TRIGGER"),
            (ffi::SQLITE_CONSTRAINT_UNIQUE, "SQLITE_CONSTRAINT_UNIQUE"),
            (ffi::SQLITE_CONSTRAINT_VTAB, "SQLITE_CONSTRAINT_VTAB"),
            (ffi::SQLITE_CONSTRAINT_ROWID, "SQLITE_CONSTRAINT_ROWID"),
            (ffi::SQLITE_CONSTRAINT_PINNED, "SQLITE_CONSTRAINT_PINNED"),
            (
                ffi::SQLITE_CONSTRAINT_DATATYPE,
                "SQLITE_CONSTRAINT_DATATYPE",
            ),
            (
                ffi::SQLITE_ERROR_MISSING_COLLSEQ,
                "SQLITE_ERROR_MISSING_COLLSEQ",
            ),
            (ffi::SQLITE_ERROR_RETRY, "SQLITE_ERROR_RETRY"),
            (ffi::SQLITE_ERROR_SNAPSHOT, "SQLITE_ERROR_SNAPSHOT"),
            (ffi::SQLITE_READONLY_RECOVERY, "SQLITE_READONLY_RECOVERY"),
            (ffi::SQLITE_ABORT_ROLLBACK, "SQLITE_ABORT_ROLLBACK"),
        ];
        for (code, name) in extended {
            assert_eq!(extended_code_name(code), Some(name));
        }
        assert_eq!(primary_code_name(99), "SQLITE_ERROR");
    }

    #[test]
    fn error_shapes() {
        let e = Error::d1("boom".into());
        assert_eq!(e.to_string(), "D1_ERROR: boom");
        assert_eq!(e.cause(), Some("boom"));
        assert_eq!(e.injected(), None);
        let e = Error::injected_fault("Network connection lost.".into(), Timing::AfterExecution);
        assert_eq!(e.message(), "D1_ERROR: Network connection lost.");
        assert_eq!(e.injected(), Some(Timing::AfterExecution));
        let e = Error::column_not_found("n");
        assert_eq!(e.to_string(), "D1_COLUMN_NOTFOUND: Column not found (n)");
        assert_eq!(e.cause(), Some("Column not found"));
        let e = Error::from("no such user");
        assert_eq!(e.to_string(), "no such user");
        assert_eq!((e.cause(), e.injected()), (None, None));
        assert!(std::error::Error::source(&e).is_none());
        assert_eq!(Error::from(String::from("s")).message(), "s");
        assert_eq!(Error::from(Value::Null).message(), "null");
        assert_eq!(Error::from(Value::Integer(3)).message(), "3");
        assert_eq!(Error::from(Value::Real(0.5)).message(), "0.5");
        assert_eq!(Error::from(Value::from("t")).message(), "t");
        assert_eq!(Error::from(Value::Blob(vec![1])).message(), "[1]");
        let e = Error::exec(2, "INSERT INTO t VALUES (1)", "x: SQLITE_ERROR".into());
        assert_eq!(
            e.to_string(),
            "D1_EXEC_ERROR: Error in line 2: INSERT INTO t VALUES (1): x: SQLITE_ERROR"
        );
    }
}
