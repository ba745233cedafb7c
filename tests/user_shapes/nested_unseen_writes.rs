//! Writes that work run again as a whole (a `read_only` body, a `Retry`) could not see: a
//! nested `#[d1_retry]` function's write left as written (futures that meet in a `vec!`,
//! are chosen by an `if`, or are returned by a `move` closure: D1's own future, made once,
//! not retried), and a nested
//! `Retry` that may write, still in flight when the attempt around it was cut by its time
//! limit or dropped it (`try_join!`). Each counts as a write made in the attempt around it,
//! which is then not run again. Before, none was counted: the `read_only` page ran the
//! nested inserts again after a later read was lost, and the caller got `Ok` with every
//! row twice.

use core::time::Duration;

use d1_retry::testing::{D1Database, Error, Fault, Message};
use d1_retry::{Retry, RetryPolicy, d1_retry};
use test_support::calls_with;

use crate::harness::{
    Count, NO_BUDGET, READ_N, assert_timed_out, count_fails_once_after_running, count_orders,
    database, n, rows,
};

const BOUNDED: RetryPolicy = NO_BUDGET
    .with_attempt_timeout(Duration::from_secs(2))
    .with_deadline(Duration::from_secs(10));

/// Two inserts whose futures meet in a `vec!`: left as written.
#[d1_retry(policy = NO_BUDGET)]
async fn inserts_joined(db: &D1Database) -> Result<(), Error> {
    let a = db.prepare("INSERT INTO orders (item) VALUES ('unseen-a')");
    let b = db.prepare("INSERT INTO audit (what) VALUES ('unseen-b')");
    let fa = a.run();
    let fb = b.run();
    for ran in test_support::join_all(vec![fa, fb]).await {
        ran?;
    }
    Ok(())
}

/// Two inserts chosen by `if`s: left as written.
#[d1_retry(policy = NO_BUDGET)]
async fn inserts_chosen(db: &D1Database, dry: bool) -> Result<(), Error> {
    let a = db.prepare("INSERT INTO orders (item) VALUES ('unseen-a')");
    let b = db.prepare("INSERT INTO audit (what) VALUES ('unseen-b')");
    let chosen = if dry { a.run() } else { b.run() };
    chosen.await?;
    let chosen = if dry { b.run() } else { a.run() };
    chosen.await?;
    Ok(())
}

/// Two inserts, of a constant's SQL, made in `move` closures that return their futures,
/// which may outlive the call's schedule: left as written.
#[d1_retry(policy = NO_BUDGET)]
async fn inserts_in_closures(db: &D1Database) -> Result<(), Error> {
    const ORDER: &str = "INSERT INTO orders (item) VALUES ('unseen-a')";
    const AUDIT: &str = "INSERT INTO audit (what) VALUES ('unseen-b')";
    let (order, audit) = (&db.prepare(ORDER), &db.prepare(AUDIT));
    let later = move || order.run();
    later().await?;
    let later = move || audit.run();
    later().await?;
    Ok(())
}

#[derive(Clone, Copy, Debug)]
enum Inserts {
    Joined,
    Chosen,
    Closures,
}

