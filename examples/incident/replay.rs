//! The incident replay behind `cargo run --example incident`, shared with the test that
//! checks it (`tests/incident_replay.rs`, which includes this file by `#[path]`).
//!
//! From 16:45:38 UTC on 2026-10-16, for about three minutes, D1 answered `D1_ERROR:
//! internal error; reference = ...` 9, 24, 22 and 8 times a minute, then recovered by
//! itself. Here six callers keep a steady workload of reads and writes going while a local
//! D1 fails on that timeline; tokio's paused clock compresses the six minutes into well
//! under a second. The same repository runs twice: once with `#[d1_retry]` on its methods,
//! once without. Both meet exactly the same 63 D1 errors at the same moments.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::time::Duration;

use d1_retry::d1_retry;
use d1_retry::testing::{Clock, D1Database, Error, Fault, Message};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

const SEED: u64 = 20261016;
const CALLERS: u64 = 6;
/// Minutes replayed, from 16:44:38 UTC: one before the incident, four of it, one after.
const MINUTES: usize = 6;
/// D1 errors in each replayed minute (the incident's 9, 24, 22 and 8).
const ERRORS_PER_MINUTE: [u32; MINUTES] = [0, 9, 24, 22, 8, 0];
const MINUTE: Duration = Duration::from_secs(60);

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct User {
    id: i64,
    name: String,
}

/// The repository a Worker would have: a read, an upsert that is safe to repeat, and an
/// append that is not.
trait Store {
    async fn find_user(&self, id: i64) -> Result<Option<User>, Error>;
    async fn touch_session(&self, user: i64, at: i64) -> Result<(), Error>;
    async fn log_step(&self, request: i64, job: i64) -> Result<(), Error>;
}

/// With d1-retry: the attribute is the only difference.
struct WithRetry {
    db: D1Database,
}

impl Store for WithRetry {
    #[d1_retry]
    async fn find_user(&self, id: i64) -> Result<Option<User>, Error> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(&[id.into()])?
            .first(None)
            .await
    }

    #[d1_retry(idempotent)]
    async fn touch_session(&self, user: i64, at: i64) -> Result<(), Error> {
        self.db
            .prepare(
                "INSERT INTO sessions (user_id, seen_at) VALUES (?1, ?2) \
                 ON CONFLICT (user_id) DO UPDATE SET seen_at = excluded.seen_at",
            )
            .bind(&[user.into(), at.into()])?
            .run()
            .await
            .map(|_| ())
    }

    #[d1_retry]
    async fn log_step(&self, request: i64, job: i64) -> Result<(), Error> {
        self.db
            .prepare("INSERT INTO job_log (request_id, job_id) VALUES (?1, ?2)")
            .bind(&[request.into(), job.into()])?
            .run()
            .await
            .map(|_| ())
    }
}

/// Without d1-retry: the same bodies.
struct WithoutRetry {
    db: D1Database,
}

impl Store for WithoutRetry {
    async fn find_user(&self, id: i64) -> Result<Option<User>, Error> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(&[id.into()])?
            .first(None)
            .await
    }

    async fn touch_session(&self, user: i64, at: i64) -> Result<(), Error> {
        self.db
            .prepare(
                "INSERT INTO sessions (user_id, seen_at) VALUES (?1, ?2) \
                 ON CONFLICT (user_id) DO UPDATE SET seen_at = excluded.seen_at",
            )
            .bind(&[user.into(), at.into()])?
            .run()
            .await
            .map(|_| ())
    }

    async fn log_step(&self, request: i64, job: i64) -> Result<(), Error> {
        self.db
            .prepare("INSERT INTO job_log (request_id, job_id) VALUES (?1, ?2)")
            .bind(&[request.into(), job.into()])?
            .run()
            .await
            .map(|_| ())
    }
}

#[derive(Clone, Copy, Default)]
struct Minute {
    requests: u64,
    d1_calls: u64,
    d1_errors: u64,
    failed: u64,
}

/// One replay of the six minutes, with or without d1-retry.
struct Run {
    minutes: [Minute; MINUTES],
    /// Requests whose write may have run, returned to the caller rather than run again.
    maybe_executed_writes: u64,
    /// Appends that are in the database more than once (must be 0).
    duplicated_writes: i64,
}

fn open_database() -> D1Database {
    let db = D1Database::open_in_memory().expect("an in-memory SQLite opens");
    db.with_connection(|c| {
        c.execute_batch(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
             CREATE TABLE sessions (user_id INTEGER PRIMARY KEY, seen_at INTEGER NOT NULL);
             CREATE TABLE job_log (request_id INTEGER NOT NULL, job_id INTEGER NOT NULL);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
             INSERT INTO users (id, name) SELECT i, 'user ' || i FROM n;",
        )
    })
    .expect("the schema applies");
    db
}

