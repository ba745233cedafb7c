//! Time limits: the shapes most Workers are written in, annotated with an attempt timeout
//! and a deadline (`attempt_timeout_ms`, `deadline_ms`, or a `policy = PATH` whose constant
//! has `with_attempt_timeout` / `with_deadline`), which takes the time-limited loop of the
//! runtime rather than the plain one. Each is swept by [`sweep_timed`]: at every call, a
//! stall past the timeout before the statement runs and after it ran, a stall within it, one
//! of exactly the timeout, a stall of every call from there on, short and long stalls that
//! end in a failure, and the ordinary failures; all on tokio's paused clock, so the
//! deadline is checked to the millisecond in virtual time.

use core::time::Duration;
use std::sync::Arc;

use d1_retry::testing::{D1Database, D1PreparedStatement, Error, Message};
use d1_retry::{RetryPolicy, TimedOut, d1_retry};

use crate::harness::{
    Count, Effects, INSERT_ITEM, Limits, NO_BUDGET, READ_N, assert_timed_out, hits, n, sweep_timed,
};

/// The limits of a policy constant the attribute cannot read: an attempt timeout alone.
const TIMED: RetryPolicy = NO_BUDGET.with_attempt_timeout(Duration::from_secs(2));

/// The README's recommendation for a Worker serving HTTP, as a policy constant.
const BOUNDED: RetryPolicy = NO_BUDGET
    .with_attempt_timeout(Duration::from_secs(2))
    .with_deadline(Duration::from_secs(10));

/// The upsert of the `idempotent` shapes: it sets, never adds.
const SET_HITS: &str = "INSERT INTO counters (name, n) VALUES ('hits', 7) \
                        ON CONFLICT(name) DO UPDATE SET n = excluded.n";
const READ_HITS: &str = "SELECT n FROM counters WHERE name = 'hits'";

/// The limits of `attempt_timeout_ms = 2000, deadline_ms = 10_000` and of [`BOUNDED`].
const TWO_S_BY_10_S: Limits = Limits {
    attempt: Duration::from_secs(2),
    deadline: Some(Duration::from_secs(10)),
    idempotent: false,
    read_only_body: false,
};

/// The limits of [`TIMED`].
const TWO_S: Limits = Limits {
    attempt: Duration::from_secs(2),
    deadline: None,
    idempotent: false,
    read_only_body: false,
};

/// The limits of a `read_only` body with a nested write, `attempt_timeout_ms = 2000,
/// deadline_ms = 10_000`.
const READ_ONLY_BODY: Limits = Limits {
    read_only_body: true,
    ..TWO_S_BY_10_S
};

/// An application error of the user's own, which receives a timeout as it receives D1's
/// errors: what the attribute's time-limit options require of the function's error type.
#[derive(Debug)]
enum AppError {
    Db(Error),
    TimedOut(TimedOut),
}

impl core::fmt::Display for AppError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AppError::Db(e) => write!(f, "database: {e}"),
            AppError::TimedOut(e) => write!(f, "too slow: {e}"),
        }
    }
}

impl From<Error> for AppError {
    fn from(e: Error) -> Self {
        AppError::Db(e)
    }
}

impl From<TimedOut> for AppError {
    fn from(e: TimedOut) -> Self {
        AppError::TimedOut(e)
    }
}

/// Makes the statement an audit entry is written with: a plain helper, so its SQL is out
/// of sight and counts as a write.
fn audit_statement(db: &D1Database, what: &str) -> Result<D1PreparedStatement, Error> {
    db.prepare("INSERT INTO audit (what) VALUES (?1)")
        .bind(&[what.into()])
}

/// A repository write that is not time-limited itself, called from a time-limited
/// `read_only` body: the shape of a user who annotated only the handler's read path.
#[d1_retry(policy = NO_BUDGET)]
async fn record_visit(db: &D1Database) -> Result<(), Error> {
    db.prepare("INSERT INTO audit (what) VALUES ('visit')")
        .run()
        .await?;
    Ok(())
}

/// The same write, its future kept before it is awaited: the runtime's own loop retries it.
#[d1_retry(policy = NO_BUDGET)]
async fn record_visit_kept(db: &D1Database) -> Result<(), Error> {
    let statement = db.prepare("INSERT INTO audit (what) VALUES ('visit kept')");
    let pending = statement.run();
    pending.await?;
    Ok(())
}