async fn insert(db: &D1Database, how: Inserts) -> Result<(), Error> {
    match how {
        Inserts::Joined => inserts_joined(db).await,
        Inserts::Chosen => inserts_chosen(db, false).await,
        Inserts::Closures => inserts_in_closures(db).await,
    }
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn page(db: &D1Database, how: Inserts) -> Result<i64, Error> {
    insert(db, how).await?;
    count_orders(db).await
}

#[tokio::test(start_paused = true)]
async fn writes_left_as_written_in_a_nested_function_are_not_made_again() {
    for how in [Inserts::Joined, Inserts::Chosen, Inserts::Closures] {
        // A read after them lost, maybe executed: the page is not run again (the read,
        // after a write, is retried on its own).
        let db = database();
        count_fails_once_after_running(&db);
        let result = page(&db, how).await;
        assert_eq!(
            (rows(&db, "orders"), rows(&db, "audit")),
            (1, 1),
            "read_only, {how:?}: {result:?}"
        );

        // A `Retry` that may write, whose read fails before it runs, five times: it is not
        // run again once the nested inserts were made.
        let db = database();
        db.add_fault(
            Fault::new(Message::CannotResolve)
                .when_sql_contains(READ_N)
                .times(5),
        );
        let result = Retry::new("place")
            .policy(NO_BUDGET)
            .run(|| async {
                insert(&db, how).await?;
                count_orders(&db).await
            })
            .await;
        assert_eq!(
            (rows(&db, "orders"), rows(&db, "audit")),
            (1, 1),
            "Retry, {how:?}: {result:?}"
        );
        assert!(result.is_err(), "Retry, {how:?}: {result:?}");
    }
}

/// An insert through a `Retry` (not idempotent, so it is run again only when nothing was
/// written).
async fn insert_by_retry(db: &D1Database) -> Result<(), Error> {
    Retry::new("insert")
        .policy(NO_BUDGET)
        .run(|| async {
            db.prepare("INSERT INTO orders (item) VALUES ('by-retry')")
                .run()
                .await?;
            Ok::<_, Error>(())
        })
        .await
}

#[d1_retry(read_only, policy = BOUNDED)]
async fn page_with_retry_insert(db: &D1Database) -> Result<i64, Error> {
    let c = n(db.prepare(READ_N).first::<Count>(None).await?);
    insert_by_retry(db).await?;
    Ok(c)
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn page_joining_retry_insert(db: &D1Database) -> Result<i64, Error> {
    let read = db.prepare(READ_N);
    let ((), c) = tokio::try_join!(insert_by_retry(db), read.first::<Count>(None))?;
    Ok(n(c))
}

/// The insert lands, then its answer hangs: the page's attempt is cut at 2 s while the
/// `Retry` is in flight, and is not run again.
#[tokio::test(start_paused = true)]
async fn a_page_cut_while_a_nested_write_retry_is_in_flight_is_not_run_again() {
    let db = database();
    db.add_fault(
        Fault::stall(Duration::from_secs(600))
            .after_execution()
            .when_sql_contains("('by-retry')")
            .times(1),
    );
    let result = page_with_retry_insert(&db).await;
    assert_eq!(
        (rows(&db, "orders"), calls_with(&db, "('by-retry')")),
        (1, 1),
        "{result:?}"
    );
    assert_timed_out(&result, "cut");
}

/// The insert lands and its answer takes a second; the read beside it fails before it
/// runs, and `try_join!` drops the `Retry` in flight: the page is not run again.
#[tokio::test(start_paused = true)]
async fn a_page_that_dropped_a_nested_write_retry_in_flight_is_not_run_again() {
    let db = database();
    db.add_fault(
        Fault::stall(Duration::from_secs(1))
            .after_execution()
            .when_sql_contains("('by-retry')")
            .times(1),
    );
    db.add_fault(
        Fault::new(Message::CannotResolve)
            .when_sql_contains(READ_N)
            .times(1),
    );
    let result = page_joining_retry_insert(&db).await;
    assert_eq!(rows(&db, "orders"), 1, "{result:?}");
    assert!(result.is_err(), "{result:?}");
}

/// Reads left as written (fanned out into one `Vec`) whose SQL is a constant: judged
/// read-only when the program compiles, they are not counted as writes, and the
/// `read_only` page around them still runs again after a later read is lost. (Counted as
/// writes whatever their SQL, they cost the page its retries.)
#[d1_retry(policy = NO_BUDGET)]
// The `Vec` filled by `push` is the shape under test.
#[allow(clippy::vec_init_then_push)]
async fn fan_out(db: &D1Database) -> Result<i64, Error> {
    let stmt = db.prepare(READ_N);
    let mut futures = Vec::new();
    futures.push(stmt.first::<Count>(None));
    futures.push(stmt.first::<Count>(None));
    let mut total = 0;
    for each in futures {
        total += n(each.await?);
    }
    Ok(total)
}

const READ_AUDIT: &str = "SELECT count(*) AS n FROM audit";

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn page_fanned(db: &D1Database) -> Result<i64, Error> {
    let fanned = fan_out(db).await?;
    Ok(fanned + n(db.prepare(READ_AUDIT).first::<Count>(None).await?))
}

#[tokio::test(start_paused = true)]
async fn reads_left_as_written_do_not_cost_a_read_only_page_its_retries() {
    let db = database();
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .when_sql_contains(READ_AUDIT)
            .times(1),
    );
    assert_eq!(page_fanned(&db).await.ok(), Some(0));
    assert_eq!(calls_with(&db, READ_AUDIT), 2);
}
