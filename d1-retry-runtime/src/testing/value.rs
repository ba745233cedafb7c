//! The values D1 stores, bound to statements and read back through serde.
//!
//! One type plays two parts, as `JsValue` does in `worker`: what user code binds, and what
//! a row holds. Reading follows `serde_wasm_bindgen`, because that is what stands between
//! D1's JS values and a repository's structs on a Worker.

use core::fmt;

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, IntoDeserializer, Visitor};

/// A value bound to a statement or read from a row: the five storage classes of SQLite.
///
/// It stands where `wasm_bindgen::JsValue` stands in `worker`'s `bind(&[id.into()])`, so
/// the same `.into()` calls and constructors compile against both; [`JsValue`] is its
/// other name, for the `use` that swaps the two. Booleans are stored as 1 and 0, as D1 does.
///
/// ```
/// use d1_retry_runtime::testing::{JsValue, Value};
/// assert_eq!(Value::from(7), Value::Integer(7));
/// assert_eq!(Value::from(true), Value::Integer(1));
/// assert_eq!(Value::from("ada"), Value::Text("ada".into()));
/// assert_eq!(Value::from(None::<i64>), Value::Null);
/// // The constructors of `JsValue`, as user code calls them:
/// assert_eq!(JsValue::from_f64(2.5), Value::Real(2.5));
/// assert_eq!(JsValue::from_str("ada"), Value::Text("ada".into()));
/// assert_eq!(JsValue::from_bool(false), Value::Integer(0));
/// assert_eq!(JsValue::NULL, JsValue::null());
/// ```
///
/// One conversion is kinder than on a Worker: `i64` (and `u32`, `usize`...) become
/// `INTEGER` here, while `wasm_bindgen` turns an `i64` into a JS `BigInt`, which D1
/// refuses. Bind `JsValue::from_f64(n as f64)` (or an `i32`) in code that runs on both.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL `NULL` (JS `null`).
    Null,
    /// A 64-bit signed integer.
    Integer(i64),
    /// A 64-bit float.
    Real(f64),
    /// UTF-8 text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

/// The name `worker` code uses for [`Value`]: `#[cfg(not(target_arch = "wasm32"))] use
/// d1_retry::testing::JsValue;` stands in for `use worker::wasm_bindgen::JsValue;`.
pub type JsValue = Value;

/// The largest integer a JS number holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

impl Value {
    /// `NULL`, as `JsValue::NULL`.
    pub const NULL: Value = Value::Null;
    /// `true`, stored as 1 (as D1 stores a JS `true`).
    pub const TRUE: Value = Value::Integer(1);
    /// `false`, stored as 0.
    pub const FALSE: Value = Value::Integer(0);

    /// `NULL`, as `JsValue::null()`.
    #[must_use]
    pub const fn null() -> Value {
        Value::Null
    }

    /// A JS number, as `JsValue::from_f64`: always `REAL` here. SQLite stores a whole
    /// number in an `INTEGER` column as an integer, and compares `5.0 = 5` as true, so a
    /// `WHERE id = ?1` finds the row either way.
    #[must_use]
    pub const fn from_f64(x: f64) -> Value {
        Value::Real(x)
    }

    /// A JS string, as `JsValue::from_str`.
    // The name is `wasm_bindgen::JsValue`'s, which the kit mirrors; it is not `FromStr`.
    #[allow(clippy::should_implement_trait)]
    #[must_use]
    pub fn from_str(text: &str) -> Value {
        Value::Text(text.to_owned())
    }

    /// A JS boolean, as `JsValue::from_bool`: 1 or 0, as D1 stores it.
    #[must_use]
    pub const fn from_bool(b: bool) -> Value {
        if b { Value::TRUE } else { Value::FALSE }
    }

    /// Whether this is `NULL`, as `JsValue::is_null`.
    #[must_use]
    pub const fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The number, if this is one, as `JsValue::as_f64` (an integer is a JS number too).
    #[must_use]
    #[allow(clippy::cast_precision_loss)] // a JS number is an f64: D1 loses the same bits
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Integer(n) => Some(*n as f64),
            Value::Real(x) => Some(*x),
            _ => None,
        }
    }

    /// The text, if this is text, as `JsValue::as_string`.
    #[must_use]
    pub fn as_string(&self) -> Option<String> {
        self.as_text().map(str::to_owned)
    }

    /// The integer, if this is one.
    #[must_use]
    pub fn as_integer(&self) -> Option<i64> {
        match self {
            Value::Integer(n) => Some(*n),
            _ => None,
        }
    }

    /// The text, if this is text.
    #[must_use]
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(text) => Some(text),
            _ => None,
        }
    }
}

