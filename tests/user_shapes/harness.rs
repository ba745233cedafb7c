//! The sweep every shape goes through, the schema the shapes write, and the helpers they
//! share.

use core::fmt::{Debug, Display};
use core::future::Future;
use core::time::Duration;
use std::sync::{Arc, Mutex, PoisonError};

use d1_retry::testing::{Call, D1Database, Error, Fault, Message, Operation, Timing};
use d1_retry::{RetryPolicy, d1_retry};
use test_support::count;
use tokio::time::Instant;

/// Without a retry budget: a sweep makes hundreds of failing calls in one process, and a
/// budget spent by one case would stop the retries of the next.
pub const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();

pub const READ_N: &str = "SELECT count(*) AS n FROM orders";
pub const INSERT_ITEM: &str = "INSERT INTO orders (item) VALUES (?1)";

#[derive(serde::Deserialize, Debug)]
pub struct Count {
    pub n: i64,
}

/// A count read back, or -1 when the read found no row (so a lost row shows).
pub fn n(row: Option<Count>) -> i64 {
    row.map_or(-1, |r| r.n)
}

/// The orders counted, retried call by call: the read that ends the `read_only` bodies of
/// the suites checking whether such a body is run again.
#[d1_retry(policy = NO_BUDGET)]
pub async fn count_orders(db: &D1Database) -> Result<i64, Error> {
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}

/// [`count_orders`] fails once, "maybe executed", after it ran: a body that wrote before it
/// must not run again; one that only read is run again.
pub fn count_fails_once_after_running(db: &D1Database) {
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .when_sql_contains(READ_N)
            .times(1),
    );
}

/// Orders, an audit log, an archive and a counter: the tables the shapes write.
pub fn database() -> D1Database {
    let db = D1Database::open_in_memory().expect("an in-memory SQLite opens");
    db.with_connection(|c| {
        c.execute_batch(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL);
             CREATE TABLE audit (what TEXT NOT NULL);
             CREATE TABLE archive (item TEXT NOT NULL);
             CREATE TABLE counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL);
             INSERT INTO counters VALUES ('hits', 0);",
        )
    })
    .expect("the schema is valid");
    db
}

pub fn rows(db: &D1Database, table: &str) -> i64 {
    count(db, &format!("SELECT count(*) FROM {table}"))
}

/// The counter that `UPDATE counters` statements bump: a write that adds no row.
pub fn hits(db: &D1Database) -> i64 {
    count(db, "SELECT n FROM counters WHERE name = 'hits'")
}

/// The largest number of times any one order item is in the table.
pub fn most_copies(db: &D1Database) -> i64 {
    count(
        db,
        "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM orders GROUP BY item)",
    )
}

/// Side effects outside D1 (a queue send, an email, a counter), by tag: the code around a
/// D1 call, which a retry of that call must not run again.
#[derive(Default)]
pub struct Effects(Mutex<Vec<String>>);

impl Effects {
    pub fn push(&self, tag: impl Into<String>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(tag.into());
    }