/// The same write, time-limited like the body that calls it.
#[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
async fn record_visit_timed(db: &D1Database) -> Result<(), Error> {
    db.prepare("INSERT INTO audit (what) VALUES ('visit timed')")
        .run()
        .await?;
    Ok(())
}

struct Shop {
    db: D1Database,
    effects: Arc<Effects>,
}

impl Shop {
    /// A slow checkout of several items under a tight deadline (4 s): each call answers
    /// within the attempt timeout, but together they outlast the deadline.
    #[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 4000)]
    async fn order_each_by_4s(&self, items: &[&str]) -> Result<i64, Error> {
        let insert = self.db.prepare(INSERT_ITEM);
        for item in items {
            insert.clone().bind(&[(*item).into()])?.run().await?;
            self.effects.push(format!("ordered {item}"));
        }
        Ok(items.len() as i64)
    }

    /// A checkout that places one order, then queues the confirmation email.
    #[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn place_order(&self, item: &str) -> Result<i64, Error> {
        let result = self
            .db
            .prepare(INSERT_ITEM)
            .bind(&[item.into()])?
            .run()
            .await?;
        self.effects.push("confirmation queued");
        Ok(result
            .meta()
            .ok()
            .flatten()
            .map_or(0, |m| m.changes.unwrap_or(0) as i64))
    }

    /// A stock check, then the order it allows: a read and a write under one deadline, the
    /// limits carried by a policy constant.
    #[d1_retry(policy = BOUNDED)]
    async fn check_then_order(&self, item: &str) -> Result<i64, AppError> {
        let before = n(self.db.prepare(READ_N).first::<Count>(None).await?);
        self.effects.push("stock checked");
        if before < 10 {
            self.db
                .prepare(INSERT_ITEM)
                .bind(&[item.into()])?
                .run()
                .await?;
            self.effects.push("ordered");
        }
        Ok(before)
    }

    /// A cart checked out item by item: one insert prepared once, bound for each item,
    /// then the count read back.
    #[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn order_each(&self, items: &[&str]) -> Result<i64, Error> {
        let insert = self.db.prepare(INSERT_ITEM);
        for item in items {
            insert.clone().bind(&[(*item).into()])?.run().await?;
            self.effects.push(format!("ordered {item}"));
        }
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        Ok(n(c))
    }

    /// A cart checked out at once: one `async move` block per item, joined, then the count
    /// read back; the limits carried by a policy constant with an attempt timeout only.
    #[d1_retry(policy = TIMED)]
    async fn order_all_at_once(&self, items: &[&str]) -> Result<i64, Error> {
        let insert = self.db.prepare(INSERT_ITEM);
        let effects = &self.effects;
        let futures = items.iter().map(|item| {
            let insert = insert.clone();
            async move {
                insert.bind(&[(*item).into()])?.run().await?;
                effects.push(format!("ordered {item}"));
                Ok::<_, Error>(1i64)
            }
        });
        let mut total = 0;
        for r in test_support::join_all(futures).await {
            total += r?;
        }
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        Ok(total * 100 + n(c))
    }

    /// An audit entry written with a statement a helper made, the user's error type
    /// receiving the timeout.
    #[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn audited(&self, what: &str) -> Result<i64, AppError> {
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        audit_statement(&self.db, what)?.run().await?;
        self.effects.push("audited");
        Ok(n(c))
    }

    /// A checkout written as one transaction: a batch of the order and its audit entry,
    /// then a batch of reads.
    #[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn order_in_a_batch(&self) -> Result<i64, Error> {
        self.db
            .batch(vec![
                self.db
                    .prepare("INSERT INTO orders (item) VALUES ('batched')"),
                self.db
                    .prepare("INSERT INTO audit (what) VALUES ('batched')"),
            ])
            .await?;
        self.effects.push("batch committed");
        let reads = self
            .db
            .batch(vec![
                self.db.prepare(READ_N),
                self.db.prepare("SELECT count(*) AS n FROM audit"),
            ])
            .await?;
        Ok(reads.len() as i64)
    }

    /// A maintenance script run with `exec`, line by line, then a count: the limits carried
    /// by a policy constant.
    #[d1_retry(policy = BOUNDED)]
    async fn maintenance(&self) -> Result<i64, Error> {
        self.db
            .exec(
                "INSERT INTO archive (item) SELECT item FROM orders;\n\
                 UPDATE counters SET n = n + 1 WHERE name = 'hits'",
            )
            .await?;
        self.effects.push("maintained");
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        Ok(n(c))
    }

    /// A page view: counted by a repository write that has no limits of its own, inside a
    /// body declared `read_only` with an attempt timeout (the README allows the nested
    /// write: once it may have written, the body is not run again).
    #[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn page_with_untimed_visit(&self) -> Result<i64, Error> {
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        record_visit(&self.db).await?;
        let d = self.db.prepare(READ_N).first::<Count>(None).await?;
        Ok(n(c) * 10 + n(d))
    }

    /// The same page, its nested write's future kept before it is awaited.
    #[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn page_with_kept_visit(&self) -> Result<i64, Error> {
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        record_visit_kept(&self.db).await?;
        let d = self.db.prepare(READ_N).first::<Count>(None).await?;
        Ok(n(c) * 10 + n(d))
    }

    /// The same page, its nested write time-limited like the body.
    #[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn page_with_timed_visit(&self) -> Result<i64, Error> {
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        record_visit_timed(&self.db).await?;
        let d = self.db.prepare(READ_N).first::<Count>(None).await?;
        Ok(n(c) * 10 + n(d))
    }

    /// A setting saved with an upsert that sets, never adds: idempotent, as the user
    /// declares, so the whole body runs again even after the write may have run.
    #[d1_retry(idempotent, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn save_setting(&self) -> Result<i64, Error> {
        self.db.prepare(SET_HITS).run().await?;
        let c = self.db.prepare(READ_HITS).first::<Count>(None).await?;
        Ok(n(c))
    }
}

