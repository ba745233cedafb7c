//! The sweep every shape goes through, the schema the shapes write, and the helpers they
//! share.

use core::fmt::Debug;
use core::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use d1_retry::testing::{Call, D1Database, Error, Fault, Message, Operation, Timing};
use d1_retry::{RetryPolicy, d1_retry};
use test_support::count;

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
            let not_executed = message == Message::CannotResolve;
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
