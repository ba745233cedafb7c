//! Reads inside an attempt that is run again as a whole (a `Retry`, a `read_only` body) leave
//! their failures to it only when it would run again after them. When it would not, they
//! retry on their own, as they do outside any attempt:
//!
//! - beside a write still in flight in the attempt, or one it dropped in flight
//!   (`join!`, `select!`): that write stops the attempt from running again;
//! - after a failure that may have run the read, in a `Retry` that may write, which runs
//!   again only after failures that did not reach D1.
//!
//! Before the fix each of these reads was retried by nobody: the caller got the first
//! failure. Each case also checks that the write ran once.

use core::time::Duration;

use d1_retry::testing::{D1Database, Error, Fault, Message, Timing};
use d1_retry::{Retry, d1_retry};
use test_support::{calls_with, fail_once, lose_once_after_running};

use crate::harness::{Count, NO_BUDGET, READ_N, count_orders, database, n, rows};

const INSERT: &str = "INSERT INTO orders (item) VALUES ('x')";

#[d1_retry(policy = NO_BUDGET)]
async fn insert(db: &D1Database) -> Result<(), Error> {
    db.prepare(INSERT).run().await?;
    Ok(())
}

/// The insert commits, then its answer takes 5 s: a `select!` with a 1 s branch drops it
/// in flight.
fn insert_commits_then_hangs(db: &D1Database) {
    db.add_fault(
        Fault::stall(Duration::from_secs(5))
            .after_execution()
            .when_sql_contains("INSERT")
            .times(1),
    );
}

/// The insert waits 2 s before it runs: it is in flight while a read beside it fails.
fn insert_waits(db: &D1Database) {
    db.add_fault(
        Fault::stall(Duration::from_secs(2))
            .when_sql_contains("INSERT")
            .times(1),
    );
}

fn read_fails_once_before_running(db: &D1Database) {
    fail_once(db, READ_N, Message::CannotResolve, Timing::BeforeExecution);
}

/// The attempt: the insert and the read, joined or one after the other with the insert
/// given up after 1 s.
async fn insert_and_count(db: &D1Database, joined: bool) -> Result<i64, Error> {
    if joined {
        let (inserted, counted) = tokio::join!(insert(db), count_orders(db));
        inserted?;
        return counted;
    }
    tokio::select! {
        inserted = insert(db) => inserted?,
        () = tokio::time::sleep(Duration::from_secs(1)) => {}
    }
    count_orders(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn insert_and_count_read_only(db: &D1Database) -> Result<i64, Error> {
    insert_and_count(db, true).await
}

#[tokio::test(start_paused = true)]
async fn a_read_beside_a_write_in_flight_retries_on_its_own() {
    for (joined, read_only) in [(false, false), (false, true), (true, false), (true, true)] {
        let case = format!("joined {joined}, Retry declared read-only {read_only}");
        let db = database();
        if joined {
            insert_waits(&db);
        } else {
            insert_commits_then_hangs(&db);
        }
        read_fails_once_before_running(&db);
        let result = Retry::new("outer")
            .read_only(read_only)
            .policy(NO_BUDGET)
            .run(|| insert_and_count(&db, joined))
            .await;
        assert_eq!(rows(&db, "orders"), 1, "{case}");
        // Joined, the read's retry ends before the insert, which waits 2 s, runs.
        assert_eq!(result.ok(), Some(if joined { 0 } else { 1 }), "{case}");
        assert_eq!(calls_with(&db, READ_N), 2, "{case}: the read, once again");
    }
}

#[tokio::test(start_paused = true)]
async fn a_read_beside_a_write_in_flight_in_a_read_only_body_retries_on_its_own() {
    let db = database();
    insert_waits(&db);
    read_fails_once_before_running(&db);
    let result = insert_and_count_read_only(&db).await;
    assert_eq!(rows(&db, "orders"), 1);
    assert_eq!(
        result.ok(),
        Some(0),
        "the read's retry ends before the insert runs"
    );
    assert_eq!(calls_with(&db, READ_N), 2);
    assert_eq!(calls_with(&db, INSERT), 1);
}

#[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 1000)]
async fn count_orders_within_a_second(db: &D1Database) -> Result<i64, Error> {
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}

/// A `Retry` that may write starts with a read that fails after it ran, or is cut by its
/// own time limit: the read is retried on its own, then the write is made once.
#[tokio::test(start_paused = true)]
async fn a_read_that_may_have_run_in_a_retry_that_may_write_retries_on_its_own() {
    for cut in [false, true] {
        let db = database();
        if cut {
            db.add_fault(
                Fault::stall(Duration::from_secs(5))
                    .when_sql_contains(READ_N)
                    .times(1),
            );
        } else {
            lose_once_after_running(&db, READ_N);
        }
        let result = Retry::new("place_if_empty")
            .policy(NO_BUDGET)
            .run(|| async {
                let before = if cut {
                    count_orders_within_a_second(&db).await?
                } else {
                    count_orders(&db).await?
                };
                if before == 0 {
                    insert(&db).await?;
                }
                Ok::<_, Error>(before)
            })
            .await;
        assert_eq!(result.ok(), Some(0), "cut by its time limit: {cut}");
        assert_eq!(calls_with(&db, READ_N), 2, "cut: {cut}");
        assert_eq!(rows(&db, "orders"), 1, "cut: {cut}");
    }
}

/// The same read after the attempt's write failed after it ran, in a `Retry` that may
/// write: the write is not made again, whoever decides.
#[tokio::test(start_paused = true)]
async fn a_write_that_may_have_run_in_a_retry_that_may_write_is_not_made_again() {
    let db = database();
    lose_once_after_running(&db, "INSERT");
    let result = Retry::new("place")
        .policy(NO_BUDGET)
        .run(|| async {
            insert(&db).await?;
            count_orders(&db).await
        })
        .await;
    assert!(result.is_err(), "{result:?}");
    assert_eq!(calls_with(&db, INSERT), 1);
    assert_eq!(rows(&db, "orders"), 1);
}