/// The same under a policy constant's limits ([`BOUNDED`]), which the attribute cannot
/// read: a `read_only` page of two reads and an `idempotent` upsert. Their whole attempts
/// are raced against the policy's limits, as the D1 calls of a per-call function are.
impl Shop {
    #[d1_retry(read_only, policy = BOUNDED)]
    async fn page_under_policy(&self) -> Result<i64, Error> {
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        let d = self.db.prepare(READ_N).first::<Count>(None).await?;
        Ok(n(c) * 10 + n(d))
    }

    #[d1_retry(idempotent, policy = BOUNDED)]
    async fn save_setting_under_policy(&self) -> Result<i64, Error> {
        self.db.prepare(SET_HITS).run().await?;
        let c = self.db.prepare(READ_HITS).first::<Count>(None).await?;
        Ok(n(c))
    }
}

/// A repository that keeps its statements in fields, prepared once when it is built, as a
/// unit of work does.
struct Kept {
    db: D1Database,
    insert: D1PreparedStatement,
    count: D1PreparedStatement,
    effects: Arc<Effects>,
}

impl Kept {
    #[d1_retry(policy = BOUNDED)]
    async fn flush(&self) -> Result<i64, Error> {
        let before = self.count.first::<Count>(None).await?;
        self.insert.run().await?;
        self.effects.push("flushed");
        let after = self.db.prepare(READ_N).first::<Count>(None).await?;
        Ok(n(before) * 100 + n(after))
    }
}

fn shop(db: D1Database, effects: Arc<Effects>) -> Shop {
    Shop { db, effects }
}

/// A single insert under `attempt_timeout_ms` and `deadline_ms`: cut in its stall, before
/// or after it ran, it is not sent again and the checkout gets the timeout; its email is
/// queued only when the insert answered.
#[tokio::test(start_paused = true)]
async fn a_single_timed_write_is_never_sent_again_after_a_cut() {
    sweep_timed("single write", TWO_S_BY_10_S, |db, effects| async move {
        shop(db, effects).place_order("tea").await
    })
    .await;
}

/// A read then a write under a policy constant's limits: the read is made again after a
/// cut, the write never; the user's error type receives the timeout.
#[tokio::test(start_paused = true)]
async fn a_read_then_a_write_under_a_policy_constant_s_limits() {
    sweep_timed("read then write", TWO_S_BY_10_S, |db, effects| async move {
        shop(db, effects).check_then_order("tea").await
    })
    .await;
}

