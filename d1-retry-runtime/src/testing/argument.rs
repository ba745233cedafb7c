//! Typed statement arguments, `worker`'s `D1Type` family, for
//! [`bind_refs`](super::D1PreparedStatement::bind_refs) and
//! [`batch_bind`](super::D1PreparedStatement::batch_bind).
//!
//! Apart from [`Value`] because these borrow: they are how `worker` code binds without
//! building a `JsValue` per argument, and they must name the same types as `worker`'s for
//! the same source to compile against both.

use core::iter::{Once, once};
use core::ops::Deref;

use super::Value;

/// An argument of a statement, as `worker::D1Type`: what
/// [`bind_refs`](super::D1PreparedStatement::bind_refs) takes.
///
/// ```
/// use d1_retry_runtime::testing::{D1Database, D1Type};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), d1_retry_runtime::testing::Error> {
/// let db = D1Database::open_in_memory()?;
/// let email = String::from("ada@x");
/// let n: Option<i64> = db
///     .prepare("SELECT ?1 = 'ada@x' AND ?2 = 7 AND ?3 IS NULL AS n")
///     .bind_refs(&[D1Type::Text(&email), D1Type::Integer(7), D1Type::Null])?
///     .first(Some("n"))
///     .await?;
/// assert_eq!(n, Some(1));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub enum D1Type<'a> {
    /// `NULL`.
    Null,
    /// A number, `REAL` here.
    Real(f64),
    /// A number that is an integer; `i32`, as in `worker`, because a JS number holds
    /// integers exactly only up to 2^53.
    Integer(i32),
    /// Text.
    Text(&'a str),
    /// A boolean, stored as 1 or 0.
    Boolean(bool),
    /// Bytes.
    Blob(&'a [u8]),
}

impl From<&D1Type<'_>> for Value {
    fn from(value: &D1Type<'_>) -> Self {
        match *value {
            D1Type::Null => Value::Null,
            D1Type::Real(x) => Value::Real(x),
            D1Type::Integer(n) => Value::Integer(i64::from(n)),
            D1Type::Text(text) => Value::from(text),
            D1Type::Boolean(b) => Value::from(b),
            D1Type::Blob(bytes) => Value::from(bytes),
        }
    }
}

/// A [`D1Type`] converted once, for reuse across statements, as
/// `worker::D1PreparedArgument`. It derefs to its `D1Type`.
#[derive(Debug)]
pub struct D1PreparedArgument<'a> {
    value: &'a D1Type<'a>,
    js_value: Value,
}

impl<'a> D1PreparedArgument<'a> {
    /// `value`, converted now.
    #[must_use]
    pub fn new(value: &'a D1Type<'_>) -> D1PreparedArgument<'a> {
        D1PreparedArgument {
            value,
            js_value: Value::from(value),
        }
    }
}

impl<'a> Deref for D1PreparedArgument<'a> {
    type Target = D1Type<'a>;

    fn deref(&self) -> &Self::Target {
        self.value
    }
}

/// Lets one `&D1Type` be passed to `bind_refs` without an array around it.
impl<'a> IntoIterator for &'a D1Type<'a> {
    type Item = &'a D1Type<'a>;
    type IntoIter = Once<&'a D1Type<'a>>;

    fn into_iter(self) -> Self::IntoIter {
        once(self)
    }
}

/// Lets one `&D1PreparedArgument` be passed to `bind_refs` without an array around it.
impl<'a> IntoIterator for &'a D1PreparedArgument<'a> {
    type Item = &'a D1PreparedArgument<'a>;
    type IntoIter = Once<&'a D1PreparedArgument<'a>>;

    fn into_iter(self) -> Self::IntoIter {
        once(self)
    }
}

/// Something [`bind_refs`](super::D1PreparedStatement::bind_refs) can bind, as
/// `worker::D1Argument`.
pub trait D1Argument {
    /// The value bound.
    fn js_value(&self) -> impl AsRef<Value>;
}

impl D1Argument for D1Type<'_> {
    fn js_value(&self) -> impl AsRef<Value> {
        Value::from(self)
    }
}

impl D1Argument for D1PreparedArgument<'_> {
    fn js_value(&self) -> impl AsRef<Value> {
        &self.js_value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound<'a, U: D1Argument + 'a>(values: impl IntoIterator<Item = &'a U>) -> Vec<Value> {
        values
            .into_iter()
            .map(|v| v.js_value().as_ref().clone())
            .collect()
    }

    #[test]
    fn every_type_converts_as_worker_binds_it() {
        let types = [
            D1Type::Null,
            D1Type::Real(1.5),
            D1Type::Integer(-3),
            D1Type::Text("t"),
            D1Type::Boolean(true),
            D1Type::Blob(&[1, 2]),
        ];
        assert_eq!(
            bound(&types),
            [
                Value::Null,
                Value::Real(1.5),
                Value::Integer(-3),
                Value::Text("t".into()),
                Value::Integer(1),
                Value::Blob(vec![1, 2]),
            ]
        );
    }

    #[test]
    fn prepared_arguments_convert_once_and_deref_to_their_type() {
        let text = D1Type::Text("x");
        let prepared = D1PreparedArgument::new(&text);
        assert!(matches!(*prepared, D1Type::Text("x")));
        assert_eq!(bound(&prepared), [Value::from("x")]);
        assert_eq!(bound(&D1Type::Boolean(false)), [Value::Integer(0)]);
        assert!(
            format!("{prepared:?}").contains("Text(\"x\")"),
            "{prepared:?}"
        );
    }
}
