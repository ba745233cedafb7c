//! What successful calls return, shaped like `worker`'s `D1Result` and `D1ExecResult`.

use serde::de::DeserializeOwned;

use super::Error;
use super::value::{Value, from_row};

/// The rows and metadata of a statement, like `worker::D1Result`.
#[derive(Clone, Debug)]
pub struct D1Result {
    columns: Vec<String>,
    rows: Vec<Vec<Value>>,
    meta: D1ResultMeta,
}

/// The metadata of a statement, with `worker::D1ResultMeta`'s fields. The local D1 fills
/// `changed_db`, `changes`, `last_row_id`, `rows_read` (rows returned) and `rows_written`
/// (rows changed); `duration` is always 0 and `size_after` is not known.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct D1ResultMeta {
    /// Whether the statement changed the database.
    pub changed_db: Option<bool>,
    /// Rows inserted, updated or deleted.
    pub changes: Option<usize>,
    /// Milliseconds spent (always 0 here: the kit reads no clock).
    pub duration: Option<f64>,
    /// The rowid of the last inserted row on the connection.
    pub last_row_id: Option<i64>,
    /// Rows returned.
    pub rows_read: Option<usize>,
    /// Rows changed.
    pub rows_written: Option<usize>,
    /// Database size after the statement (unknown here).
    pub size_after: Option<usize>,
}

impl D1Result {
    pub(crate) fn new(
        columns: Vec<String>,
        rows: Vec<Vec<Value>>,
        changes: usize,
        last_row_id: i64,
    ) -> Self {
        let meta = D1ResultMeta {
            changed_db: Some(changes > 0),
            changes: Some(changes),
            duration: Some(0.0),
            last_row_id: Some(last_row_id),
            rows_read: Some(rows.len()),
            rows_written: Some(changes),
            size_after: None,
        };
        D1Result {
            columns,
            rows,
            meta,
        }
    }

    /// Always `true`: a call that failed returned an [`Error`] instead, as in D1.
    #[must_use]
    pub fn success(&self) -> bool {
        true
    }

    /// Always `None`, see [`success`](Self::success).
    #[must_use]
    pub fn error(&self) -> Option<String> {
        None
    }

    /// The rows, each read as `T` from a map of column name to value (a JS row object).
    ///
    /// # Errors
    ///
    /// A row that does not fit `T` (a missing field, a wrong type).
    pub fn results<T: DeserializeOwned>(&self) -> Result<Vec<T>, Error> {
        self.rows
            .iter()
            .map(|row| from_row(&self.columns, row).map_err(|e| Error::deserialize(&e)))
            .collect()
    }

    /// The metadata.
    ///
    /// # Errors
    ///
    /// Never here; the `Result` mirrors `worker`'s signature.
    pub fn meta(&self) -> Result<Option<D1ResultMeta>, Error> {
        Ok(Some(self.meta.clone()))
    }

    /// The column names, in order.
    #[must_use]
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The rows as values, in column order.
    #[must_use]
    pub fn rows(&self) -> &[Vec<Value>] {
        &self.rows
    }
}

/// What [`D1Database::exec`](super::D1Database::exec) returns, like `worker`'s `D1ExecResult`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct D1ExecResult {
    count: u32,
}

impl D1ExecResult {
    pub(crate) fn new(count: u32) -> Self {
        D1ExecResult { count }
    }

    /// The number of queries executed (non-empty lines).
    ///
    /// # Errors
    ///
    /// Never here; the `Result` (with a `JsValue` error) mirrors `worker`'s getter, so
    /// `.count().map_err(Error::from)` compiles against both.
    pub fn count(&self) -> Result<Option<u32>, Value> {
        Ok(Some(self.count))
    }

    /// Milliseconds spent (always 0 here: the kit reads no clock).
    ///
    /// # Errors
    ///
    /// Never here, as [`count`](Self::count).
    pub fn duration(&self) -> Result<Option<f64>, Value> {
        Ok(Some(0.0))
    }
}