/// One insert bound per item in a loop, under one deadline: a cut item is neither sent
/// again nor followed by the next.
#[tokio::test(start_paused = true)]
async fn a_loop_of_inserts_of_one_prepared_statement_under_a_deadline() {
    sweep_timed("insert loop", TWO_S_BY_10_S, |db, effects| async move {
        shop(db, effects).order_each(&["tea", "cake", "jam"]).await
    })
    .await;
}

/// Inserts joined with `join_all` under an attempt timeout alone: each is cut on its own,
/// none is sent again.
#[tokio::test(start_paused = true)]
async fn joined_inserts_under_an_attempt_timeout_alone() {
    sweep_timed("join_all inserts", TWO_S, |db, effects| async move {
        shop(db, effects)
            .order_all_at_once(&["tea", "cake", "jam"])
            .await
    })
    .await;
}

/// A statement a helper made, out of sight so judged a write: cut, it is not sent again,
/// and the user's `AppError` carries the timeout.
#[tokio::test(start_paused = true)]
async fn a_helper_s_statement_under_time_limits() {
    sweep_timed(
        "helper statement",
        TWO_S_BY_10_S,
        |db, effects| async move { shop(db, effects).audited("login").await },
    )
    .await;
}

/// Statements kept in a repository's fields, judged by the SQL they hold as they run.
#[tokio::test(start_paused = true)]
async fn statements_kept_in_fields_under_a_policy_constant_s_limits() {
    sweep_timed(
        "statements in fields",
        TWO_S_BY_10_S,
        |db, effects| async move {
            Kept {
                insert: db.prepare("INSERT INTO orders (item) VALUES ('kept')"),
                count: db.prepare("SELECT count(*) AS n FROM audit"),
                db,
                effects,
            }
            .flush()
            .await
        },
    )
    .await;
}

/// A batch with writes is one transaction: cut before or after it committed, it is not
/// sent again; a batch of reads is made again.
#[tokio::test(start_paused = true)]
async fn a_batch_under_time_limits() {
    sweep_timed("batch", TWO_S_BY_10_S, |db, effects| async move {
        shop(db, effects).order_in_a_batch().await
    })
    .await;
}

/// An `exec` script that writes: cut, it is not sent again.
#[tokio::test(start_paused = true)]
async fn an_exec_script_under_a_policy_constant_s_limits() {
    sweep_timed("exec", TWO_S_BY_10_S, |db, effects| async move {
        shop(db, effects).maintenance().await
    })
    .await;
}

/// A `read_only` body whose attempt timeout bounds each whole attempt, with a nested
/// repository write that has no limits of its own: cut while the nested write is in
/// flight, the body must not run again, or the write is sent twice (it was, until the
/// attempt kept the balance of the writes begun and settled within it; the minimal case is
/// the next test).
#[tokio::test(start_paused = true)]
async fn a_read_only_body_with_a_nested_untimed_write_is_not_run_again_once_it_began() {
    sweep_timed(
        "read_only, nested untimed write",
        READ_ONLY_BODY,
        |db, effects| async move { shop(db, effects).page_with_untimed_visit().await },
    )
    .await;
}

/// The same body, its nested write time-limited like it. With one fault per run, the
/// write's timer and the body's fire at one instant (the reads before it answer at once),
/// and the write's own cut, polled first, records it as maybe written: the body is not run
/// again. A write started later than the body's attempt is the test of a write started late, below.
#[tokio::test(start_paused = true)]
async fn a_read_only_body_with_a_nested_timed_write() {
    sweep_timed(
        "read_only, nested timed write",
        READ_ONLY_BODY,
        |db, effects| async move { shop(db, effects).page_with_timed_visit().await },
    )
    .await;
}

/// An `idempotent` upsert: the whole body runs again after any transient failure or cut,
/// by contract, and the setting ends as the clean run left it; a stall of every call ends
/// by the deadline.
#[tokio::test(start_paused = true)]
async fn an_idempotent_upsert_is_run_again_after_a_cut_and_ends_as_set() {
    let limits = Limits {
        idempotent: true,
        ..TWO_S_BY_10_S
    };
    sweep_timed("idempotent upsert", limits, |db, effects| async move {
        let set = shop(db.clone(), effects).save_setting().await?;
        Ok::<_, Error>((set, hits(&db)))
    })
    .await;
}