    fn tags(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn sorted(&self) -> Vec<String> {
        let mut tags = self.tags();
        tags.sort();
        tags
    }
}

/// Everything the shapes' tables hold that a write can change.
fn snapshot(db: &D1Database) -> (i64, i64, i64, i64) {
    (
        rows(db, "orders"),
        rows(db, "audit"),
        rows(db, "archive"),
        hits(db),
    )
}

/// Whether the call may have written, by the verdict the README gives its SQL: line by
/// line for `exec`, as one text for a prepared statement.
fn may_write(call: &Call) -> bool {
    call.statements.iter().any(|(sql, _)| {
        if call.operation == Operation::Exec {
            !d1_retry::is_read_only(sql)
        } else {
            !d1_retry::is_read_only_prepared(sql)
        }
    })
}

fn same_call(a: &Call, b: &Call) -> bool {
    a.operation == b.operation && a.statements == b.statements
}

/// The failures a sweep injects at each call: D1's "not executed" (which it sends before a
/// statement runs), and "maybe executed" before and after the statement ran, in the
/// wording of two different messages (the second is the 2026-10-16 incident's).
const FAILURES: [(Message, Timing); 4] = [
    (Message::CannotResolve, Timing::BeforeExecution),
    (Message::NetworkConnectionLost, Timing::BeforeExecution),
    (Message::NetworkConnectionLost, Timing::AfterExecution),
    (Message::InternalError, Timing::AfterExecution),
];

/// Runs `shape` once clean, then once per call index of the clean run and per failure,
/// each on a fresh database, and checks the invariants of the suite (see the crate docs).
pub async fn sweep<F, Fut, T, E>(name: &str, shape: F)
where
    F: Fn(D1Database, Arc<Effects>) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    T: Debug + PartialEq,
    E: Debug,
{
    sweep_leaving(name, &[], shape).await;
}

/// [`sweep`], for a shape some of whose calls the README says are left as written: those
/// whose SQL holds one of `left_as_written`. A failure of one of them is not retried,
/// whatever its class: it is sent once and the caller gets the error.
pub async fn sweep_leaving<F, Fut, T, E>(name: &str, left_as_written: &[&str], shape: F)
where
    F: Fn(D1Database, Arc<Effects>) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    T: Debug + PartialEq,
    E: Debug,
{
    let is_left = |call: &Call| {
        call.statements
            .iter()
            .any(|(sql, _)| left_as_written.iter().any(|f| sql.contains(f)))
    };
    let db = database();
    let effects = Arc::new(Effects::default());
    let clean = shape(db.clone(), effects.clone()).await;
    assert!(clean.is_ok(), "{name}: the clean run failed: {clean:?}");
    let clean = clean.ok();
    let clean_state = snapshot(&db);
    let clean_effects = effects.sorted();
    let clean_journal = db.calls();
    assert!(
        !clean_journal.is_empty(),
        "{name}: the shape made no D1 call"
    );
    for fragment in left_as_written {
        assert!(
            clean_journal
                .iter()
                .any(|c| c.statements.iter().any(|(sql, _)| sql.contains(fragment))),
            "{name}: no call holds {fragment:?}, said to be left as written"
        );
    }
    for index in 0..clean_journal.len() as u64 {
        for (message, timing) in FAILURES {
            let case = format!("{name}: call {index} {message:?} {timing:?}");
            let db = database();
            db.add_fault(
                Fault::new(message)
                    .timing(timing)
                    .on_calls(index..index + 1),
            );
            let effects = Arc::new(Effects::default());
            let result = shape(db.clone(), effects.clone()).await;
            let journal = db.calls();

            let mut executed: Vec<&Call> = Vec::new();
            for call in journal.iter().filter(|c| c.executed && may_write(c)) {
                assert!(
                    !executed.iter().any(|e| same_call(e, call)),
                    "{case}: a write executed twice: {:?}\njournal: {journal:#?}",
                    call.statements
                );
                executed.push(call);
            }

            let tags = effects.tags();
            for (i, tag) in tags.iter().enumerate() {
                assert!(
                    !tags[..i].contains(tag),
                    "{case}: the side effect {tag:?} happened twice: {tags:?}"
                );
                assert!(
                    clean_effects.contains(tag),
                    "{case}: the side effect {tag:?} is not one of the clean run's"
                );
            }

            let failed = journal
                .iter()
                .find(|c| c.injected.is_some())
                .unwrap_or_else(|| panic!("{case}: the failure struck no call"));
            let sent = journal.iter().filter(|c| same_call(c, failed)).count();
            if is_left(failed) {
                assert!(
                    result.is_err(),
                    "{case}: a call left as written was retried: {result:?}"
                );
                assert_eq!(sent, 1, "{case}: a call left as written was sent again");
                continue;
            }
            // A write through `first` or `raw`, whose error may be a row's text, is never
            // retried, whatever the failure said (`Access::DecodedWrite`).
            let decoded = matches!(failed.operation, Operation::First | Operation::Raw);
            let not_executed = message == Message::CannotResolve && !decoded;
            if !not_executed && may_write(failed) {
                assert_eq!(
                    sent, 1,
                    "{case}: a write was sent again after a maybe-executed failure: {:?}",
                    failed.statements
                );
                assert!(
                    result.is_err(),
                    "{case}: a write that failed maybe executed did not hand back its error"
                );
                continue;
            }
            assert_eq!(
                result.as_ref().ok(),
                clean.as_ref(),
                "{case}: a retryable failure of {:?} was not retried to the clean outcome",
                failed.statements
            );
            assert_eq!(snapshot(&db), clean_state, "{case}");
            assert_eq!(effects.sorted(), clean_effects, "{case}");
        }
    }
}

/// The time limits a shape runs under (given as attribute options, or carried by a policy
/// constant the attribute cannot read), as [`sweep_timed`] holds it to them.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The attempt timeout: each D1 call (each whole attempt of a `read_only` or
    /// `idempotent` body) is cut there.
    pub attempt: Duration,
    /// The call's deadline, if it has one: the caller has its answer by then.
    pub deadline: Option<Duration>,
    /// `#[d1_retry(idempotent)]`: the user vouched that the whole body may run again, so a
    /// write that may have run is made again, by contract.
    pub idempotent: bool,
    /// `#[d1_retry(read_only)]` with a nested write: once an attempt may have written, the
    /// README says it is not run again, so a failure after the write, even a retryable
    /// one, hands the caller its error.
    pub read_only_body: bool,
}

