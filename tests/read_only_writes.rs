//! A `#[d1_retry(read_only)]` function runs its whole body again, as its author vouched;
//! a write the runtime learns of while an attempt runs voids that: the attempt is not run
//! again, as an attempt that ran dynamic SQL that writes is not.
//!
//! The writes here are ones the body does not show: a nested `#[d1_retry]` function's,
//! which the runtime records as it completes or fails. Each function runs on the testing
//! kit's SQLite, with its write failing after it ran, or a later read failing before it
//! ran, on both loops (without and with time limits); the rows show the write ran once.

use d1_retry::testing::{D1Database, Error, Message, Timing};
use d1_retry::{RetryPolicy, d1_retry};
use test_support::{calls_with, count, fail_once, orders_and_audit};

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();
const INSERT: &str = "INSERT INTO orders";
const READ: &str = "SELECT count(*)";

#[derive(serde::Deserialize)]
struct Count {
    n: i64,
}

/// A repository's write, retried call by call.
#[d1_retry(policy = NO_BUDGET)]
async fn place(db: &D1Database, item: &str) -> Result<(), Error> {
    db.prepare("INSERT INTO orders (item) VALUES (?1)")
        .bind(&[item.into()])?
        .run()
        .await?;
    Ok(())
}

/// A repository's read, retried call by call.
#[d1_retry(policy = NO_BUDGET)]
async fn orders(db: &D1Database) -> Result<i64, Error> {
    let row = db
        .prepare("SELECT count(*) AS n FROM orders")
        .first::<Count>(None)
        .await?;
    Ok(row.map_or(0, |row| row.n))
}

/// Declared `read_only`, but touches a row through `place` before it reads.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn touch_then_count(db: &D1Database) -> Result<i64, Error> {
    place(db, "touched").await?;
    orders(db).await
}

/// The same under time limits: the loop that races each attempt.
#[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
async fn touch_then_count_bounded(db: &D1Database) -> Result<i64, Error> {
    place(db, "touched").await?;
    orders(db).await
}

/// Truly read-only, through a nested read: still retried as a whole.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn count_twice(db: &D1Database) -> Result<i64, Error> {
    let first = orders(db).await?;
    Ok(first + orders(db).await?)
}

/// Declared `idempotent`: its author vouched for the write too, so it runs again.
#[d1_retry(idempotent, policy = NO_BUDGET)]
async fn touch_then_count_idempotent(db: &D1Database) -> Result<i64, Error> {
    place(db, "touched").await?;
    orders(db).await
}

fn failing(fragment: &str, message: Message, timing: Timing) -> D1Database {
    let db = orders_and_audit();
    fail_once(&db, fragment, message, timing);
    db
}

#[tokio::test(start_paused = true)]
async fn a_nested_write_stops_a_read_only_body_from_running_again() {
    for bounded in [false, true] {
        let run = |db: D1Database| async move {
            if bounded {
                touch_then_count_bounded(&db).await
            } else {
                touch_then_count(&db).await
            }
        };
        // The write fails after it ran: running the body again would write again.
        let db = failing(
            INSERT,
            Message::NetworkConnectionLost,
            Timing::AfterExecution,
        );
        assert!(run(db.clone()).await.is_err(), "bounded: {bounded}");
        assert_eq!(calls_with(&db, INSERT), 1, "bounded: {bounded}");
        assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);

        // The write completed, then the read failed before it ran: the same.
        let db = failing(READ, Message::CannotResolve, Timing::BeforeExecution);
        assert!(run(db.clone()).await.is_err(), "bounded: {bounded}");
        assert_eq!(calls_with(&db, INSERT), 1, "bounded: {bounded}");
        assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);

        // The write failed before it ran: nothing was written, so the body runs again.
        let db = failing(INSERT, Message::CannotResolve, Timing::BeforeExecution);
        assert_eq!(run(db.clone()).await.unwrap(), 1, "bounded: {bounded}");
        assert_eq!(calls_with(&db, INSERT), 2, "bounded: {bounded}");
    }
}

#[tokio::test(start_paused = true)]
async fn nested_reads_and_vouched_writes_still_run_again() {
    let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
    assert_eq!(count_twice(&db).await.unwrap(), 0);
    assert_eq!(calls_with(&db, READ), 3);

    let db = failing(READ, Message::CannotResolve, Timing::BeforeExecution);
    assert_eq!(touch_then_count_idempotent(&db).await.unwrap(), 2);
    assert_eq!(calls_with(&db, INSERT), 2);
}