/// Whole-attempt cut, minimal: the nested repository write (no limits of its own) lands,
/// then its answer hangs; the `read_only` body's attempt timeout cuts the attempt at 2 s
/// while the write is in flight. The write may have run (it did), so the body must not run
/// again: the caller should get the timeout, with one audit row.
#[tokio::test(start_paused = true)]
async fn a_read_only_body_cut_during_its_nested_write_is_not_run_again() {
    let db = crate::harness::database();
    db.add_fault(
        d1_retry::testing::Fault::stall(Duration::from_secs(600))
            .after_execution()
            .when_sql_contains("'visit'")
            .times(1),
    );
    let start = tokio::time::Instant::now();
    let result = shop(db.clone(), Arc::default())
        .page_with_untimed_visit()
        .await;
    let took = start.elapsed();
    let visits = test_support::calls_with(&db, "'visit'");
    let rows = crate::harness::rows(&db, "audit");
    assert_eq!(
        (rows, visits),
        (1, 1),
        "the nested write ran {rows} times, sent {visits} times; the caller got {result:?} after {took:?}"
    );
    assert_timed_out(&result, "cut");
    assert_eq!(took, Duration::from_secs(2));
}

/// The same with the nested write time-limited like the body, but started later than the
/// body's attempt: the first read hangs 1.5 s (within the timeout), so the body's attempt
/// is cut at 2 s while the write's own timer would fire at 3.5 s. The write landed before
/// its answer hung: the body must not run again.
#[tokio::test(start_paused = true)]
async fn a_read_only_body_cut_during_its_nested_timed_write_started_late_is_not_run_again() {
    let db = crate::harness::database();
    db.add_fault(
        d1_retry::testing::Fault::stall(Duration::from_millis(1500))
            .when_sql_contains(READ_N)
            .times(1),
    );
    db.add_fault(
        d1_retry::testing::Fault::stall(Duration::from_secs(600))
            .after_execution()
            .when_sql_contains("'visit timed'")
            .times(1),
    );
    let start = tokio::time::Instant::now();
    let result = shop(db.clone(), Arc::default())
        .page_with_timed_visit()
        .await;
    let took = start.elapsed();
    let visits = test_support::calls_with(&db, "'visit timed'");
    let rows = crate::harness::rows(&db, "audit");
    assert_eq!(
        (rows, visits),
        (1, 1),
        "the nested write ran {rows} times, sent {visits} times; the caller got {result:?} after {took:?}"
    );
    assert_timed_out(&result, "cut");
    assert!(took <= Duration::from_secs(10), "{took:?}");
}

/// Calls that each answer within the attempt timeout (1.5 s of 2 s) but together outlast
/// the deadline (4 s): the third insert, in flight at the deadline, is cut there, not sent
/// again, and the caller has the deadline's timeout at 4 s exactly, in virtual time.
#[tokio::test(start_paused = true)]
async fn slow_calls_that_each_fit_the_timeout_are_cut_at_the_deadline() {
    let db = crate::harness::database();
    db.add_fault(d1_retry::testing::Fault::stall(Duration::from_millis(1500)));
    let effects = Arc::new(Effects::default());
    let start = tokio::time::Instant::now();
    let result = shop(db.clone(), effects.clone())
        .order_each_by_4s(&["tea", "cake", "jam", "bun"])
        .await;
    assert_eq!(start.elapsed(), Duration::from_secs(4));
    let error = result.expect_err("the deadline passed");
    assert!(
        error.to_string().contains("D1 call timed out") && error.to_string().contains("deadline"),
        "{error}"
    );
    let journal = db.calls();
    assert_eq!(journal.len(), 3, "{journal:#?}");
    assert!(journal[2].dropped && !journal[2].executed, "{journal:#?}");
    assert_eq!(crate::harness::rows(&db, "orders"), 2);
}

/// Declared `idempotent` by a user who was wrong: a plain insert, run again whole after a
/// cut.
#[d1_retry(idempotent, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
async fn vouched_wrongly(db: &D1Database) -> Result<(), Error> {
    db.prepare("INSERT INTO orders (item) VALUES ('vouched')")
        .run()
        .await?;
    Ok(())
}