/// The waits of a whole call at most, by the README: 200, 400, 800 and 1600 ms, jittered
/// up to 120 %.
const MOST_WAITING: Duration = Duration::from_millis(3600);

/// Longer than any limit and any deadline of the shapes: a stall that only a cut ends.
const FOREVER: Duration = Duration::from_secs(600);

/// What a timed sweep does to a call.
#[derive(Clone, Copy, Debug)]
enum Injected {
    /// One of [`FAILURES`], at once.
    Fails(Message, Timing),
    /// The call hangs this long (before the statement runs, or after it ran), then answers.
    Stalls(Duration, Timing),
    /// The call hangs this long, then fails.
    StallsThenFails(Duration, Message, Timing),
    /// This call and every call after it hang for good: the limits are spent.
    StallsFromHereOn(Timing),
}

impl Injected {
    /// Everything a timed sweep injects at each call of a shape with `limits`.
    fn all(limits: &Limits) -> Vec<Injected> {
        // The stalls first: a cut is what this sweep is for.
        let mut all = Vec::new();
        for timing in [Timing::BeforeExecution, Timing::AfterExecution] {
            all.extend([
                // Longer than the attempt timeout: the call is cut.
                Injected::Stalls(FOREVER, timing),
                // Shorter: the call is waited for.
                Injected::Stalls(limits.attempt * 3 / 4, timing),
                // Exactly the timeout: the timer and the answer come at one instant.
                Injected::Stalls(limits.attempt, timing),
                Injected::StallsFromHereOn(timing),
            ]);
        }
        all.extend([
            // A short hang, then a failure of each class.
            Injected::StallsThenFails(
                limits.attempt / 2,
                Message::CannotResolve,
                Timing::BeforeExecution,
            ),
            Injected::StallsThenFails(
                limits.attempt / 2,
                Message::InternalError,
                Timing::AfterExecution,
            ),
            // A hang past the timeout that would have ended in "not executed": the caller
            // cannot know that, the call is cut as maybe executed.
            Injected::StallsThenFails(FOREVER, Message::CannotResolve, Timing::BeforeExecution),
        ]);
        all.extend(
            FAILURES
                .iter()
                .map(|&(message, timing)| Injected::Fails(message, timing)),
        );
        all
    }

    fn fault(self, index: u64) -> Fault {
        let once = index..index + 1;
        match self {
            Injected::Fails(message, timing) => Fault::new(message).timing(timing).on_calls(once),
            Injected::Stalls(stall, timing) => Fault::stall(stall).timing(timing).on_calls(once),
            Injected::StallsThenFails(stall, message, timing) => Fault::new(message)
                .timing(timing)
                .stalling(stall)
                .on_calls(once),
            Injected::StallsFromHereOn(timing) => Fault::stall(FOREVER)
                .timing(timing)
                .on_calls(index..u64::MAX),
        }
    }
}

