//! A `#[d1_retry(read_only)]` function that ran SQL that writes (declared `read_only`
//! wrongly, or handed a text or a statement at run time) and then succeeded, called from a
//! body that is run again as a whole: an enclosing `read_only` body (both loops), a
//! `Retry`, a body cut by its attempt timeout while the nested function was still running,
//! and a `try_join!` that dropped it. Its write counts as a write made in the enclosing
//! attempt, which is then not run again, so the write lands once; the calls after it in a
//! `read_only` body retry on their own, and a read lost after it is retried there. Before, the nested function kept its write to itself (its own record only
//! decides its own next attempt), and each of these ran the `INSERT` twice and returned
//! `Ok`.

use core::time::Duration;

use d1_retry::testing::{D1Database, D1PreparedStatement, Error, Fault, Message, Timing};
use d1_retry::{Retry, d1_retry};
use test_support::calls_with;

use crate::harness::{Count, NO_BUDGET, READ_N, database, n, rows};

const INSERT: &str = "INSERT INTO orders (item) VALUES ('nested')";

/// Runs the SQL it is handed, which it cannot see: judged when it runs.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn run_handed(db: &D1Database, sql: &str) -> Result<(), Error> {
    db.prepare(sql).run().await?;
    Ok(())
}

/// The same, through `exec`.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn exec_handed(db: &D1Database, sql: &str) -> Result<(), Error> {
    db.exec(sql).await?;
    Ok(())
}

/// A statement made elsewhere, run here: read from D1's statement when it runs.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn run_held(statement: &D1PreparedStatement) -> Result<(), Error> {
    statement.run().await?;
    Ok(())
}

