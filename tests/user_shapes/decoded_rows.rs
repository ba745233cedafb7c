//! A row's own text in a call's error. `first` and `raw` decode the rows D1 returned into
//! the caller's type in the same call, and a type that rejects a value may echo it in its
//! error (a `TryFrom<String>` whose error is the text, or `format!("invalid sku: {s}")`).
//! `worker` hands that message on as the call's error, as a JavaScript error, so a value a
//! client chose ("D1 DB is overloaded. Too many requests queued.") reads like D1's own
//! "not executed" message, after the statement ran. A write through `first` or `raw` is
//! therefore never retried (`d1.withheld = "decoded_write"`), whatever its error says:
//! before, each of these `INSERT ... RETURNING`s was sent five times, and five rows landed,
//! with no fault injected at all.

use d1_retry::testing::{D1Database, Error, Fault, Message};
use d1_retry::{Retry, d1_retry};
use test_support::calls_with;

use crate::harness::{Count, NO_BUDGET, READ_N, database, n, rows};

/// An item name checked on the way out, whose error is the rejected text itself.
#[derive(Debug, serde::Deserialize)]
#[serde(try_from = "String")]
struct Sku(#[allow(dead_code)] String);

impl TryFrom<String> for Sku {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        if text.starts_with("SKU-") {
            Ok(Sku(text))
        } else {
            Err(text)
        }
    }
}

/// The same check, its error the text behind a prefix of the user's.
#[derive(Debug, serde::Deserialize)]
#[serde(try_from = "String")]
struct PrefixedSku(#[allow(dead_code)] String);

impl TryFrom<String> for PrefixedSku {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        Err(format!("invalid sku: {text}"))
    }
}

#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
struct Placed {
    id: i64,
    item: Sku,
}

const PLACE: &str = "INSERT INTO orders (item) VALUES (?1) RETURNING id, item";

#[d1_retry(policy = NO_BUDGET)]
async fn place_first(db: &D1Database, item: &str) -> Result<Option<Placed>, Error> {
    db.prepare(PLACE)
        .bind(&[item.into()])?
        .first::<Placed>(None)
        .await
}

#[d1_retry(policy = NO_BUDGET)]
async fn place_raw(db: &D1Database, item: &str) -> Result<usize, Error> {
    let rows = db
        .prepare("INSERT INTO orders (item) VALUES (?1) RETURNING item")
        .bind(&[item.into()])?
        .raw::<PrefixedSku>()
        .await?;
    Ok(rows.len())
}

/// D1's three "not executed" messages, and one behind D1's prefix.
const NOT_EXECUTED: [&str; 4] = [
    "Cannot resolve D1 DB due to transient issue on remote node.",
    "Internal error while starting up D1 DB storage caused object to be reset.",
    "D1 DB is overloaded. Too many requests queued.",
    "D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node.",
];

#[tokio::test(start_paused = true)]
async fn a_write_whose_row_fails_to_decode_in_d1_s_words_is_sent_once() {
    for item in NOT_EXECUTED {
        let db = database();
        let first = place_first(&db, item).await;
        assert!(first.is_err(), "{item}: {first:?}");
        let raw = place_raw(&db, item).await;
        assert!(raw.is_err(), "{item}: {raw:?}");
        // The control: the error is read as D1's own, without the rule above.
        let class = d1_retry::classify(first.as_ref().unwrap_err());
        assert_ne!(class, d1_retry::FailureClass::Permanent, "{item}");
        assert_eq!(calls_with(&db, "RETURNING"), 2, "{item}: sent again");
        assert_eq!(rows(&db, "orders"), 2, "{item}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_around_it_is_not_run_again() {
    let db = database();
    let item = NOT_EXECUTED[2];
    let result = Retry::new("place")
        .policy(NO_BUDGET)
        .run(|| place_first(&db, item))
        .await;
    assert!(result.is_err(), "{result:?}");
    assert_eq!((calls_with(&db, "RETURNING"), rows(&db, "orders")), (1, 1));
}

/// The price: a write through `first` that truly was not executed is not retried either.
/// A read through `first` still is.
#[tokio::test(start_paused = true)]
async fn a_write_through_first_is_not_retried_and_a_read_is() {
    let db = database();
    db.add_fault(
        Fault::new(Message::CannotResolve)
            .when_sql_contains("RETURNING")
            .times(1),
    );
    let placed = place_first(&db, "SKU-1").await;
    assert!(placed.is_err(), "{placed:?}");
    assert_eq!(rows(&db, "orders"), 0);

    db.add_fault(
        Fault::new(Message::CannotResolve)
            .when_sql_contains(READ_N)
            .times(1),
    );
    let read = read_count(&db).await;
    assert_eq!(read.ok(), Some(0));
    assert_eq!(calls_with(&db, READ_N), 2);
}

#[d1_retry(policy = NO_BUDGET)]
async fn read_count(db: &D1Database) -> Result<i64, Error> {
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}