/// What a [`D1Argument`](super::D1Argument) hands over, as `JsValue: AsRef<JsValue>`.
impl AsRef<Value> for Value {
    fn as_ref(&self) -> &Value {
        self
    }
}

macro_rules! integer_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Self {
                Value::Integer(i64::from(n))
            }
        }
    )*};
}

integer_from!(i8, i16, i32, i64, u8, u16, u32);

macro_rules! wide_integer_from {
    ($($t:ty),*) => {$(
        /// A JS number, as in `wasm_bindgen`; `REAL` beyond `i64`'s range.
        impl From<$t> for Value {
            #[allow(clippy::cast_precision_loss)] // a JS number is an f64 anyway
            fn from(n: $t) -> Self {
                i64::try_from(n).map_or(Value::Real(n as f64), Value::Integer)
            }
        }
    )*};
}

wide_integer_from!(isize, usize);

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Integer(i64::from(b))
    }
}

impl From<f64> for Value {
    fn from(x: f64) -> Self {
        Value::Real(x)
    }
}

impl From<f32> for Value {
    fn from(x: f32) -> Self {
        Value::Real(f64::from(x))
    }
}

impl From<&str> for Value {
    fn from(text: &str) -> Self {
        Value::Text(text.to_owned())
    }
}

impl From<String> for Value {
    fn from(text: String) -> Self {
        Value::Text(text)
    }
}

impl From<&String> for Value {
    fn from(text: &String) -> Self {
        Value::Text(text.clone())
    }
}

impl From<Vec<u8>> for Value {
    fn from(bytes: Vec<u8>) -> Self {
        Value::Blob(bytes)
    }
}

impl From<&[u8]> for Value {
    fn from(bytes: &[u8]) -> Self {
        Value::Blob(bytes.to_vec())
    }
}

impl From<()> for Value {
    fn from((): ()) -> Self {
        Value::Null
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(value: Option<T>) -> Self {
        value.map_or(Value::Null, Into::into)
    }
}

impl From<rusqlite::types::ValueRef<'_>> for Value {
    fn from(value: rusqlite::types::ValueRef<'_>) -> Self {
        use rusqlite::types::ValueRef;
        match value {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(n) => Value::Integer(n),
            ValueRef::Real(x) => Value::Real(x),
            ValueRef::Text(bytes) => Value::Text(String::from_utf8_lossy(bytes).into_owned()),
            ValueRef::Blob(bytes) => Value::Blob(bytes.to_vec()),
        }
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Integer(n) => ValueRef::Integer(*n),
            Value::Real(x) => ValueRef::Real(*x),
            Value::Text(text) => ValueRef::Text(text.as_bytes()),
            Value::Blob(bytes) => ValueRef::Blob(bytes),
        }))
    }
}

/// The serde error of a row that does not fit the type asked for.
pub(crate) type DeError = de::value::Error;

/// `x` as an integer, when a JS number holding it is a safe integer
/// (`Number.isSafeInteger`).
#[allow(clippy::cast_possible_truncation)] // checked: whole, and within ±(2^53 - 1)
fn safe_integer(x: f64) -> Option<i64> {
    #[allow(clippy::cast_precision_loss)] // 2^53 - 1 is exact in an f64
    let max = MAX_SAFE_INTEGER as f64;
    (x.fract() == 0.0 && x.abs() <= max).then_some(x as i64)
}

/// Reads one value the way `serde_wasm_bindgen` reads the JS value D1 returns: by its
/// own type (no integer-to-bool or text-to-number coercion), a number as an integer when
/// it is a safe integer (so `5.0` reads as `i64`, and an integer beyond 2^53 does not),
/// `NULL` as `None` or `()`, a blob as a sequence of bytes.
pub(crate) struct ValueDeserializer<'a>(pub(crate) &'a Value);