/// The timed sweep must notice a cut write sent again, or every shape would pass
/// vacuously: the first stall past the timeout is caught.
#[tokio::test(start_paused = true)]
#[should_panic(expected = "control: call 0 Stalls(600s, BeforeExecution): a write was sent again")]
async fn the_timed_sweep_notices_a_cut_write_sent_again() {
    sweep_timed("control", TWO_S_BY_10_S, |db, _| async move {
        vouched_wrongly(&db).await
    })
    .await;
}

/// The same cut, with the nested write's future kept before it is awaited, which the
/// runtime's own loop (not the expansion's) retries: it too counts as in flight from its
/// first attempt until it ends, so the body is not run again.
#[tokio::test(start_paused = true)]
async fn a_read_only_body_cut_during_its_nested_kept_write_is_not_run_again() {
    let db = crate::harness::database();
    db.add_fault(
        d1_retry::testing::Fault::stall(Duration::from_secs(600))
            .after_execution()
            .when_sql_contains("'visit kept'")
            .times(1),
    );
    let result = shop(db.clone(), Arc::default())
        .page_with_kept_visit()
        .await;
    assert_eq!(
        test_support::calls_with(&db, "'visit kept'"),
        1,
        "{result:?}"
    );
    assert_eq!(crate::harness::rows(&db, "audit"), 1, "{result:?}");
    assert_timed_out(&result, "cut");
}

/// A `read_only` body under a policy constant's limits: each whole attempt is cut at the
/// policy's 2 s and run again, and the caller has its answer by its 10 s deadline. Before,
/// only the attribute's options limited a whole body, and the policy's were not applied.
#[tokio::test(start_paused = true)]
async fn a_read_only_body_under_a_policy_constant_s_limits() {
    sweep_timed(
        "read_only under BOUNDED",
        TWO_S_BY_10_S,
        |db, effects| async move { shop(db, effects).page_under_policy().await },
    )
    .await;
}

/// An `idempotent` upsert under a policy constant's limits: run again after a cut, by
/// contract, and ended by the deadline when every call stalls.
#[tokio::test(start_paused = true)]
async fn an_idempotent_upsert_under_a_policy_constant_s_limits() {
    let limits = Limits {
        idempotent: true,
        ..TWO_S_BY_10_S
    };
    sweep_timed(
        "idempotent under BOUNDED",
        limits,
        |db, effects| async move {
            let set = shop(db.clone(), effects)
                .save_setting_under_policy()
                .await?;
            Ok::<_, Error>((set, hits(&db)))
        },
    )
    .await;
}

/// An error type of the user's that cannot receive a timeout: under a policy with limits
/// (which the attribute cannot read), none applies to a whole body, as none applies to a
/// D1 call whose error type cannot receive one; it is not a compile error, since the
/// policy may have none. A per-call function with that error type still has its D1 calls
/// cut: each call's own error (`Error`) receives the timeout, and `?` converts it.
#[derive(Debug)]
struct NoTimeout(Error);

impl From<Error> for NoTimeout {
    fn from(e: Error) -> Self {
        NoTimeout(e)
    }
}

impl core::fmt::Display for NoTimeout {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "store: {}", self.0)
    }
}

