//! The stall replay behind `cargo run --example stall`, shared with the test that checks it
//! (`tests/stall_replay.rs`, which includes this file by `#[path]`).
//!
//! Operators report a small D1 database unresponsive for 60-80 seconds, several times in
//! two days: every query made meanwhile hung, all of them failed at the same millisecond,
//! then D1 recovered by itself. Here six callers send a Worker's traffic (reads, idempotent
//! upserts and appends, each request on its own, as HTTP requests arrive) through
//! `#[d1_retry]` repository methods for three minutes, while a local D1 hangs for the
//! middle minute. The same traffic runs twice: the methods without time limits, then with
//! the recommended ones. tokio's paused clock compresses the six minutes into well under a
//! second of real time; every latency printed is virtual.

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::ops::Range;
use std::time::Duration;

use d1_retry::testing::{Clock, D1Database, Error, Fault, Message};
use d1_retry::{RetryBudget, RetryPolicy, RetryTokens, d1_retry};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

const SEED: u64 = 60_000;
const CALLERS: u64 = 6;
/// One phase of the replay: before the stall, the stall, after it.
pub const PHASE: Duration = Duration::from_secs(60);
/// The phases, in order; requests count in the phase they arrive in.
pub const PHASES: [&str; 3] = ["0:00-1:00 before", "1:00-2:00 D1 hangs", "2:00-3:00 after"];
/// The phase in which D1 hangs.
pub const STALL_PHASE: usize = 1;
/// When D1 hangs, from the start of the replay: every call made then waits until its end.
pub const STALL: Range<Duration> = Duration::from_secs(60)..Duration::from_secs(120);
/// The limits of the run with time limits (`attempt_timeout_ms` on the reads and the
/// upserts; `deadline_ms` on every method).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(2_000);
pub const DEADLINE: Duration = Duration::from_millis(10_000);

/// The tokens of the replay's retry budget, full at the start of each run, as in a fresh
/// isolate, so that both runs and every replay start alike.
static TOKENS: RetryTokens = RetryTokens::new();
/// The default policy and budget (300 tokens, ratio 0.1), without jitter: the replay
/// prints the same latencies on every run.
const POLICY: RetryPolicy = RetryPolicy::DEFAULT
    .with_jitter(100, 100)
    .with_budget(RetryBudget::new(&TOKENS));

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

/// `#[d1_retry]` without time limits: a call waits as long as D1 does.
struct Unbounded {
    db: D1Database,
}

impl Store for Unbounded {
    #[d1_retry(policy = POLICY)]
    async fn find_user(&self, id: i64) -> Result<Option<User>, Error> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(&[id.into()])?
            .first(None)
            .await
    }

    #[d1_retry(idempotent, policy = POLICY)]
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

    #[d1_retry(policy = POLICY)]
    async fn log_step(&self, request: i64, job: i64) -> Result<(), Error> {
        self.db
            .prepare("INSERT INTO job_log (request_id, job_id) VALUES (?1, ?2)")
            .bind(&[request.into(), job.into()])?
            .run()
            .await
            .map(|_| ())
    }
}

/// The same bodies with the recommended limits: a read (and the upsert, retried like one)
/// is cut after 2 s and tried again; every call ends by its 10 s deadline; the append, which
/// is never run twice, has the deadline alone.
struct Bounded {
    db: D1Database,
}

impl Store for Bounded {
    #[d1_retry(policy = POLICY, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn find_user(&self, id: i64) -> Result<Option<User>, Error> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(&[id.into()])?
            .first(None)
            .await
    }

    #[d1_retry(idempotent, policy = POLICY, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
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

    #[d1_retry(policy = POLICY, deadline_ms = 10_000)]
    async fn log_step(&self, request: i64, job: i64) -> Result<(), Error> {
        self.db
            .prepare("INSERT INTO job_log (request_id, job_id) VALUES (?1, ?2)")
            .bind(&[request.into(), job.into()])?
            .run()
            .await
            .map(|_| ())
    }
}

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Read,
    Upsert,
    Append,
}

impl Kind {
    pub fn writes(self) -> bool {
        self != Kind::Read
    }
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Answered,
    /// D1's error, handed to the caller.
    Failed,
    /// A `d1_retry::TimedOut`: a limit cut the call.
    TimedOut,
}