/// The incident's timeline: in each minute, that minute's errors at seeded random moments.
/// Half strike before D1 runs the statement, half after (the message is "maybe executed":
/// D1 does not say which).
fn incident(db: &D1Database, clock: &Clock) {
    let mut rng = SmallRng::seed_from_u64(SEED);
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for (minute, errors) in ERRORS_PER_MINUTE.into_iter().enumerate() {
        for _ in 0..errors {
            let at = MINUTE * u32::try_from(minute).unwrap_or(0)
                + Duration::from_millis(rng.random_range(0..60_000));
            if rng.random_bool(0.5) {
                before.push(at);
            } else {
                after.push(at);
            }
        }
    }
    db.add_fault(Fault::new(Message::InternalError).at(clock, before));
    db.add_fault(
        Fault::new(Message::InternalError)
            .after_execution()
            .at(clock, after),
    );
}

fn minute_of(start: Instant) -> usize {
    let elapsed = start.elapsed().as_secs() / 60;
    usize::try_from(elapsed)
        .unwrap_or(usize::MAX)
        .min(MINUTES - 1)
}

/// One caller: a request every two seconds or so, until the six minutes are over.
async fn caller(
    store: &impl Store,
    id: u64,
    start: Instant,
    minutes: &RefCell<[Minute; MINUTES]>,
    maybe_writes: &RefCell<u64>,
) {
    let mut rng = SmallRng::seed_from_u64(SEED ^ id);
    let mut request = 0i64;
    let caller = i64::try_from(id).unwrap_or(0);
    // Callers start spread over the first two seconds.
    tokio::time::sleep(Duration::from_millis(rng.random_range(0..2_000))).await;
    let mut due = Instant::now();
    while start.elapsed() < MINUTE * u32::try_from(MINUTES).unwrap_or(0) {
        request += 1;
        // The next request is due about two seconds after this one started, however long
        // this one takes: traffic does not slow down because D1 is failing.
        due += Duration::from_millis(rng.random_range(1_500..2_500));
        let request_id = caller * 1_000_000 + request;
        minutes.borrow_mut()[minute_of(start)].requests += 1;
        let kind = rng.random_range(0..10);
        let user = rng.random_range(1..=100);
        let result = match kind {
            0..=6 => store.find_user(user).await.map(|_| ()),
            7 | 8 => {
                let at = i64::try_from(start.elapsed().as_millis()).unwrap_or(0);
                store.touch_session(user, at).await
            }
            _ => store.log_step(request_id, caller).await,
        };
        if let Err(error) = result {
            minutes.borrow_mut()[minute_of(start)].failed += 1;
            if kind == 9 && error.to_string().contains("internal error") {
                *maybe_writes.borrow_mut() += 1;
            }
        }
        tokio::time::sleep_until(due).await;
    }
}

async fn replay_once(store: &impl Store, db: &D1Database) -> Run {
    let start = Instant::now();
    let clock = Clock::tokio();
    incident(db, &clock);
    let minutes = RefCell::new([Minute::default(); MINUTES]);
    let maybe_writes = RefCell::new(0);
    let monitor = async {
        // D1's own counts, read at each minute's end.
        let mut last = db.stats();
        for minute in 0..MINUTES {
            tokio::time::sleep_until(start + MINUTE * u32::try_from(minute + 1).unwrap_or(0)).await;
            let now = db.stats();
            let mut m = minutes.borrow_mut();
            m[minute].d1_calls = now.calls - last.calls;
            m[minute].d1_errors = (now.injected_before + now.injected_after)
                - (last.injected_before + last.injected_after);
            last = now;
        }
    };
    let callers = async {
        let mut all = Vec::new();
        for id in 0..CALLERS {
            all.push(caller(store, id, start, &minutes, &maybe_writes));
        }
        for_all(all).await;
    };
    tokio::join!(monitor, callers);
    // Requests still retrying at the six-minute mark finish late; their calls count in the
    // last minute.
    let end = db.stats();
    let counted: u64 = minutes.borrow().iter().map(|m| m.d1_calls).sum();
    minutes.borrow_mut()[MINUTES - 1].d1_calls += end.calls - counted;
    let duplicated_writes = db
        .with_connection(|c| {
            c.query_row(
                "SELECT count(*) FROM (SELECT request_id FROM job_log GROUP BY request_id HAVING count(*) > 1)",
                [],
                |row| row.get(0),
            )
        })
        .expect("the duplicate count reads");
    Run {
        minutes: *minutes.borrow(),
        maybe_executed_writes: *maybe_writes.borrow(),
        duplicated_writes,
    }
}

