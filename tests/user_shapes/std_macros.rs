//! Executions inside std's `matches!`: its expression is evaluated once, as any
//! expression, so the executions in it are retried on their own; its pattern and guard are
//! not expressions, and a `matches!` whose guard makes a D1 call is left as written (in a
//! `read_only` body, a statement out of sight). (`assert!` prints its tokens, which the
//! rewrite would change, and is left as written.)

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, Error, Message, Timing};
use test_support::{calls_with, fail_once};

use crate::harness::{Count, INSERT_ITEM, NO_BUDGET, READ_N, count_orders, database, rows, sweep};

/// A read and a write tested by `matches!`, and a read in a condition of its own.
#[d1_retry(policy = NO_BUDGET)]
async fn tested_by_matches(db: &D1Database) -> Result<(bool, bool, i64), Error> {
    let found = matches!(
        db.prepare(READ_N).first::<Count>(None).await?,
        Some(Count { n: 0.. })
    );
    let added = matches!(
        db.prepare(INSERT_ITEM)
            .bind(&["m".into()])?
            .run()
            .await
            .map(|_| 1)?,
        1
    );
    let after = if matches!(db.prepare(READ_N).first::<Count>(None).await, Ok(Some(_))) {
        1
    } else {
        0
    };
    Ok((found, added, after))
}

/// A guard that writes: the pattern side is not rewritten, so the `matches!` is out of
/// sight, and a `read_only` body that ran it is not run again.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn guarded_by_a_write(db: &D1Database) -> Result<i64, Error> {
    let label = Some("g");
    let _ = matches!(
        label,
        Some(item) if db.prepare(INSERT_ITEM).bind(&[item.into()])?.run().await.is_ok()
    );
    count_orders(db).await
}

#[tokio::test(start_paused = true)]
async fn executions_in_matches_are_retried_on_their_own() {
    sweep(
        "matches!",
        |db, _| async move { tested_by_matches(&db).await },
    )
    .await;
    // The read inside `matches!` failed before D1 was reached: made again, alone.
    let db = database();
    fail_once(&db, READ_N, Message::CannotResolve, Timing::BeforeExecution);
    assert_eq!(tested_by_matches(&db).await.unwrap(), (true, true, 1));
    assert_eq!(calls_with(&db, READ_N), 3);
    assert_eq!(calls_with(&db, "INSERT"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_guard_that_writes_keeps_a_read_only_body_from_running_again() {
    let db = database();
    fail_once(
        &db,
        READ_N,
        Message::NetworkConnectionLost,
        Timing::AfterExecution,
    );
    assert_eq!(guarded_by_a_write(&db).await.unwrap(), 1);
    assert_eq!(rows(&db, "orders"), 1, "the guard's write ran once");
}
