//! A prepared statement of the local D1, shaped like `worker::D1PreparedStatement`.

use core::fmt;
use core::future::{Future, IntoFuture};
use core::pin::Pin;

use serde::de::DeserializeOwned;

use super::execute::Output;
use super::session::SessionLink;
use super::value::{from_row, from_value};
use super::{D1Argument, D1Database, D1Result, Error, Operation, Value};

/// A statement with its parameters, run by awaiting one of its methods (or itself), as
/// `worker::D1PreparedStatement`. Cloning it is cheap enough for tests; running it twice
/// runs the SQL twice.
#[derive(Clone)]
#[must_use = "a statement does nothing until `first`, `all`, `run` or `raw` is awaited"]
pub struct D1PreparedStatement {
    db: D1Database,
    sql: String,
    params: Vec<Value>,
    /// The session it was prepared in, whose bookmark its calls move.
    session: Option<SessionLink>,
}

impl D1PreparedStatement {
    pub(crate) fn new(db: D1Database, sql: String, session: Option<SessionLink>) -> Self {
        D1PreparedStatement {
            db,
            sql,
            params: Vec::new(),
            session,
        }
    }

    /// The statement with `values` bound to its parameters (`?1`, `?2`, ... or `?`), in
    /// order, replacing any bound before. Written like `worker`'s:
    /// `.bind(&[id.into(), name.into()])?`.
    ///
    /// # Errors
    ///
    /// Never at bind time; as in D1, a parameter count that does not match the SQL fails
    /// when the statement runs (`Wrong number of parameter bindings for SQL query.`).
    pub fn bind(mut self, values: &[Value]) -> Result<Self, Error> {
        self.params = values.to_vec();
        Ok(self)
    }

    /// A copy of the statement with `values` bound, leaving this one for reuse, as
    /// `worker`'s `bind_refs`: `.bind_refs(&[D1Type::Integer(7), D1Type::Text(name)])?`,
    /// or one `&D1Type` alone.
    ///
    /// # Errors
    ///
    /// As [`bind`](Self::bind): never at bind time.
    pub fn bind_refs<'a, T, U>(&self, values: T) -> Result<Self, Error>
    where
        T: IntoIterator<Item = &'a U>,
        U: D1Argument + 'a,
    {
        let params = values
            .into_iter()
            .map(|value| value.js_value().as_ref().clone())
            .collect();
        Ok(D1PreparedStatement {
            params,
            ..self.clone()
        })
    }

    /// One copy of the statement per set of values, for a [`batch`](D1Database::batch),
    /// as `worker`'s `batch_bind`.
    ///
    /// # Errors
    ///
    /// As [`bind`](Self::bind): never at bind time.
    pub fn batch_bind<'a, U, T, V>(&self, values: T) -> Result<Vec<Self>, Error>
    where
        U: IntoIterator<Item = &'a V> + 'a,
        T: IntoIterator<Item = U> + 'a,
        V: D1Argument + 'a,
    {
        values
            .into_iter()
            .map(|batch| self.bind_refs(batch))
            .collect()
    }

    /// The SQL text.
    #[must_use]
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// The bound parameters.
    #[must_use]
    pub fn params(&self) -> &[Value] {
        &self.params
    }

    async fn call(&self, operation: Operation) -> Result<Output, Error> {
        self.db
            .call_one(operation, &self.sql, &self.params, self.session.as_ref())
            .await
    }

    /// The first row as `T` (or, with `Some(column)`, that column's value as `T`), or
    /// `None` when there is no row (or the value is `NULL`).
    ///
    /// # Errors
    ///
    /// D1's errors and injected faults; `D1_COLUMN_NOTFOUND` when `column` is not in the
    /// row; a serde error when the row does not fit `T`.
    pub async fn first<T: DeserializeOwned>(
        &self,
        column: Option<&str>,
    ) -> Result<Option<T>, Error> {
        let output = self.call(Operation::First).await?;
        let Some(row) = output.rows.first() else {
            return Ok(None);
        };
        let read = match column {
            None => from_row::<T>(&output.columns, row).map(Some),
            Some(name) => {
                // As in a JS row object, a repeated name holds the last column's value.
                let value = output
                    .columns
                    .iter()
                    .zip(row)
                    .rev()
                    .find(|(column, _)| *column == name)
                    .map(|(_, value)| value)
                    .ok_or_else(|| Error::column_not_found(name))?;
                from_value::<Option<T>>(value)
            }
        };
        read.map_err(|e| Error::deserialize(&e))
    }

    /// Runs the statement and returns its rows and metadata.
    ///
    /// # Errors
    ///
    /// D1's errors and injected faults.
    pub async fn all(&self) -> Result<D1Result, Error> {
        self.call(Operation::All).await.map(Output::into_result)
    }

    /// Runs the statement and returns its metadata (and rows, as D1 does today).
    ///
    /// # Errors
    ///
    /// D1's errors and injected faults.
    pub async fn run(&self) -> Result<D1Result, Error> {
        self.call(Operation::Run).await.map(Output::into_result)
    }

    /// Runs the statement and returns its rows as arrays of values, without column names.
    ///
    /// # Errors
    ///
    /// D1's errors and injected faults; a serde error when a value does not fit `T`.
    pub async fn raw<T: DeserializeOwned>(&self) -> Result<Vec<Vec<T>>, Error> {
        let output = self.call(Operation::Raw).await?;
        output
            .rows
            .iter()
            .map(|row| {
                row.iter()
                    .map(|value| from_value::<T>(value).map_err(|e| Error::deserialize(&e)))
                    .collect()
            })
            .collect()
    }

    /// Runs the statement and returns its rows as they come, as `worker`'s
    /// `raw_js_value`: the same D1 call as [`raw`](Self::raw) ([`Operation::Raw`]).
    ///
    /// One shape differs: on a Worker each row is one `JsValue` holding a JS array; a
    /// [`JsValue`](super::JsValue) here holds one SQLite value, so each row is a `Vec` of
    /// them. Code that only counts the rows reads the same on both.
    ///
    /// # Errors
    ///
    /// D1's errors and injected faults.
    pub async fn raw_js_value(&self) -> Result<Vec<Vec<Value>>, Error> {
        Ok(self.call(Operation::Raw).await?.rows)
    }
}

impl fmt::Debug for D1PreparedStatement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("D1PreparedStatement")
            .field("sql", &self.sql)
            .field("params", &self.params)
            .field("in_session", &self.session.is_some())
            .finish_non_exhaustive()
    }
}

/// Awaiting a statement runs it with [`run`](D1PreparedStatement::run), as in `worker`.
impl IntoFuture for D1PreparedStatement {
    type Output = Result<D1Result, Error>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.run().await })
    }
}