/// Runs futures concurrently on the current task (no spawning, no `Send`, no `'static`).
async fn for_all<F: std::future::Future<Output = ()>>(futures: Vec<F>) {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    std::future::poll_fn(|cx| {
        futures.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if futures.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
}

fn label(minute: usize) -> String {
    // 16:44:38 UTC plus `minute` minutes.
    let total = 16 * 60 + 44 + minute;
    format!("{:02}:{:02}:38", total / 60, total % 60)
}

fn bar(n: u64) -> String {
    "█".repeat(usize::try_from(n).unwrap_or(0))
}

/// Both replays of the incident.
pub struct Report {
    without: Run,
    with: Run,
}

/// The totals over the six minutes: the report's `total` row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Totals {
    /// Requests made (in the run with d1-retry).
    pub requests: u64,
    /// D1 errors injected.
    pub d1_errors: u64,
    /// Requests that failed without d1-retry.
    pub failed_without: u64,
    /// Calls that reached D1 with d1-retry.
    pub d1_calls: u64,
    /// Retries d1-retry made.
    pub retries: u64,
    /// Requests that failed with d1-retry.
    pub failed_with: u64,
}

/// Replays the incident without d1-retry, then with it, each on a fresh local D1.
pub fn replay() -> Report {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    runtime.block_on(async {
        let db = open_database();
        let without = replay_once(&WithoutRetry { db: db.clone() }, &db).await;
        let db = open_database();
        let with = replay_once(&WithRetry { db: db.clone() }, &db).await;
        Report { without, with }
    })
}

impl Report {
    /// The six minutes' totals.
    pub fn totals(&self) -> Totals {
        let mut totals = Totals {
            requests: 0,
            d1_errors: 0,
            failed_without: 0,
            d1_calls: 0,
            retries: 0,
            failed_with: 0,
        };
        for (a, b) in self.without.minutes.iter().zip(&self.with.minutes) {
            totals.requests += b.requests;
            totals.d1_errors += b.d1_errors;
            totals.failed_without += a.failed;
            totals.d1_calls += b.d1_calls;
            totals.retries += b.d1_calls.saturating_sub(b.requests);
            totals.failed_with += b.failed;
        }
        totals
    }

    /// Appends in the database more than once, in both runs together (must be 0).
    pub fn writes_applied_twice(&self) -> i64 {
        self.without.duplicated_writes + self.with.duplicated_writes
    }

    /// The report `cargo run --example incident` prints, which the README shows.
    pub fn text(&self) -> String {
        let (without, with) = (&self.without, &self.with);
        let totals = self.totals();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "d1-retry incident replay: 2026-10-16 16:44:38-16:50:38 UTC, {CALLERS} callers, \
         reads / idempotent upserts / appends 7:2:1, D1 failing with\n\
         `D1_ERROR: internal error; reference = ...` 9, 24, 22 and 8 times a minute \
         (virtual time, tokio's paused clock)\n"
        );
        let _ = writeln!(
            out,
            "{:<9} {:>8} {:>9} | {:>22} | {:>9} {:>8} {:>22}",
            "minute",
            "requests",
            "D1 errors",
            "without d1-retry",
            "D1 calls",
            "retries",
            "with d1-retry"
        );
        let _ = writeln!(
            out,
            "{:<9} {:>8} {:>9} | {:>22} | {:>9} {:>8} {:>22}",
            "", "", "", "failed requests", "", "", "failed requests"
        );
        for minute in 0..MINUTES {
            let (a, b) = (without.minutes[minute], with.minutes[minute]);
            let retries = b.d1_calls.saturating_sub(b.requests);
            let _ = writeln!(
                out,
                "{:<9} {:>8} {:>9} | {:>22} | {:>9} {:>8} {:>22}",
                label(minute),
                b.requests,
                b.d1_errors,
                a.failed,
                b.d1_calls,
                retries,
                b.failed
            );
        }
        let _ = writeln!(
            out,
            "{:<9} {:>8} {:>9} | {:>22} | {:>9} {:>8} {:>22}\n",
            "total",
            totals.requests,
            totals.d1_errors,
            totals.failed_without,
            totals.d1_calls,
            totals.retries,
            totals.failed_with
        );

        let _ = writeln!(out, "failed requests per minute (█ = one request)");
        for minute in 0..MINUTES {
            let (a, b) = (without.minutes[minute].failed, with.minutes[minute].failed);
            let _ = writeln!(out, "{}  without {:<26} {a}", label(minute), bar(a));
            let _ = writeln!(out, "{:<8}  with    {:<26} {b}", "", bar(b));
        }
        let requests_without: u64 = without.minutes.iter().map(|m| m.requests).sum();
        if requests_without != totals.requests {
            let _ = writeln!(
                out,
                "\n(the run without d1-retry made {requests_without} requests, the run with it {})",
                totals.requests
            );
        }
        let (failed_without, failed_with) = (totals.failed_without, totals.failed_with);
        let twice = self.writes_applied_twice();
        let _ = writeln!(
            out,
            "\nverdict: D1 failed {} times; {failed_without} requests failed without d1-retry, \
         {failed_with} with it ({} appends that may have run, handed back rather than run \
         twice), after {} retries; writes applied twice: {twice}.",
            totals.d1_errors, with.maybe_executed_writes, totals.retries,
        );
        out
    }
}