/// The time-limited counterpart of [`sweep`], for a shape annotated with time limits.
///
/// Runs `shape` once clean, then once per call index of the clean run and per injection
/// ([`Injected::all`]: the ordinary failures, stalls longer than, shorter than and equal to
/// the attempt timeout before and after the statement runs, a short stall then a failure, a
/// long stall then a "not executed" failure, and a stall of every call from that index on),
/// each on a fresh database, on tokio's paused clock (the caller's test must pause it), and
/// checks:
/// - no write is executed twice (unless the body is `idempotent`), and a side effect
///   happens at most once, and only if the clean run had it;
/// - the call answers by its deadline, in virtual time; without one, by the attempts and
///   waits the policy allows;
/// - a call cut by a limit counts as maybe executed: a write cut (before or after it ran)
///   is never sent again, and its caller gets an error, the `TimedOut` converted into its
///   own (its text says the call timed out); a read cut is made again, to the clean run's
///   outcome;
/// - a stall shorter than the timeout is waited for: the clean outcome, no call made again,
///   late by the stall exactly;
/// - the ordinary failures behave as in [`sweep`];
/// - a stall of every call from some index on ends in a timeout error.
pub async fn sweep_timed<F, Fut, T, E>(name: &str, limits: Limits, shape: F)
where
    F: Fn(D1Database, Arc<Effects>) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    T: Debug + PartialEq,
    E: Debug + Display,
{
    // A run that never answers fails its case, a virtual hour later, rather than hanging.
    let run = |db: D1Database, effects: Arc<Effects>| {
        let future = shape(db, effects);
        async move {
            let start = Instant::now();
            let result = tokio::time::timeout(Duration::from_secs(3600), future).await;
            (result, start.elapsed())
        }
    };
    let db = database();
    let effects = Arc::new(Effects::default());
    let (clean, took) = run(db.clone(), effects.clone()).await;
    let clean = clean.unwrap_or_else(|_| panic!("{name}: the clean run hung"));
    assert!(clean.is_ok(), "{name}: the clean run failed: {clean:?}");
    assert_eq!(took, Duration::ZERO, "{name}: the clean run took time");
    let clean = clean.ok();
    let clean_state = snapshot(&db);
    let clean_effects = effects.sorted();
    let clean_journal = db.calls();
    assert!(
        !clean_journal.is_empty(),
        "{name}: the shape made no D1 call"
    );
    // Without a deadline, the policy's attempts (5) each cut at the timeout, and its waits.
    let bound = limits.deadline.unwrap_or(limits.attempt * 5 + MOST_WAITING);
    for index in 0..clean_journal.len() as u64 {
        for injected in Injected::all(&limits) {
            let case = format!("{name}: call {index} {injected:?}");
            let db = database();
            db.add_fault(injected.fault(index));
            let effects = Arc::new(Effects::default());
            let (result, took) = run(db.clone(), effects.clone()).await;
            let journal = db.calls();
            let result = result.unwrap_or_else(|_| {
                panic!("{case}: the call never answered\njournal: {journal:#?}")
            });

            if !limits.idempotent {
                let mut executed: Vec<&Call> = Vec::new();
                for call in journal.iter().filter(|c| c.executed && may_write(c)) {
                    assert!(
                        !executed.iter().any(|e| same_call(e, call)),
                        "{case}: a write executed twice: {:?}\njournal: {journal:#?}",
                        call.statements
                    );
                    executed.push(call);
                }
            }

            let tags = effects.tags();
            for (i, tag) in tags.iter().enumerate() {
                assert!(
                    !tags[..i].contains(tag),
                    "{case}: the side effect {tag:?} happened twice: {tags:?}"
                );
                assert!(
                    clean_effects.contains(tag),
                    "{case}: the side effect {tag:?} is not one of the clean run's"
                );
            }

            assert!(
                took <= bound,
                "{case}: answered after {took:?}, past {bound:?}: {result:?}\njournal: {journal:#?}"
            );

            let failed = journal
                .iter()
                .filter(|c| c.injected.is_some() || c.stalled.is_some())
                .min_by_key(|c| c.index)
                .unwrap_or_else(|| panic!("{case}: the fault struck no call"));
            let sent = journal.iter().filter(|c| same_call(c, failed)).count();
            let timed_out = |result: &Result<T, E>| {
                result
                    .as_ref()
                    .err()
                    .is_some_and(|e| e.to_string().contains("D1 call timed out"))
            };
            match injected {
                Injected::Stalls(stall, _) | Injected::StallsThenFails(stall, ..)
                    if stall > limits.attempt =>
                {
                    assert!(
                        failed.dropped,
                        "{case}: a stall past the timeout was not cut"
                    );
                }
                Injected::Stalls(stall, _) | Injected::StallsThenFails(stall, ..)
                    if stall < limits.attempt =>
                {
                    assert!(
                        !failed.dropped,
                        "{case}: a stall within the timeout was cut"
                    );
                }
                _ => {}
            }
            if let Injected::StallsFromHereOn(_) = injected {
                assert!(
                    timed_out(&result),
                    "{case}: a stall of every call did not end in a timeout: {result:?}"
                );
                if may_write(failed) && !limits.idempotent {
                    assert_eq!(sent, 1, "{case}: a cut write was sent again");
                }
                continue;
            }
            let cut = failed.dropped;
            let not_executed = !cut
                && failed
                    .injected
                    .is_none_or(|(message, _)| message == Message::CannotResolve);
            if !not_executed && may_write(failed) && !limits.idempotent {
                assert_eq!(
                    sent, 1,
                    "{case}: a write was sent again after it may have run: {:?}\njournal: {journal:#?}",
                    failed.statements
                );
                assert!(
                    result.is_err(),
                    "{case}: a write that may have run did not hand back an error: {result:?}"
                );
                if cut {
                    assert!(
                        timed_out(&result),
                        "{case}: a cut write's caller did not get the timeout: {result:?}"
                    );
                }
                continue;
            }
            let wrote_before = journal
                .iter()
                .any(|c| c.index < failed.index && may_write(c));
            let failed_at_all = cut || failed.injected.is_some();
            if limits.read_only_body && wrote_before && failed_at_all {
                assert!(
                    result.is_err(),
                    "{case}: a read_only attempt that wrote was run again: {result:?}\njournal: {journal:#?}"
                );
                continue;
            }
            assert_eq!(
                result.as_ref().ok(),
                clean.as_ref(),
                "{case}: a retryable failure of {:?} was not retried to the clean outcome\njournal: {journal:#?}",
                failed.statements
            );
            assert_eq!(snapshot(&db), clean_state, "{case}");
            assert_eq!(effects.sorted(), clean_effects, "{case}");
            if cut {
                assert!(took >= limits.attempt, "{case}: cut before the timeout");
                assert!(
                    journal
                        .iter()
                        .any(|c| c.index > failed.index && same_call(c, failed) && !c.dropped),
                    "{case}: the cut read was not made again"
                );
            } else if failed.injected.is_none() {
                // Waited for: late by the stall, and nothing made again.
                assert_eq!(Some(took), failed.stalled, "{case}");
                assert_eq!(journal.len(), clean_journal.len(), "{case}");
            }
        }
    }
}

/// Declared `idempotent` by a user who was wrong: it inserts, and the whole body runs
/// again after the read that follows fails.
#[d1_retry(idempotent, policy = NO_BUDGET)]
async fn vouched_wrongly(db: &D1Database) -> Result<(), Error> {
    db.prepare("INSERT INTO orders (item) VALUES ('vouched')")
        .run()
        .await?;
    db.prepare(READ_N).first::<Count>(None).await?;
    Ok(())
}

/// The sweep itself must notice a write made again, or every shape would pass vacuously:
/// the first maybe-executed failure of the insert is caught.
#[tokio::test(start_paused = true)]
#[should_panic(
    expected = "control: call 0 NetworkConnectionLost BeforeExecution: a write was sent again"
)]
async fn the_sweep_notices_a_write_sent_again() {
    sweep("control", |db, _| async move { vouched_wrongly(&db).await }).await;
}

/// The caller got a d1-retry timeout (`TimedOut`, rendered into the caller's error).
#[track_caller]
pub fn assert_timed_out<T: Debug, E: Debug + Display>(result: &Result<T, E>, case: &str) {
    assert!(
        result
            .as_ref()
            .is_err_and(|e| e.to_string().contains("D1 call timed out")),
        "{case}: {result:?}"
    );
}