/// One request, as its caller saw it.
#[derive(Clone, Debug)]
pub struct Request {
    /// When it arrived, from the start of the replay (virtual time).
    pub at: Duration,
    pub kind: Kind,
    /// How long the caller waited for its answer (virtual time).
    pub latency: Duration,
    pub outcome: Outcome,
    /// An append whose row is in the database more than once (must never be).
    pub applied_twice: bool,
    /// An append whose row is in the database (whatever the caller heard).
    pub committed: bool,
}

impl Request {
    pub fn phase(&self) -> usize {
        phase_of(self.at)
    }
}

/// One run of the three minutes.
pub struct Run {
    pub requests: Vec<Request>,
    /// The most requests in flight at once, in each phase.
    pub in_flight: [u64; PHASES.len()],
    /// When the retry budget stopped allowing retries (to the tenth of a second), if it did.
    pub budget_stopped: Option<Duration>,
}

fn phase_of(at: Duration) -> usize {
    usize::try_from(at.as_secs() / PHASE.as_secs())
        .unwrap_or(usize::MAX)
        .min(PHASES.len() - 1)
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

/// The stall: every call made while D1 hangs waits until D1 recovers, then fails with
/// D1's storage-timeout reset, all at the same millisecond. Half of the writes are
/// committed before the hang (D1 ran them; the caller never hears so); the other calls
/// never run.
fn stall(db: &D1Database, start: Instant) {
    let clock = Clock::tokio();
    let hang = STALL.end - STALL.start;
    let mut rng = SmallRng::seed_from_u64(SEED);
    let window = clock.clone();
    db.add_fault(
        Fault::new(Message::StorageTimeout)
            .after_execution()
            .stalling(hang)
            .when_sql_contains("INSERT")
            .when(move |_| STALL.contains(&window.now()) && rng.random_bool(0.5)),
    );
    db.add_fault(
        Fault::new(Message::StorageTimeout)
            .stalling(hang)
            .during(&clock, STALL),
    );
    // A hang lasts until D1 recovers, however late in the stall the call came.
    let recovery = start + STALL.end;
    db.set_sleeper(move |hang: Duration| {
        tokio::time::sleep_until((Instant::now() + hang).min(recovery))
    });
}

/// The traffic: each caller sends a request about every two seconds, whether or not the
/// previous one has been answered, for the three phases.
fn traffic() -> Vec<(Duration, Kind, i64, i64)> {
    let mut requests = Vec::new();
    let end = PHASE * u32::try_from(PHASES.len()).unwrap_or(0);
    for caller in 0..CALLERS {
        let mut rng = SmallRng::seed_from_u64(SEED ^ caller);
        let mut at = Duration::from_millis(rng.random_range(0..2_000));
        let mut n = 0;
        while at < end {
            n += 1;
            let kind = match rng.random_range(0..10) {
                0..=6 => Kind::Read,
                7 | 8 => Kind::Upsert,
                _ => Kind::Append,
            };
            let id = i64::try_from(caller).unwrap_or(0) * 1_000_000 + n;
            requests.push((at, kind, id, rng.random_range(1..=100)));
            at += Duration::from_millis(rng.random_range(1_500..2_500));
        }
    }
    requests.sort_by_key(|r| r.0);
    requests
}

async fn run_once(store: &impl Store, db: &D1Database) -> Run {
    POLICY.budget().expect("the policy has a budget").refill();
    let start = Instant::now();
    stall(db, start);
    let in_flight = Cell::new(0u64);
    let peaks = RefCell::new([0u64; PHASES.len()]);
    let done = RefCell::new(Vec::new());
    let requests = traffic().into_iter().map(|(at, kind, id, user)| {
        let (in_flight, peaks, done) = (&in_flight, &peaks, &done);
        async move {
            tokio::time::sleep_until(start + at).await;
            in_flight.set(in_flight.get() + 1);
            let phase = phase_of(start.elapsed());
            {
                let mut peaks = peaks.borrow_mut();
                peaks[phase] = peaks[phase].max(in_flight.get());
            }
            let result = match kind {
                Kind::Read => store.find_user(user).await.map(|_| ()),
                Kind::Upsert => {
                    let now = i64::try_from(start.elapsed().as_millis()).unwrap_or(0);
                    store.touch_session(user, now).await
                }
                Kind::Append => store.log_step(id, user).await,
            };
            in_flight.set(in_flight.get() - 1);
            let outcome = match &result {
                Ok(()) => Outcome::Answered,
                Err(e) if e.to_string().contains("D1 call timed out") => Outcome::TimedOut,
                Err(_) => Outcome::Failed,
            };
            done.borrow_mut().push((
                id,
                Request {
                    at,
                    kind,
                    latency: start.elapsed() - at,
                    outcome,
                    applied_twice: false,
                    committed: false,
                },
            ));
        }
    });
    let budget_stopped = Cell::new(None);
    let budget = async {
        let budget = POLICY.budget().expect("the policy has a budget");
        while start.elapsed() < STALL.end && budget_stopped.get().is_none() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if !budget.allows_retries() {
                budget_stopped.set(Some(start.elapsed()));
            }
        }
    };
    tokio::join!(for_all(requests.collect()), budget);
    let rows: Vec<(i64, i64)> = db.with_connection(|c| {
        let mut query = c
            .prepare("SELECT request_id, count(*) FROM job_log GROUP BY request_id")
            .expect("the count query prepares");
        query
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("the count query runs")
            .collect::<Result<_, _>>()
            .expect("the counts read")
    });
    let rows: std::collections::HashMap<i64, i64> = rows.into_iter().collect();
    let mut requests: Vec<Request> = done
        .into_inner()
        .into_iter()
        .map(|(id, request)| {
            let n = if request.kind == Kind::Append {
                rows.get(&id).copied().unwrap_or(0)
            } else {
                0
            };
            Request {
                applied_twice: n > 1,
                committed: n > 0,
                ..request
            }
        })
        .collect();
    requests.sort_by_key(|r| r.at);
    Run {
        requests,
        in_flight: peaks.into_inner(),
        budget_stopped: budget_stopped.get(),
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

/// One row of a run's table: a phase, or the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub requests: u64,
    pub answered: u64,
    pub failed: u64,
    pub p50: Duration,
    pub max: Duration,
    pub in_flight: u64,
    /// Writes whose caller got a `TimedOut`: handed back, not run again.
    pub writes_timed_out: u64,
    /// The appends among them.
    pub appends_timed_out: u64,
    /// Of those appends, the ones D1 had run anyway.
    pub appends_timed_out_committed: u64,
    pub applied_twice: u64,
}

impl Run {
    /// The row of the requests that arrived in `phase`, or of all of them (`None`).
    pub fn row(&self, phase: Option<usize>) -> Row {
        let requests: Vec<&Request> = self
            .requests
            .iter()
            .filter(|r| phase.is_none_or(|p| r.phase() == p))
            .collect();
        let mut latencies: Vec<Duration> = requests.iter().map(|r| r.latency).collect();
        latencies.sort_unstable();
        let count = |f: &dyn Fn(&Request) -> bool| {
            u64::try_from(requests.iter().filter(|r| f(r)).count()).unwrap_or(u64::MAX)
        };
        Row {
            requests: u64::try_from(requests.len()).unwrap_or(u64::MAX),
            answered: count(&|r| r.outcome == Outcome::Answered),
            failed: count(&|r| r.outcome != Outcome::Answered),
            p50: latencies
                .get(latencies.len().saturating_sub(1) / 2)
                .copied()
                .unwrap_or_default(),
            max: latencies.last().copied().unwrap_or_default(),
            in_flight: match phase {
                Some(p) => self.in_flight[p],
                None => self.in_flight.iter().copied().max().unwrap_or(0),
            },
            writes_timed_out: count(&|r| r.kind.writes() && r.outcome == Outcome::TimedOut),
            appends_timed_out: count(&|r| r.kind == Kind::Append && r.outcome == Outcome::TimedOut),
            appends_timed_out_committed: count(&|r| r.committed && r.outcome == Outcome::TimedOut),
            applied_twice: count(&|r| r.applied_twice),
        }
    }
}

/// Both runs of the replay.
pub struct Report {
    pub without: Run,
    pub with: Run,
}

/// Replays the stall without time limits, then with them, each on a fresh local D1.
pub fn replay() -> Report {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    runtime.block_on(async {
        let db = open_database();
        let without = run_once(&Unbounded { db: db.clone() }, &db).await;
        let db = open_database();
        let with = run_once(&Bounded { db: db.clone() }, &db).await;
        Report { without, with }
    })
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

fn table(out: &mut String, title: &str, run: &Run) {
    let _ = writeln!(out, "{title}");
    let _ = writeln!(
        out,
        "{:<20} {:>8} {:>8} {:>6} {:>11} {:>11} {:>9} {:>13} {:>7}",
        "phase",
        "requests",
        "answered",
        "failed",
        "p50 latency",
        "max latency",
        "in flight",
        "writes handed",
        "writes"
    );
    let _ = writeln!(
        out,
        "{:<20} {:>8} {:>8} {:>6} {:>11} {:>11} {:>9} {:>13} {:>7}",
        "", "", "", "", "", "", "(most)", "back: timeout", "twice"
    );
    let rows = (0..PHASES.len()).map(|p| (PHASES[p], run.row(Some(p))));
    for (label, row) in rows.chain([("total", run.row(None))]) {
        let _ = writeln!(
            out,
            "{:<20} {:>8} {:>8} {:>6} {:>11} {:>11} {:>9} {:>13} {:>7}",
            label,
            row.requests,
            row.answered,
            row.failed,
            secs(row.p50),
            secs(row.max),
            row.in_flight,
            row.writes_timed_out,
            row.applied_twice
        );
    }
}

impl Report {
    /// Writes in the database more than once, in both runs together (must be 0).
    pub fn writes_applied_twice(&self) -> u64 {
        self.without.row(None).applied_twice + self.with.row(None).applied_twice
    }

    /// The last line of the report, which the README quotes.
    pub fn verdict(&self) -> String {
        let (a, b) = (
            self.without.row(Some(STALL_PHASE)),
            self.with.row(Some(STALL_PHASE)),
        );
        format!(
            "verdict: D1 hung for {} s; of the {} requests that came meanwhile, {} failed \
             without time limits, after waiting up to {} (p50 {}), {} in flight at once; {} \
             failed with them, none waiting past {} (p50 {}), at most {} in flight; {} writes \
             were handed back with a timeout ({} appends, {} of which D1 had run); writes \
             applied twice: {}.",
            (STALL.end - STALL.start).as_secs(),
            b.requests,
            a.failed,
            secs(a.max),
            secs(a.p50),
            a.in_flight,
            b.failed,
            secs(b.max),
            secs(b.p50),
            b.in_flight,
            b.writes_timed_out,
            b.appends_timed_out,
            b.appends_timed_out_committed,
            self.writes_applied_twice(),
        )
    }

    /// The report `cargo run --example stall` prints.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "d1-retry stall replay: {CALLERS} callers, a request every ~2 s each (reads / \
             idempotent upserts / appends 7:2:1),\nD1 hanging from 1:00 to 2:00: every call \
             made then waits until 2:00 and fails with\n`D1 DB storage operation exceeded \
             timeout which caused object to be reset.` (D1 ran about half\nof the writes before \
             hanging); latencies in virtual time (tokio's paused clock), where a healthy D1\n\
             answers at once\n"
        );
        table(&mut out, "without time limits: #[d1_retry]", &self.without);
        let _ = writeln!(out);
        table(
            &mut out,
            &format!(
                "with time limits: reads and upserts #[d1_retry(attempt_timeout_ms = {}, \
                 deadline_ms = {})],\nappends #[d1_retry(deadline_ms = {})]",
                ATTEMPT_TIMEOUT.as_millis(),
                DEADLINE.as_millis(),
                DEADLINE.as_millis(),
            ),
            &self.with,
        );
        if let Some(at) = self.with.budget_stopped {
            let _ = writeln!(
                out,
                "(each cut read or upsert takes a token from the retry budget: from {}:{:04.1}, \
                 with half of it spent,\ncut calls were no longer retried and failed at their \
                 first timeout)",
                at.as_secs() / 60,
                at.as_secs_f64() % 60.0,
            );
        }
        let _ = writeln!(out, "\n{}", self.verdict());
        out
    }
}