impl<'de> Deserializer<'de> for ValueDeserializer<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        // A JS number is an f64, and serde_wasm_bindgen reads it as an integer exactly
        // when it is a safe integer: so does the kit, whatever SQLite's storage class was.
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Integer(n) if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(n) => {
                visitor.visit_i64(*n)
            }
            #[allow(clippy::cast_precision_loss)] // D1 loses these bits too
            Value::Integer(n) => visitor.visit_f64(*n as f64),
            Value::Real(x) => match safe_integer(*x) {
                Some(n) => visitor.visit_i64(n),
                None => visitor.visit_f64(*x),
            },
            Value::Text(text) => visitor.visit_str(text),
            Value::Blob(bytes) => visitor.visit_seq(SeqDeserializer::new(bytes.iter().copied())),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'a> IntoDeserializer<'_, DeError> for ValueDeserializer<'a> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// A value read as `T`.
pub(crate) fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, DeError> {
    T::deserialize(ValueDeserializer(value))
}

/// A row read as `T`, the way a JS row object is: a map from column name to value. When
/// two columns share a name, the last one wins, as in the JS object.
pub(crate) fn from_row<T: DeserializeOwned>(
    columns: &[String],
    row: &[Value],
) -> Result<T, DeError> {
    let entries = columns
        .iter()
        .zip(row)
        .enumerate()
        .filter(|(i, (name, _))| {
            !columns
                .get(i + 1..)
                .is_some_and(|later| later.contains(name))
        })
        .map(|(_, (name, value))| (name.as_str(), ValueDeserializer(value)));
    T::deserialize(MapDeserializer::new(entries))
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValueVisitor;

        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = Value;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a D1 value")
            }

            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }

            fn visit_none<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
                Value::deserialize(d)
            }

            fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
                Ok(Value::from(b))
            }

            fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
                Ok(Value::Integer(n))
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
                i64::try_from(n)
                    .map(Value::Integer)
                    .map_err(|_| E::custom("integer out of range for SQLite"))
            }

            fn visit_f64<E>(self, x: f64) -> Result<Value, E> {
                Ok(Value::Real(x))
            }

            fn visit_str<E>(self, text: &str) -> Result<Value, E> {
                Ok(Value::Text(text.to_owned()))
            }

            fn visit_bytes<E>(self, bytes: &[u8]) -> Result<Value, E> {
                Ok(Value::Blob(bytes.to_vec()))
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
                let mut bytes = Vec::new();
                while let Some(byte) = seq.next_element::<u8>()? {
                    bytes.push(byte);
                }
                Ok(Value::Blob(bytes))
            }
        }

        deserializer.deserialize_any(ValueVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct User {
        id: i64,
        name: String,
        nick: Option<String>,
        score: f64,
        avatar: Vec<u8>,
    }

    fn cols(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn rows_read_as_structs_by_column_name() {
        let columns = cols(&["name", "id", "nick", "score", "avatar"]);
        let row = [
            Value::from("ada"),
            Value::from(1),
            Value::Null,
            Value::Integer(3),
            Value::Blob(vec![1, 2]),
        ];
        let user: User = from_row(&columns, &row).unwrap();
        assert_eq!(
            user,
            User {
                id: 1,
                name: "ada".into(),
                nick: None,
                score: 3.0,
                avatar: vec![1, 2]
            }
        );
    }

    #[test]
    fn types_are_not_coerced() {
        // D1 returns 1 for a boolean column; serde_wasm_bindgen refuses it as a bool.
        assert!(from_value::<bool>(&Value::Integer(1)).is_err());
        assert!(from_value::<i64>(&Value::Text("1".into())).is_err());
        assert!(from_value::<String>(&Value::Null).is_err());
        assert_eq!(from_value::<Option<String>>(&Value::Null).unwrap(), None);
        assert_eq!(from_value::<i64>(&Value::Integer(-4)).unwrap(), -4);
    }

    #[test]
    fn a_missing_field_is_an_error() {
        let err = from_row::<User>(&cols(&["id"]), &[Value::from(1)]).unwrap_err();
        assert!(err.to_string().contains("missing field"), "{err}");
    }

    #[test]
    fn duplicate_column_names_keep_the_last_value() {
        let row: BTreeMap<String, Value> = from_row(
            &cols(&["id", "id", "x"]),
            &[Value::from(1), Value::from(2), Value::Null],
        )
        .unwrap();
        assert_eq!(row.len(), 2);
        assert_eq!(row["id"], Value::Integer(2));
        assert_eq!(row["x"], Value::Null);
    }

    #[test]
    fn values_round_trip_through_serde() {
        for value in [
            Value::Null,
            Value::Integer(-MAX_SAFE_INTEGER),
            Value::Real(1.5),
            Value::Text("é".into()),
            Value::Blob(vec![0, 255]),
        ] {
            assert_eq!(from_value::<Value>(&value).unwrap(), value);
        }
    }

    #[test]
    fn numbers_read_as_js_numbers() {
        // A whole REAL reads as an integer, as the JS number 5 does.
        assert_eq!(from_value::<i64>(&Value::Real(5.0)).unwrap(), 5);
        assert_eq!(from_value::<u8>(&Value::Real(-0.0)).unwrap(), 0);
        assert_eq!(
            from_value::<Value>(&Value::Real(5.0)).unwrap(),
            Value::Integer(5)
        );
        assert!(from_value::<i64>(&Value::Real(5.5)).is_err());
        assert!(from_value::<i64>(&Value::Real(f64::NAN)).is_err());
        assert!(from_value::<i64>(&Value::Real(f64::INFINITY)).is_err());
        // Beyond 2^53 a JS number is no longer an exact integer: D1 hands back a float.
        let big = Value::Integer(MAX_SAFE_INTEGER + 1);
        assert!(from_value::<i64>(&big).is_err());
        assert_eq!(from_value::<f64>(&big).unwrap(), 9_007_199_254_740_992.0);
        assert_eq!(
            from_value::<i64>(&Value::Integer(MAX_SAFE_INTEGER)).unwrap(),
            MAX_SAFE_INTEGER
        );
        assert!(from_value::<i64>(&Value::Real(9_007_199_254_740_992.0)).is_err());
    }

    #[test]
    fn js_value_constructors() {
        assert_eq!(JsValue::NULL, Value::Null);
        assert_eq!(JsValue::null(), Value::Null);
        assert_eq!(JsValue::TRUE, JsValue::from(true));
        assert_eq!(JsValue::FALSE, JsValue::from_bool(false));
        assert_eq!(JsValue::from_bool(true), Value::Integer(1));
        assert_eq!(JsValue::from_f64(3.0), Value::Real(3.0));
        assert_eq!(JsValue::from_str("x"), JsValue::from("x"));
        assert!(JsValue::NULL.is_null());
        assert!(!JsValue::from(0).is_null());
        assert_eq!(JsValue::from(4u32).as_f64(), Some(4.0));
        assert_eq!(JsValue::from(0.5).as_f64(), Some(0.5));
        assert_eq!(JsValue::from("t").as_f64(), None);
        assert_eq!(JsValue::from("t").as_string().as_deref(), Some("t"));
        assert_eq!(JsValue::NULL.as_string(), None);
        assert_eq!(JsValue::from(7usize), Value::Integer(7));
        assert_eq!(JsValue::from(-7isize), Value::Integer(-7));
        assert_eq!(JsValue::from(usize::MAX), Value::Real(usize::MAX as f64));
        let value = JsValue::from(String::from("owned"));
        assert_eq!(AsRef::<Value>::as_ref(&value), &value);
    }

    #[test]
    fn conversions() {
        assert_eq!(Value::from(false), Value::Integer(0));
        assert_eq!(Value::from(2.5f32), Value::Real(2.5));
        assert_eq!(Value::from(&b"ab"[..]), Value::Blob(b"ab".to_vec()));
        assert_eq!(Value::from(Some("x")), Value::Text("x".into()));
        assert_eq!(Value::from(()), Value::Null);
        assert_eq!(Value::Integer(3).as_integer(), Some(3));
        assert_eq!(Value::Null.as_integer(), None);
        assert_eq!(Value::from("t").as_text(), Some("t"));
        assert_eq!(Value::Real(1.0).as_text(), None);
    }
}
