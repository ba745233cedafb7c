//! An `idempotent` function, or a `Retry` declared idempotent, called from work that is run
//! again as a whole: a `read_only` body (with and without time limits, a later read lost
//! "maybe executed" or the attempt cut while the nested upsert hangs), and a `Retry`. The
//! upsert sets what the enclosing work read before it (`seen + 1`), so each is idempotent
//! on its own and not as part of the work around it: the declaration lets the nested work
//! run again, not the work that chose its value. It counts as a write made in the enclosing
//! attempt, which is then not run again. Before, its write was counted nowhere (idempotent
//! work "may not write" to the scope's count), the page view ran again and the counter
//! was bumped twice with the caller given `Ok`.

use core::time::Duration;

use d1_retry::testing::{D1Database, Error, Fault, JsValue, Message, Timing};
use d1_retry::{Retry, RetryPolicy, d1_retry};
use test_support::calls_with;

use crate::harness::{Count, NO_BUDGET, READ_N, assert_timed_out, database, hits, n};

const BOUNDED: RetryPolicy = NO_BUDGET
    .with_attempt_timeout(Duration::from_secs(2))
    .with_deadline(Duration::from_secs(10));

const UPSERT: &str = "INSERT INTO counters (name, n) VALUES ('hits', ?1) \
                      ON CONFLICT(name) DO UPDATE SET n = excluded.n";
const SEEN: &str = "SELECT n FROM counters WHERE name = 'hits'";

/// Sets the counter: the same value again has the same effect.
#[d1_retry(idempotent, policy = NO_BUDGET)]
async fn set_hits(db: &D1Database, value: i64) -> Result<(), Error> {
    db.prepare(UPSERT)
        .bind(&[JsValue::from_f64(value as f64)])?
        .run()
        .await?;
    Ok(())
}

/// The same, as a `Retry` declared idempotent around D1's own call.
async fn set_hits_by_retry(db: &D1Database, value: i64) -> Result<(), Error> {
    Retry::new("set_hits")
        .policy(NO_BUDGET)
        .idempotent(true)
        .run(|| async {
            db.prepare(UPSERT)
                .bind(&[JsValue::from_f64(value as f64)])?
                .run()
                .await?;
            Ok::<_, Error>(())
        })
        .await
}

#[derive(Clone, Copy, Debug)]
enum Setter {
    Attribute,
    Retry,
}

async fn set(db: &D1Database, setter: Setter, value: i64) -> Result<(), Error> {
    match setter {
        Setter::Attribute => set_hits(db, value).await,
        Setter::Retry => set_hits_by_retry(db, value).await,
    }
}

/// A page view: reads the counter, sets it one higher, then reads the orders.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn view(db: &D1Database, setter: Setter) -> Result<i64, Error> {
    let seen = n(db.prepare(SEEN).first::<Count>(None).await?);
    set(db, setter, seen + 1).await?;
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}

/// The same under a policy constant's time limits.
#[d1_retry(read_only, policy = BOUNDED)]
async fn view_bounded(db: &D1Database, setter: Setter) -> Result<i64, Error> {
    let seen = n(db.prepare(SEEN).first::<Count>(None).await?);
    set(db, setter, seen + 1).await?;
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}

/// The same page view as a `Retry` declared read-only.
async fn view_by_retry(db: &D1Database, setter: Setter) -> Result<i64, Error> {
    Retry::new("view")
        .policy(NO_BUDGET)
        .read_only(true)
        .run(|| async {
            let seen = n(db.prepare(SEEN).first::<Count>(None).await?);
            set(db, setter, seen + 1).await?;
            Ok::<_, Error>(n(db.prepare(READ_N).first::<Count>(None).await?))
        })
        .await
}

#[derive(Clone, Copy, Debug)]
enum Around {
    ReadOnly,
    ReadOnlyBounded,
    Retry,
}

async fn page(db: &D1Database, around: Around, setter: Setter) -> Result<i64, Error> {
    match around {
        Around::ReadOnly => view(db, setter).await,
        Around::ReadOnlyBounded => view_bounded(db, setter).await,
        Around::Retry => view_by_retry(db, setter).await,
    }
}