impl std::error::Error for NoTimeout {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

#[d1_retry(read_only, policy = BOUNDED)]
async fn count_without_timeouts(db: &D1Database) -> Result<i64, NoTimeout> {
    // A second `.await`: a body of one D1 call is retried as that call, whose error
    // receives the timeout (`count_each_without_timeouts`).
    core::future::ready(()).await;
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}

#[d1_retry(policy = BOUNDED)]
async fn count_each_without_timeouts(db: &D1Database) -> Result<i64, NoTimeout> {
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}

#[tokio::test(start_paused = true)]
async fn without_from_timed_out_a_policy_s_limits_do_not_apply_to_a_whole_body() {
    let stalled = || {
        let db = crate::harness::database();
        db.add_fault(
            // A stall past the deadline that ends in a failure that ran nothing: with no
            // limit, not even the deadline bounds the retry after it.
            d1_retry::testing::Fault::new(Message::NetworkConnectionLost)
                .stalling(Duration::from_secs(60))
                .when_sql_contains(READ_N)
                .times(1),
        );
        db
    };
    let db = stalled();
    let start = tokio::time::Instant::now();
    let result = count_without_timeouts(&db).await;
    assert_eq!(result.ok(), Some(0));
    let took = start.elapsed();
    // The stall, then the first wait: 160-240 ms.
    assert!(
        (Duration::from_millis(60_160)..=Duration::from_millis(60_240)).contains(&took),
        "{took:?}"
    );
    assert_eq!(test_support::calls_with(&db, READ_N), 2);

    let db = stalled();
    let start = tokio::time::Instant::now();
    let result = count_each_without_timeouts(&db).await;
    assert_eq!(result.ok(), Some(0));
    let took = start.elapsed();
    // Cut at 2 s (the stall is before the statement ran), then the first wait.
    assert!(
        (Duration::from_millis(2160)..=Duration::from_millis(2240)).contains(&took),
        "{took:?}"
    );
    assert_eq!(test_support::calls_with(&db, READ_N), 2);
}

/// An error type with an elided lifetime (`Box<dyn Error + '_>`), which receives a
/// timeout: under a policy constant's limits, a `read_only` body's stalled attempt is cut at
/// its 2 s and run again. Before, the `'_` was read as a type the body cannot name, and no
/// limit applied: the read waited out its 600 s stall.
#[d1_retry(read_only, policy = BOUNDED)]
async fn count_boxed(db: &D1Database) -> Result<i64, Box<dyn std::error::Error + '_>> {
    core::future::ready(()).await;
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}

#[tokio::test(start_paused = true)]
async fn an_error_type_with_an_elided_lifetime_has_the_policy_s_limits() {
    let db = crate::harness::database();
    db.add_fault(
        d1_retry::testing::Fault::stall(Duration::from_secs(600))
            .when_sql_contains(READ_N)
            .times(1),
    );
    let start = tokio::time::Instant::now();
    let result = count_boxed(&db).await.map_err(|e| e.to_string());
    assert_eq!(result, Ok(0));
    let took = start.elapsed();
    assert!(
        (Duration::from_millis(2160)..=Duration::from_millis(2240)).contains(&took),
        "{took:?}"
    );
    assert_eq!(test_support::calls_with(&db, READ_N), 2);
}

/// A function with a deadline, calling one that retries on its own schedule (README,
/// "Stalls: time limits"): per call, the deadline is the function's own D1 calls', and the
/// nested function's retries run past it; retried whole, the body is bounded by it.
mod nested_schedules {
    use core::time::Duration;

    use d1_retry::d1_retry;
    use d1_retry::testing::{D1Database, Error, Fault, Message};
    use tokio::time::Instant;

    use crate::harness::{Count, NO_BUDGET, READ_N, count_orders, database, n};

    const READ_AUDIT: &str = "SELECT count(*) AS n FROM audit";

    #[d1_retry(policy = NO_BUDGET, deadline_ms = 1000)]
    async fn per_call(db: &D1Database) -> Result<i64, Error> {
        let orders = count_orders(db).await?;
        let audit = db.prepare(READ_AUDIT).first::<Count>(None).await?;
        Ok(orders + n(audit))
    }

    #[d1_retry(read_only, policy = NO_BUDGET, deadline_ms = 1000)]
    async fn whole(db: &D1Database) -> Result<i64, Error> {
        count_orders(db).await
    }

    /// The nested read fails before it ran four times: its own retries wait about 3 s.
    fn failing_four_times() -> D1Database {
        let db = database();
        db.add_fault(Fault::new(Message::CannotResolve).times(4));
        db
    }

    /// The nested function's read succeeds at its fifth call, past the deadline; the
    /// function's own read after it is then out of time.
    #[tokio::test(start_paused = true)]
    async fn a_nested_function_s_retries_are_not_cut_by_a_per_call_deadline() {
        let db = failing_four_times();
        let start = Instant::now();
        let result = per_call(&db).await;
        assert!(
            start.elapsed() > Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
        assert!(result.is_err(), "{result:?}");
        let nested = db
            .calls()
            .iter()
            .filter(|call| call.statements[0].0 == READ_N)
            .count();
        assert_eq!(nested, 5, "{:#?}", db.calls());
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_retried_whole_is_bounded_by_its_deadline() {
        let db = failing_four_times();
        let start = Instant::now();
        assert!(whole(&db).await.is_err());
        assert!(
            start.elapsed() <= Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
        assert!(db.calls().len() < 5, "{:#?}", db.calls());
    }
}