/// `run_handed`, `exec_handed` and `run_held` are bodies of one D1 call, retried as that
/// call, whose write the enclosing attempt is told of by the call; these are whole bodies
/// (the second `.await`), whose attempt's record tells it.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn run_handed_whole(db: &D1Database, sql: &str) -> Result<(), Error> {
    core::future::ready(()).await;
    db.prepare(sql).run().await?;
    Ok(())
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn exec_handed_whole(db: &D1Database, sql: &str) -> Result<(), Error> {
    core::future::ready(()).await;
    db.exec(sql).await?;
    Ok(())
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn run_held_whole(statement: &D1PreparedStatement) -> Result<(), Error> {
    core::future::ready(()).await;
    statement.run().await?;
    Ok(())
}

/// The read after the nested call: retried call by call where it stands alone.
#[d1_retry(policy = NO_BUDGET)]
async fn count(db: &D1Database) -> Result<i64, Error> {
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}

#[derive(Clone, Copy, Debug)]
enum Nested {
    Prepare,
    Exec,
    Held,
    PrepareWhole,
    ExecWhole,
    HeldWhole,
}

async fn nested(db: &D1Database, how: Nested) -> Result<(), Error> {
    match how {
        Nested::Prepare => run_handed(db, INSERT).await,
        Nested::Exec => exec_handed(db, INSERT).await,
        Nested::Held => run_held(&db.prepare(INSERT)).await,
        Nested::PrepareWhole => run_handed_whole(db, INSERT).await,
        Nested::ExecWhole => exec_handed_whole(db, INSERT).await,
        Nested::HeldWhole => run_held_whole(&db.prepare(INSERT)).await,
    }
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn outer(db: &D1Database, how: Nested) -> Result<i64, Error> {
    nested(db, how).await?;
    count(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
async fn outer_timed(db: &D1Database, how: Nested) -> Result<i64, Error> {
    nested(db, how).await?;
    count(db).await
}

/// The outcome, the `INSERT`s made and the rows, with `fault` striking the read after the
/// nested call once.
async fn read_fails_once<F, Fut>(fault: Fault, body: F) -> (Result<i64, Error>, usize, i64)
where
    F: FnOnce(D1Database) -> Fut,
    Fut: core::future::Future<Output = Result<i64, Error>>,
{
    let db = database();
    db.add_fault(fault.when_sql_contains(READ_N).times(1));
    let result = body(db.clone()).await;
    (result, calls_with(&db, "'nested'"), rows(&db, "orders"))
}

#[tokio::test(start_paused = true)]
async fn an_enclosing_read_only_body_is_not_run_again_after_a_nested_read_only_write() {
    for how in [
        Nested::Prepare,
        Nested::Exec,
        Nested::Held,
        Nested::PrepareWhole,
        Nested::ExecWhole,
        Nested::HeldWhole,
    ] {
        for timed in [false, true] {
            for (message, timing) in [
                (Message::NetworkConnectionLost, Timing::AfterExecution),
                (Message::CannotResolve, Timing::BeforeExecution),
            ] {
                let fault = Fault::new(message).timing(timing);
                let (result, inserts, orders) = read_fails_once(fault, |db| async move {
                    if timed {
                        outer_timed(&db, how).await
                    } else {
                        outer(&db, how).await
                    }
                })
                .await;
                let case = format!("{how:?}, timed {timed}, {message:?} {timing:?}");
                assert_eq!((inserts, orders), (1, 1), "{case}: {result:?}");
                // The attempt will not run again, so the read after the write is retried
                // on its own, as it would be outside it, and the caller has its count.
                assert_eq!(result.ok(), Some(1), "{case}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_is_not_run_again_after_a_nested_read_only_write() {
    for (read_only, whole) in [(false, false), (true, false), (false, true), (true, true)] {
        let (result, inserts, orders) =
            read_fails_once(Fault::new(Message::CannotResolve), |db| async move {
                Retry::new("report")
                    .policy(NO_BUDGET)
                    .read_only(read_only)
                    .run(|| async {
                        if whole {
                            run_handed_whole(&db, INSERT).await?;
                        } else {
                            run_handed(&db, INSERT).await?;
                        }
                        Ok::<_, Error>(n(db.prepare(READ_N).first::<Count>(None).await?))
                    })
                    .await
            })
            .await;
        assert_eq!(
            (inserts, orders),
            (1, 1),
            "read_only {read_only}, whole {whole}: {result:?}"
        );
        assert!(
            result.is_err(),
            "read_only {read_only}, whole {whole}: the caller got {result:?}"
        );
    }
}

/// Declared `read_only` wrongly: the write it is handed, then a read that stalls.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn write_then_read(db: &D1Database, sql: &str) -> Result<i64, Error> {
    db.prepare(sql).run().await?;
    count(db).await
}

#[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 30_000)]
async fn cut_during_nested(db: &D1Database) -> Result<i64, Error> {
    write_then_read(db, INSERT).await
}

#[tokio::test(start_paused = true)]
async fn a_body_cut_while_a_nested_read_only_function_that_wrote_runs_is_not_run_again() {
    let stall = Fault::stall(Duration::from_secs(60));
    let (result, inserts, orders) =
        read_fails_once(stall, |db| async move { cut_during_nested(&db).await }).await;
    assert_eq!((inserts, orders), (1, 1), "{result:?}");
    assert!(result.is_err(), "the caller got {result:?}");
}

/// The nested function's write ran and its read is stalled when the other branch fails
/// "not executed": `try_join!` drops it in flight.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn joined(db: &D1Database) -> Result<i64, Error> {
    let audit = async {
        db.prepare("SELECT count(*) AS n FROM audit")
            .first::<Count>(None)
            .await
    };
    let (orders, _) = tokio::try_join!(write_then_read(db, INSERT), audit)?;
    Ok(orders)
}

#[tokio::test(start_paused = true)]
async fn a_body_that_dropped_a_nested_read_only_function_that_wrote_is_not_run_again() {
    let db = database();
    db.add_fault(
        Fault::stall(Duration::from_secs(1))
            .when_sql_contains(READ_N)
            .times(1),
    );
    db.add_fault(
        Fault::new(Message::CannotResolve)
            .when_sql_contains("FROM audit")
            .times(1),
    );
    let result = joined(&db).await;
    assert_eq!(
        (calls_with(&db, "'nested'"), rows(&db, "orders")),
        (1, 1),
        "{result:?}"
    );
    assert!(result.is_err(), "the caller got {result:?}");
}

/// A per-call write, retried call by call where it stands alone.
#[d1_retry(policy = NO_BUDGET)]
async fn place(db: &D1Database) -> Result<(), Error> {
    db.prepare(INSERT).run().await?;
    Ok(())
}

/// A `Retry` declared read-only around a write made through `#[d1_retry]`: the write,
/// nested, leaves its "maybe executed" failure to the attempt, which does not run again
/// (as a `#[d1_retry(read_only)]` body would not); before, it ran the write twice and
/// returned `Ok`.
#[tokio::test(start_paused = true)]
async fn a_retry_declared_read_only_is_not_run_again_after_a_nested_write() {
    let db = database();
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .when_sql_contains("'nested'")
            .times(1),
    );
    let result = Retry::new("report")
        .policy(NO_BUDGET)
        .read_only(true)
        .run(|| async {
            place(&db).await?;
            count(&db).await
        })
        .await;
    assert_eq!(
        (calls_with(&db, "'nested'"), rows(&db, "orders")),
        (1, 1),
        "{result:?}"
    );
    assert!(result.is_err(), "the caller got {result:?}");
}
