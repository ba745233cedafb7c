//! A policy that `validate()` refuses (no attempts, no jitter, a base delay above the cap, a
//! time limit of zero) makes a single attempt and logs why. That attempt is still a D1 call
//! like any other: what it may have written counts for the attempt around it, which must
//! not run it again, and a zero limit must not cut it before it reaches D1.

use core::time::Duration;

use d1_retry::testing::{D1Database, Error, Fault, Message, Timing};
use d1_retry::{Retry, RetryPolicy, d1_retry};
use test_support::{fail_once, lose_once_after_running};

use crate::harness::{Count, NO_BUDGET, READ_N, count_orders, database, n, rows};

const INSERT: &str = "INSERT INTO orders (item) VALUES ('x')";

/// Each kind of policy `validate()` refuses that still allows a call, with its name.
fn invalid_policies() -> [(&'static str, RetryPolicy); 3] {
    [
        ("no attempts", NO_BUDGET.with_max_attempts(0)),
        ("no jitter", NO_BUDGET.with_jitter(0, 0)),
        (
            "a base delay above the cap",
            NO_BUDGET
                .with_base_delay(Duration::from_secs(5))
                .with_max_delay(Duration::from_secs(1)),
        ),
    ]
}

/// A direct write given a `Retry` of its own, as `Retry`'s docs say to do, with `policy`.
async fn insert(db: &D1Database, policy: RetryPolicy) -> Result<(), Error> {
    Retry::new("orders.insert")
        .policy(policy)
        .run(|| async { db.prepare(INSERT).run().await.map(|_| ()) })
        .await
}

/// The orders counted by a read declared read-only, within `policy`'s time limits.
async fn timed_read(db: &D1Database, policy: RetryPolicy) -> Result<i64, Error> {
    Retry::new("read")
        .read_only(true)
        .policy(policy)
        .run_timed(|| async { db.prepare(READ_N).first::<Count>(None).await.map(n) })
        .await
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn insert_then_count(db: &D1Database, policy: RetryPolicy) -> Result<i64, Error> {
    insert(db, policy).await?;
    count_orders(db).await
}

/// The inner write fails after it ran: neither a `Retry` declared read-only nor a
/// `read_only` body around it may run it again (before the fix, both did: 2 rows, `Ok`).
#[tokio::test(start_paused = true)]
async fn a_write_under_an_invalid_policy_is_not_run_again_by_the_attempt_around_it() {
    for (policy_is, policy) in invalid_policies() {
        assert!(policy.validate().is_err(), "{policy_is}");
        let db = database();
        lose_once_after_running(&db, "INSERT");
        let result = Retry::new("outer")
            .read_only(true)
            .policy(NO_BUDGET)
            .run(|| insert(&db, policy))
            .await;
        assert!(result.is_err(), "a Retry around, {policy_is}: {result:?}");
        assert_eq!(rows(&db, "orders"), 1, "a Retry around, {policy_is}");

        let db = database();
        lose_once_after_running(&db, "INSERT");
        let result = insert_then_count(&db, policy).await;
        assert!(result.is_err(), "a read_only body, {policy_is}: {result:?}");
        assert_eq!(rows(&db, "orders"), 1, "a read_only body, {policy_is}");
    }
}

/// A `Retry` that may write, whose attempt swallows the inner write's failure and then
/// makes a read that fails before D1 ran it: the attempt wrote, so it is not run again.
#[tokio::test(start_paused = true)]
async fn a_swallowed_write_under_an_invalid_policy_still_counts() {
    for (policy_is, policy) in invalid_policies() {
        let db = database();
        lose_once_after_running(&db, "INSERT");
        fail_once(&db, READ_N, Message::CannotResolve, Timing::BeforeExecution);
        let result = Retry::new("outer")
            .policy(NO_BUDGET)
            .run(|| async {
                // Best effort: the caller goes on without it.
                let _ = insert(&db, policy).await;
                count_orders(&db).await
            })
            .await;
        assert_eq!(rows(&db, "orders"), 1, "{policy_is}: {result:?}");
    }
}

/// A time limit of zero is invalid: the policy makes its single attempt without that
/// limit, instead of cutting it before it reached D1 (no call made, and a "timed out"
/// error classed as maybe executed). A limit above zero in an invalid policy still cuts.
#[tokio::test(start_paused = true)]
async fn a_zero_time_limit_still_makes_the_one_attempt() {
    for (policy_is, policy) in [
        (
            "a zero attempt timeout",
            NO_BUDGET.with_attempt_timeout(Duration::ZERO),
        ),
        ("a zero deadline", NO_BUDGET.with_deadline(Duration::ZERO)),
    ] {
        assert!(policy.validate().is_err(), "{policy_is}");
        let db = database();
        let result = timed_read(&db, policy).await;
        assert_eq!(result.ok(), Some(0), "{policy_is}");
        assert_eq!(db.calls().len(), 1, "{policy_is}");

        // And a single attempt it stays: a failure is handed back, not retried.
        let db = database();
        db.add_fault(
            Fault::new(Message::CannotResolve)
                .when_sql_contains(READ_N)
                .times(1),
        );
        let result = timed_read(&db, policy).await;
        assert!(result.is_err(), "{policy_is}");
        assert_eq!(db.calls().len(), 1, "{policy_is}");
    }
    let no_jitter = NO_BUDGET
        .with_jitter(0, 0)
        .with_attempt_timeout(Duration::from_secs(1));
    let db = database();
    db.add_fault(
        Fault::stall(Duration::from_secs(30))
            .when_sql_contains(READ_N)
            .times(1),
    );
    let started = tokio::time::Instant::now();
    let result = timed_read(&db, no_jitter).await;
    assert!(result.is_err(), "cut by its 1 s limit: {result:?}");
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert_eq!(db.calls().len(), 1);
}