const AROUND: [Around; 3] = [Around::ReadOnly, Around::ReadOnlyBounded, Around::Retry];
const SETTERS: [Setter; 2] = [Setter::Attribute, Setter::Retry];

#[tokio::test(start_paused = true)]
async fn a_clean_page_view_sets_the_counter_once() {
    for around in AROUND {
        for setter in SETTERS {
            let db = database();
            assert_eq!(page(&db, around, setter).await.ok(), Some(0));
            assert_eq!(hits(&db), 1, "{around:?} {setter:?}");
        }
    }
}

/// The read after the upsert fails once, after it ran or before: the page is not viewed
/// again, the counter is set once, and the caller gets the failure.
#[tokio::test(start_paused = true)]
async fn a_read_lost_after_a_nested_idempotent_write_does_not_run_the_page_again() {
    for around in AROUND {
        for setter in SETTERS {
            for (message, timing) in [
                (Message::NetworkConnectionLost, Timing::AfterExecution),
                (Message::CannotResolve, Timing::BeforeExecution),
            ] {
                let db = database();
                db.add_fault(
                    Fault::new(message)
                        .timing(timing)
                        .when_sql_contains(READ_N)
                        .times(1),
                );
                let result = page(&db, around, setter).await;
                let case = format!("{around:?} {setter:?} {message:?} {timing:?}");
                assert_eq!(
                    (hits(&db), calls_with(&db, "ON CONFLICT")),
                    (1, 1),
                    "{case}: {result:?}"
                );
                assert!(result.is_err(), "{case}: the caller got {result:?}");
            }
        }
    }
}

/// The upsert lands, then its answer hangs: the page's attempt is cut at the policy's
/// 2 s while it is in flight, and is not run again.
#[tokio::test(start_paused = true)]
async fn a_page_cut_during_a_nested_idempotent_write_is_not_run_again() {
    for setter in SETTERS {
        let db = database();
        db.add_fault(
            Fault::stall(Duration::from_secs(600))
                .after_execution()
                .when_sql_contains("ON CONFLICT")
                .times(1),
        );
        let start = tokio::time::Instant::now();
        let result = view_bounded(&db, setter).await;
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(2),
            "{setter:?}: {result:?}"
        );
        assert_eq!(
            (hits(&db), calls_with(&db, "ON CONFLICT")),
            (1, 1),
            "{setter:?}: {result:?}"
        );
        assert_timed_out(&result, &format!("{setter:?}"));
    }
}

/// On its own, the `idempotent` function is still run again after a failure that may
/// have run its write, as declared.
#[tokio::test(start_paused = true)]
async fn on_its_own_an_idempotent_function_still_runs_again() {
    for setter in SETTERS {
        let db = database();
        db.add_fault(
            Fault::new(Message::NetworkConnectionLost)
                .after_execution()
                .when_sql_contains("ON CONFLICT")
                .times(1),
        );
        assert!(set(&db, setter, 5).await.is_ok(), "{setter:?}");
        assert_eq!(
            (hits(&db), calls_with(&db, "ON CONFLICT")),
            (5, 2),
            "{setter:?}"
        );
    }
}

/// The nested upsert itself fails, before it ran or after: the page will not run again
/// once the upsert began, so the upsert is retried on its own, as declared, and the page
/// has its answer with the counter set once. (Counted as a write with nothing to let it
/// retry, it failed the page.)
#[tokio::test(start_paused = true)]
async fn a_nested_idempotent_write_that_fails_is_retried_on_its_own() {
    for around in AROUND {
        for setter in SETTERS {
            for (message, timing) in [
                (Message::CannotResolve, Timing::BeforeExecution),
                (Message::NetworkConnectionLost, Timing::AfterExecution),
            ] {
                let db = database();
                db.add_fault(
                    Fault::new(message)
                        .timing(timing)
                        .when_sql_contains("ON CONFLICT")
                        .times(1),
                );
                let result = page(&db, around, setter).await;
                let case = format!("{around:?} {setter:?} {message:?} {timing:?}");
                assert_eq!(result.ok(), Some(0), "{case}");
                assert_eq!(hits(&db), 1, "{case}");
                assert_eq!(calls_with(&db, "ON CONFLICT"), 2, "{case}");
            }
        }
    }
}
