//! Chaos: thousands of randomized calls through `#[d1_retry]` methods and through the
//! `Retry` driver, against the local D1 failing with every documented message, before and
//! after execution, in random faults and in bursts that outlast the retry schedule.
//!
//! After each round, the database itself is the judge:
//! - no write is applied twice; a write the caller saw succeed is there exactly once; a
//!   write whose caller got an error is there at most once (exactly as often as the journal
//!   says it ran);
//! - every read returned what the database held;
//! - every call stopped where the retry table says: a permanent failure after one call, a
//!   maybe-executed write failure at once, a transient read failure only after the last
//!   attempt (or when its retry budget ran out); the caller got the last call's error;
//! - no function made more attempts than its policy allows, and every wait lies within the
//!   policy's bounds (tokio's paused clock: the waits are virtual and exact).
//!
//! Reproducible: `D1_RETRY_CHAOS_SEED` (default fixed) and `D1_RETRY_CHAOS_OPS` (default
//! 10,000 per path). A soak: `D1_RETRY_CHAOS_OPS=1000000 cargo test --release -p d1-retry
//! --test chaos -- --nocapture`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

use d1_retry::testing::{
    Call, Clock, D1Database, Error, Fault, FaultPlan, Message, Operation, Timing, Value,
};
use d1_retry::{FailureClass, Retry, RetryBudget, RetryPolicy, RetryTokens, d1_retry};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

const DEFAULT_SEED: u64 = 0x00D1_C4A0_5EED;
const DEFAULT_OPS: u64 = 10_000;
const LANES: u64 = 4;
const ROUND_OPS_PER_LANE: u64 = 50;
/// Keys of `kv` per lane; a lane owns its keys, so it can check its reads at once.
const KEYS_PER_LANE: i64 = 40;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

// Policies for the driver path: jittered, seeded per call.
const DRIVER_DEFAULT: RetryPolicy = RetryPolicy::DEFAULT.without_budget();
const DRIVER_SHORT: RetryPolicy = RetryPolicy::DEFAULT
    .without_budget()
    .with_max_attempts(3)
    .with_base_delay(Duration::from_millis(50))
    .with_max_delay(Duration::from_millis(120));
static DRIVER_TOKENS: RetryTokens = RetryTokens::new();
const DRIVER_BUDGETED: RetryPolicy = RetryPolicy::DEFAULT.with_budget(
    RetryBudget::new(&DRIVER_TOKENS)
        .with_max_tokens(20)
        .with_token_ratio(0.2),
);

// Policies for the attribute path: without jitter, so that a seed replays the same run
// (the attribute draws jitter from the platform, not from a seed).
const MACRO_DEFAULT: RetryPolicy = RetryPolicy::DEFAULT.without_budget().with_jitter(100, 100);
const MACRO_SHORT: RetryPolicy = DRIVER_SHORT.with_jitter(100, 100);
static MACRO_TOKENS: RetryTokens = RetryTokens::new();
const MACRO_BUDGETED: RetryPolicy = RetryPolicy::DEFAULT.with_jitter(100, 100).with_budget(
    RetryBudget::new(&MACRO_TOKENS)
        .with_max_tokens(20)
        .with_token_ratio(0.2),
);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Read,
    Write,
    Idempotent,
}

impl Access {
    fn retries(self, class: FailureClass) -> bool {
        match self {
            Access::Read | Access::Idempotent => class != FailureClass::Permanent,
            Access::Write => class == FailureClass::NotExecuted,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Read,
    ReadShort,
    Insert,
    InsertBudgeted,
    Upsert,
    Batch,
    Exec,
    Duplicate,
    DynamicRead,
    DynamicWrite,
}

impl Kind {
    const ALL: [Kind; 10] = [
        Kind::Read,
        Kind::ReadShort,
        Kind::Insert,
        Kind::InsertBudgeted,
        Kind::Upsert,
        Kind::Batch,
        Kind::Exec,
        Kind::Duplicate,
        Kind::DynamicRead,
        Kind::DynamicWrite,
    ];

    fn access(self) -> Access {
        match self {
            Kind::Read | Kind::ReadShort | Kind::DynamicRead => Access::Read,
            Kind::Upsert => Access::Idempotent,
            Kind::Insert
            | Kind::InsertBudgeted
            | Kind::Batch
            | Kind::Exec
            | Kind::Duplicate
            | Kind::DynamicWrite => Access::Write,
        }
    }

    /// Rows of `writes` one execution adds.
    fn rows_written(self) -> i64 {
        match self {
            Kind::Insert | Kind::InsertBudgeted | Kind::Exec | Kind::DynamicWrite => 1,
            Kind::Batch => 2,
            _ => 0,
        }
    }

    fn policy(self, path: Path) -> RetryPolicy {
        match (self, path) {
            (Kind::ReadShort | Kind::Duplicate, Path::Driver) => DRIVER_SHORT,
            (Kind::ReadShort | Kind::Duplicate, Path::Macro) => MACRO_SHORT,
            (Kind::InsertBudgeted, Path::Driver) => DRIVER_BUDGETED,
            (Kind::InsertBudgeted, Path::Macro) => MACRO_BUDGETED,
            (_, Path::Driver) => DRIVER_DEFAULT,
            (_, Path::Macro) => MACRO_DEFAULT,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Driver,
    Macro,
}

/// What one operation did, as its caller saw it.
#[derive(Debug)]
struct Outcome {
    op: i64,
    lane: u64,
    kind: Kind,
    /// The error message the caller got, if any.
    error: Option<String>,
    /// When each attempt started (virtual time).
    stamps: Vec<Instant>,
}

#[derive(Default, Debug)]
struct Tally {
    operations: u64,
    calls: u64,
    faults_before: u64,
    faults_after: u64,
    retries: u64,
    caller_errors: u64,
    permanent_errors: u64,
    maybe_executed_write_errors: u64,
    exhausted: u64,
    budget_stops: u64,
    invariants: u64,
    fingerprint: u64,
}

struct Harness {
    path: Path,
    seed: u64,
    ops: u64,
    db: D1Database,
    stamps: RefCell<HashMap<i64, Vec<Instant>>>,
    outcomes: RefCell<Vec<Outcome>>,
    tally: RefCell<Tally>,
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => {
            let text = text.trim();
            let parsed = match text.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => text.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("{name}={text:?} is not a number"))
        }
        Err(_) => default,
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn hash(parts: &[u64]) -> u64 {
    parts
        .iter()
        .fold(0x51_7CC1_B727_220A, |h, p| splitmix(h ^ *p))
}

/// Outages in virtual time: in some 20 s periods, every call fails for 4-10 s, longer than
/// the 3.6 s default schedule can wait.
fn in_time_burst(seed: u64, salt: u64, now: Duration) -> bool {
    const PERIOD: u64 = 20_000;
    let now = u64::try_from(now.as_millis()).unwrap_or(u64::MAX);
    let period = now / PERIOD;
    let h = hash(&[seed, salt, period]);
    if !h.is_multiple_of(3) {
        return false;
    }
    let length = 4_000 + (h >> 8) % 6_000;
    let start = (h >> 24) % (PERIOD - length);
    (start..start + length).contains(&(now % PERIOD))
}

/// Runs of 6 to 14 consecutive failing calls, in some blocks of 400 calls.
fn in_call_burst(seed: u64, salt: u64, index: u64) -> bool {
    const BLOCK: u64 = 400;
    let h = hash(&[seed, salt, index / BLOCK]);
    if !h.is_multiple_of(2) {
        return false;
    }
    let length = 6 + (h >> 8) % 9;
    let start = (h >> 24) % (BLOCK - length);
    (start..start + length).contains(&(index % BLOCK))
}

fn fault_plan(seed: u64, clock: &Clock) -> FaultPlan {
    use Message::*;
    use Timing::*;
    let mut rng = SmallRng::seed_from_u64(hash(&[seed, 0xFA17]));
    let mut plan = FaultPlan::new();
    for (salt, message, timing) in [
        (1, TooManyRequestsQueued, BeforeExecution),
        (2, NetworkConnectionLost, AfterExecution),
        (3, InternalError, BeforeExecution),
    ] {
        let clock = clock.clone();
        plan.push(
            Fault::new(message)
                .timing(timing)
                .when(move |_| in_time_burst(seed, salt, clock.now())),
        );
    }
    for (salt, message, timing) in [
        (4, CannotResolve, BeforeExecution),
        (5, StorageReset, AfterExecution),
    ] {
        plan.push(
            Fault::new(message)
                .timing(timing)
                .when(move |call| in_call_burst(seed, salt, call.index)),
        );
    }
    // Writes that ran, and whose caller hears otherwise.
    for message in [
        NetworkConnectionLost,
        InternalError,
        CodeUpdated,
        RequestsQueuedTooLong,
    ] {
        plan.push(
            Fault::new(message)
                .after_execution()
                .when_sql_contains("INSERT INTO writes")
                .with_probability(0.02, rng.random()),
        );
    }
    plan.push(
        Fault::new(ClientDisconnected)
            .after_execution()
            .on(Operation::Batch)
            .with_probability(0.05, rng.random()),
    );
    // Background noise: every documented message, before and after execution, except that
    // a "not executed" message means D1 never ran the statement: after execution it would
    // be D1 breaking its own contract (and d1-retry, trusting it, would run a write twice).
    for message in Message::DOCUMENTED {
        let timings: &[Timing] = match message.documented_class() {
            Some(FailureClass::NotExecuted) => &[BeforeExecution],
            _ => &[BeforeExecution, AfterExecution],
        };
        for &timing in timings {
            plan.push(
                Fault::new(message)
                    .timing(timing)
                    .with_probability(0.006, rng.random()),
            );
        }
    }
    plan
}

const SCHEMA: &str = "
    CREATE TABLE writes (op_id INTEGER NOT NULL, kind TEXT NOT NULL);
    CREATE INDEX writes_op ON writes (op_id);
    CREATE TABLE kv (key INTEGER PRIMARY KEY, value INTEGER NOT NULL, op INTEGER);
    CREATE TABLE uniq (email TEXT NOT NULL UNIQUE, op INTEGER);
    INSERT INTO uniq (email) VALUES ('taken@example.com');
";

const READ_SQL: &str = "SELECT value, ?1 AS op FROM kv WHERE key = ?2";
const INSERT_SQL: &str = "INSERT INTO writes (op_id, kind) VALUES (?1, 'insert')";
const UPSERT_SQL: &str = "INSERT INTO kv (key, value, op) VALUES (?2, ?3, ?1) \
                          ON CONFLICT (key) DO UPDATE SET value = excluded.value, op = excluded.op";
const BATCH_SQL: &str = "INSERT INTO writes (op_id, kind) VALUES (?1, 'batch')";
const DUPLICATE_SQL: &str = "INSERT INTO uniq (email, op) VALUES ('taken@example.com', ?1)";
const DYNAMIC_READ_SQL: &str = "SELECT count(*) AS n, ?1 AS op FROM kv WHERE key >= ?2";
const DYNAMIC_WRITE_SQL: &str = "INSERT INTO writes (op_id, kind) VALUES (?1, 'dynamic')";

fn exec_sql(op: i64) -> String {
    format!("/* op {op} */ INSERT INTO writes (op_id, kind) VALUES ({op}, 'exec')")
}

/// The operation a journal entry belongs to: the first parameter, or the `/* op N */` tag.
fn op_of(call: &Call) -> Option<i64> {
    let (sql, params) = call.statements.first()?;
    match params.first() {
        Some(Value::Integer(op)) => Some(*op),
        _ => sql.strip_prefix("/* op ")?.split_once(' ')?.0.parse().ok(),
    }
}

/// What the journal says a call's failure means (`None`: it succeeded).
fn class_of(call: &Call) -> Option<FailureClass> {
    match (&call.injected, &call.error) {
        (Some((message, _)), _) => message.documented_class(),
        (None, Some(_)) => Some(FailureClass::Permanent),
        (None, None) => None,
    }
}

struct Repo<'h> {
    harness: &'h Harness,
    db: D1Database,
}

impl Repo<'_> {
    fn stamp(&self, op: i64) {
        self.harness.stamp(op);
    }

    #[d1_retry(policy = MACRO_DEFAULT)]
    async fn read(&self, op: i64, key: i64) -> Result<Option<i64>, Error> {
        self.stamp(op);
        self.db
            .prepare("SELECT value, ?1 AS op FROM kv WHERE key = ?2")
            .bind(&[op.into(), key.into()])?
            .first(Some("value"))
            .await
    }

    #[d1_retry(policy = MACRO_SHORT)]
    async fn read_short(&self, op: i64, key: i64) -> Result<Option<i64>, Error> {
        self.stamp(op);
        self.db
            .prepare("SELECT value, ?1 AS op FROM kv WHERE key = ?2")
            .bind(&[op.into(), key.into()])?
            .first(Some("value"))
            .await
    }

    #[d1_retry(policy = MACRO_DEFAULT)]
    async fn insert(&self, op: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db
            .prepare("INSERT INTO writes (op_id, kind) VALUES (?1, 'insert')")
            .bind(&[op.into()])?
            .run()
            .await
            .map(|_| ())
    }

    #[d1_retry(policy = MACRO_BUDGETED)]
    async fn insert_budgeted(&self, op: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db
            .prepare("INSERT INTO writes (op_id, kind) VALUES (?1, 'insert')")
            .bind(&[op.into()])?
            .run()
            .await
            .map(|_| ())
    }

    #[d1_retry(idempotent, policy = MACRO_DEFAULT)]
    async fn upsert(&self, op: i64, key: i64, value: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db
            .prepare(
                "INSERT INTO kv (key, value, op) VALUES (?2, ?3, ?1) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, op = excluded.op",
            )
            .bind(&[op.into(), key.into(), value.into()])?
            .run()
            .await
            .map(|_| ())
    }

    #[d1_retry(policy = MACRO_DEFAULT)]
    async fn batch(&self, op: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db
            .batch(vec![
                self.db
                    .prepare("INSERT INTO writes (op_id, kind) VALUES (?1, 'batch')")
                    .bind(&[op.into()])?,
                self.db
                    .prepare("INSERT INTO writes (op_id, kind) VALUES (?1, 'batch')")
                    .bind(&[op.into()])?,
            ])
            .await
            .map(|_| ())
    }

    #[d1_retry(policy = MACRO_DEFAULT)]
    async fn exec(&self, op: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db.exec(&exec_sql(op)).await.map(|_| ())
    }

    #[d1_retry(policy = MACRO_SHORT)]
    async fn duplicate(&self, op: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db
            .prepare("INSERT INTO uniq (email, op) VALUES ('taken@example.com', ?1)")
            .bind(&[op.into()])?
            .run()
            .await
            .map(|_| ())
    }

    /// SQL known only at run time: the attribute scans it as each attempt runs.
    #[d1_retry(policy = MACRO_DEFAULT)]
    async fn dynamic(
        &self,
        op: i64,
        sql: &str,
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>, Error> {
        self.stamp(op);
        self.db.prepare(sql).bind(params)?.raw().await
    }
}

impl Harness {
    fn new(path: Path, seed: u64, ops: u64) -> Self {
        let db = D1Database::open_in_memory().expect("an in-memory SQLite opens");
        db.with_connection(|c| c.execute_batch(SCHEMA))
            .expect("the schema applies");
        db.set_faults(fault_plan(seed, &Clock::tokio()));
        Harness {
            path,
            seed,
            ops,
            db,
            stamps: RefCell::default(),
            outcomes: RefCell::default(),
            tally: RefCell::default(),
        }
    }

    fn stamp(&self, op: i64) {
        self.stamps
            .borrow_mut()
            .entry(op)
            .or_default()
            .push(Instant::now());
    }

    fn kv(&self, key: i64) -> Option<i64> {
        self.db
            .with_connection(|c| {
                c.query_row("SELECT value FROM kv WHERE key = ?1", [key], |row| {
                    row.get(0)
                })
            })
            .ok()
    }

    fn check(&self, ok: bool, what: impl FnOnce() -> String) {
        self.tally.borrow_mut().invariants += 1;
        if !ok {
            panic!(
                "chaos invariant broken ({:?} path; replay with D1_RETRY_CHAOS_SEED={:#x} \
                 D1_RETRY_CHAOS_OPS={}):\n{}",
                self.path,
                self.seed,
                self.ops,
                what()
            );
        }
    }

    /// One operation: run it, check what can be checked at once (reads, upserts), record it.
    async fn operation(&self, lane: u64, op: i64, kind: Kind, rng: &mut SmallRng) {
        let key = i64::try_from(lane).unwrap_or(0) * 1000 + rng.random_range(0..KEYS_PER_LANE);
        let value: i64 = rng.random_range(0..1_000_000);
        let jitter_seed: u64 = rng.random();
        let before = self.kv(key);
        let repo = Repo {
            harness: self,
            db: self.db.clone(),
        };
        let error = match kind {
            Kind::Read | Kind::ReadShort => {
                let read = match self.path {
                    Path::Macro if kind == Kind::Read => repo.read(op, key).await,
                    Path::Macro => repo.read_short(op, key).await,
                    Path::Driver => {
                        self.driver(kind, jitter_seed, op, || async {
                            self.db
                                .prepare(READ_SQL)
                                .bind(&[op.into(), key.into()])?
                                .first::<i64>(Some("value"))
                                .await
                        })
                        .await
                    }
                };
                if let Ok(got) = &read {
                    let held = self.kv(key);
                    self.check(*got == held, || {
                        format!("op {op} ({kind:?}) read {got:?}, the database holds {held:?}")
                    });
                }
                read.err()
            }
            Kind::Upsert => {
                let result = match self.path {
                    Path::Macro => repo.upsert(op, key, value).await,
                    Path::Driver => {
                        self.driver(kind, jitter_seed, op, || async {
                            self.db
                                .prepare(UPSERT_SQL)
                                .bind(&[op.into(), key.into(), value.into()])?
                                .run()
                                .await
                                .map(|_| ())
                        })
                        .await
                    }
                };
                let held = self.kv(key);
                match &result {
                    Ok(()) => self.check(held == Some(value), || {
                        format!("op {op} upsert of {value} succeeded, the database holds {held:?}")
                    }),
                    Err(_) => self.check(held == Some(value) || held == before, || {
                        format!(
                            "op {op} upsert of {value} failed, the database holds {held:?} \
                             (before: {before:?})"
                        )
                    }),
                }
                result.err()
            }
            Kind::Insert | Kind::InsertBudgeted => match self.path {
                Path::Macro if kind == Kind::Insert => repo.insert(op).await.err(),
                Path::Macro => repo.insert_budgeted(op).await.err(),
                Path::Driver => self
                    .driver(kind, jitter_seed, op, || async {
                        self.db
                            .prepare(INSERT_SQL)
                            .bind(&[op.into()])?
                            .run()
                            .await
                            .map(|_| ())
                    })
                    .await
                    .err(),
            },
            Kind::Batch => match self.path {
                Path::Macro => repo.batch(op).await.err(),
                Path::Driver => self
                    .driver(kind, jitter_seed, op, || async {
                        let statements = vec![
                            self.db.prepare(BATCH_SQL).bind(&[op.into()])?,
                            self.db.prepare(BATCH_SQL).bind(&[op.into()])?,
                        ];
                        self.db.batch(statements).await.map(|_| ())
                    })
                    .await
                    .err(),
            },
            Kind::Exec => match self.path {
                Path::Macro => repo.exec(op).await.err(),
                Path::Driver => self
                    .driver(kind, jitter_seed, op, || async {
                        self.db.exec(&exec_sql(op)).await.map(|_| ())
                    })
                    .await
                    .err(),
            },
            Kind::Duplicate => match self.path {
                Path::Macro => repo.duplicate(op).await.err(),
                Path::Driver => self
                    .driver(kind, jitter_seed, op, || async {
                        self.db
                            .prepare(DUPLICATE_SQL)
                            .bind(&[op.into()])?
                            .run()
                            .await
                            .map(|_| ())
                    })
                    .await
                    .err(),
            },
            Kind::DynamicRead | Kind::DynamicWrite => {
                let (sql, params): (String, Vec<Value>) = if kind == Kind::DynamicRead {
                    (DYNAMIC_READ_SQL.to_owned(), vec![op.into(), key.into()])
                } else {
                    (DYNAMIC_WRITE_SQL.to_owned(), vec![op.into()])
                };
                match self.path {
                    Path::Macro => repo.dynamic(op, &sql, &params).await.err(),
                    Path::Driver => self
                        .driver(kind, jitter_seed, op, || async {
                            self.db
                                .prepare(sql.as_str())
                                .bind(&params)?
                                .raw::<Value>()
                                .await
                        })
                        .await
                        .err(),
                }
            }
        };
        let stamps = self.stamps.borrow_mut().remove(&op).unwrap_or_default();
        self.outcomes.borrow_mut().push(Outcome {
            op,
            lane,
            kind,
            error: error.map(|e| e.to_string()),
            stamps,
        });
    }

    /// The driver path: `d1_retry::Retry`, with the kind's access and policy.
    async fn driver<T, F, Fut>(
        &self,
        kind: Kind,
        seed: u64,
        op: i64,
        mut attempt: F,
    ) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let retry = Retry::new("chaos")
            .policy(kind.policy(Path::Driver))
            .seed(seed);
        let retry = match kind.access() {
            Access::Read => retry.read_only(true),
            Access::Idempotent => retry.idempotent(true),
            Access::Write => retry,
        };
        retry
            .run(|| {
                self.stamp(op);
                attempt()
            })
            .await
    }

    async fn lane(&self, lane: u64, round: u64, ops: u64) {
        let mut rng = SmallRng::seed_from_u64(hash(&[self.seed, lane, round]));
        for i in 0..ops {
            let index = round * ROUND_OPS_PER_LANE + i;
            let op = i64::try_from(index * LANES + lane + 1).unwrap_or(i64::MAX);
            let kind = Kind::ALL[rng.random_range(0..Kind::ALL.len())];
            self.operation(lane, op, kind, &mut rng).await;
            // Think time, so that virtual time moves through the outages.
            tokio::time::sleep(ms(rng.random_range(0..120))).await;
        }
    }

    /// Checks every operation of a finished round against the journal and the database.
    fn verify_round(&self) {
        let calls = self.db.take_calls();
        let mut by_op: HashMap<i64, Vec<Call>> = HashMap::new();
        for call in calls {
            let op = op_of(&call);
            self.check(op.is_some(), || {
                format!("a call without an operation id: {call:?}")
            });
            if let Some(op) = op {
                by_op.entry(op).or_default().push(call);
            }
        }
        let outcomes = std::mem::take(&mut *self.outcomes.borrow_mut());
        let first = outcomes.iter().map(|o| o.op).min().unwrap_or(0);
        let last = outcomes.iter().map(|o| o.op).max().unwrap_or(0);
        let written: HashMap<i64, i64> = self.db.with_connection(|c| {
            let mut statement = c
                .prepare(
                    "SELECT op_id, count(*) FROM writes WHERE op_id BETWEEN ?1 AND ?2 \
                     GROUP BY op_id",
                )
                .expect("the count query prepares");
            statement
                .query_map([first, last], |row| Ok((row.get(0)?, row.get(1)?)))
                .expect("the count query runs")
                .collect::<Result<_, _>>()
                .expect("the counts read")
        });
        for outcome in &outcomes {
            let calls = by_op.remove(&outcome.op).unwrap_or_default();
            self.verify(
                outcome,
                &calls,
                written.get(&outcome.op).copied().unwrap_or(0),
            );
        }
        self.check(by_op.is_empty(), || {
            format!(
                "calls of operations that never finished: {:?}",
                by_op.keys()
            )
        });
    }

    fn verify(&self, outcome: &Outcome, calls: &[Call], rows: i64) {
        let Outcome { op, kind, .. } = *outcome;
        let policy = kind.policy(self.path);
        let access = kind.access();
        let describe = || {
            let mut text = format!("operation {outcome:#?}\njournal:\n");
            for call in calls {
                let _ = writeln!(
                    text,
                    "  #{} {:?} injected={:?} executed={} error={:?}",
                    call.index, call.operation, call.injected, call.executed, call.error
                );
            }
            let _ = write!(text, "rows in `writes` for this operation: {rows}");
            text
        };
        let attempts = u32::try_from(calls.len()).unwrap_or(u32::MAX);
        self.check(attempts >= 1, || format!("no call made\n{}", describe()));
        self.check(attempts <= policy.max_attempts(), || {
            format!(
                "{attempts} attempts, the policy allows {}\n{}",
                policy.max_attempts(),
                describe()
            )
        });
        let Some(last) = calls.last() else { return };

        // Every call but the last failed in a way the retry table retries.
        for call in &calls[..calls.len() - 1] {
            let class = class_of(call);
            self.check(class.is_some_and(|c| access.retries(c)), || {
                format!(
                    "retried after call #{} ({class:?}), which {access:?} must not retry\n{}",
                    call.index,
                    describe()
                )
            });
        }
        // The caller got the last call's outcome, unchanged.
        self.check(outcome.error == last.error, || {
            format!(
                "the caller got {:?}, the last call {:?}\n{}",
                outcome.error,
                last.error,
                describe()
            )
        });
        // It stopped for a reason: success, a failure it must not retry, the last attempt,
        // or (for a budgeted policy) an exhausted budget.
        let mut tally = self.tally.borrow_mut();
        if let Some(class) = class_of(last) {
            tally.caller_errors += 1;
            let retryable = access.retries(class);
            let at_limit = attempts == policy.max_attempts();
            if class == FailureClass::Permanent {
                tally.permanent_errors += 1;
            }
            if class == FailureClass::MaybeExecuted && access == Access::Write {
                tally.maybe_executed_write_errors += 1;
            }
            if retryable && at_limit {
                tally.exhausted += 1;
            }
            if retryable && !at_limit {
                tally.budget_stops += 1;
            }
            drop(tally);
            self.check(!retryable || at_limit || policy.budget().is_some(), || {
                format!(
                    "gave up on a retryable failure before the last attempt\n{}",
                    describe()
                )
            });
        } else {
            drop(tally);
        }

        // The database: no write applied twice; exactly as often as the journal says it ran.
        let per_execution = kind.rows_written();
        if per_execution > 0 {
            let executed =
                i64::try_from(calls.iter().filter(|c| c.executed).count()).unwrap_or(i64::MAX);
            self.check(rows == per_execution * executed, || {
                format!(
                    "{rows} rows written, the journal says {executed} executions\n{}",
                    describe()
                )
            });
            self.check(rows <= per_execution, || {
                format!("a write applied twice\n{}", describe())
            });
            if outcome.error.is_none() {
                self.check(rows == per_execution, || {
                    format!(
                        "a write the caller saw succeed is not there exactly once\n{}",
                        describe()
                    )
                });
            }
        }
        if per_execution == 0 {
            self.check(rows == 0, || {
                format!("a read or upsert wrote to `writes`\n{}", describe())
            });
        }
        if kind == Kind::Duplicate {
            self.check(
                outcome.error.as_deref().is_some_and(|e| !e.is_empty()),
                || format!("a duplicate insert succeeded\n{}", describe()),
            );
        }

        // Waits: each within the policy's bounds for that retry, the total within its schedule.
        self.check(outcome.stamps.len() == calls.len(), || {
            format!(
                "{} attempts started, {} calls made\n{}",
                outcome.stamps.len(),
                calls.len(),
                describe()
            )
        });
        // tokio's timer fires on whole milliseconds.
        let tick = ms(1);
        for (retry, pair) in (1u32..).zip(outcome.stamps.windows(2)) {
            let waited = pair[1] - pair[0];
            let (min, max) = policy.delay_bounds(retry);
            self.check(min <= waited && waited <= max + tick, || {
                format!(
                    "retry {retry} waited {waited:?}, the policy allows {min:?}..={max:?}\n{}",
                    describe()
                )
            });
        }
        if let (Some(first), Some(last_stamp)) = (outcome.stamps.first(), outcome.stamps.last()) {
            let total = *last_stamp - *first;
            let bound = policy.max_total_delay() + tick * attempts;
            self.check(total <= bound, || {
                format!(
                    "waited {total:?} in all, the schedule allows {:?}\n{}",
                    policy.max_total_delay(),
                    describe()
                )
            });
        }

        let mut tally = self.tally.borrow_mut();
        tally.operations += 1;
        tally.calls += u64::from(attempts);
        tally.retries += u64::from(attempts - 1);
        for call in calls {
            match call.injected {
                Some((_, Timing::BeforeExecution)) => tally.faults_before += 1,
                Some((_, Timing::AfterExecution)) => tally.faults_after += 1,
                None => {}
            }
        }
        tally.fingerprint = hash(&[
            tally.fingerprint,
            u64::try_from(op).unwrap_or(0),
            outcome.lane,
            u64::from(attempts),
            u64::from(outcome.error.is_some()),
            u64::try_from(rows).unwrap_or(0),
        ]);
    }

    /// No write anywhere in the database applied more often than one execution writes.
    fn verify_database(&self) {
        let over: Vec<(i64, i64)> = self.db.with_connection(|c| {
            let mut statement = c
                .prepare("SELECT op_id, count(*) AS n FROM writes GROUP BY op_id HAVING n > 2 OR (n = 2 AND min(kind) <> 'batch')")
                .expect("the duplicate query prepares");
            statement
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                .expect("the duplicate query runs")
                .collect::<Result<_, _>>()
                .expect("the duplicates read")
        });
        self.check(over.is_empty(), || {
            format!("writes applied twice: {over:?}")
        });
        let dupes: i64 = self
            .db
            .with_connection(|c| c.query_row("SELECT count(*) FROM uniq", [], |row| row.get(0)))
            .expect("the uniq count reads");
        self.check(dupes == 1, || {
            format!("{dupes} rows in `uniq`, the constraint allows 1")
        });
    }

    async fn run(&self) {
        let per_lane = self.ops.div_ceil(LANES);
        let rounds = per_lane.div_ceil(ROUND_OPS_PER_LANE);
        for round in 0..rounds {
            let done = round * ROUND_OPS_PER_LANE;
            let this_round = ROUND_OPS_PER_LANE.min(per_lane - done);
            tokio::join!(
                self.lane(0, round, this_round),
                self.lane(1, round, this_round),
                self.lane(2, round, this_round),
                self.lane(3, round, this_round),
            );
            self.verify_round();
        }
        self.verify_database();
    }

    fn summary(&self) -> String {
        let t = self.tally.borrow();
        let stats = self.db.stats();
        format!(
            "chaos ({:?} path) seed={:#x}: {} operations, {} D1 calls, {} faults injected \
             ({} before execution, {} after), {} retries; caller errors: {} ({} permanent, \
             {} maybe-executed writes, {} after the last attempt, {} stopped by the budget); \
             {} invariants checked; fingerprint {:016x}",
            self.path,
            self.seed,
            t.operations,
            t.calls,
            t.faults_before + t.faults_after,
            t.faults_before,
            t.faults_after,
            t.retries,
            t.caller_errors,
            t.permanent_errors,
            t.maybe_executed_write_errors,
            t.exhausted,
            t.budget_stops,
            t.invariants,
            t.fingerprint,
        ) + &format!(
            " [db: {} calls, {} SQL errors]",
            stats.calls, stats.sql_errors
        )
    }
}

/// One chaos run on a fresh local D1, in its own runtime with tokio's paused clock, so the
/// waits are virtual: hours of retry schedules take seconds.
fn chaos(path: Path, seed: u64, ops: u64) -> Harness {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    runtime.block_on(async {
        let harness = Harness::new(path, seed, ops);
        DRIVER_BUDGETED.budget().expect("budgeted").refill();
        MACRO_BUDGETED.budget().expect("budgeted").refill();
        harness.run().await;
        harness
    })
}

/// The chaos runs of this file take turns: they share the budgets' token pools, and a
/// replay must start from the same pools as the run it replays.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn settings() -> (u64, u64) {
    (
        env_u64("D1_RETRY_CHAOS_SEED", DEFAULT_SEED),
        env_u64("D1_RETRY_CHAOS_OPS", DEFAULT_OPS),
    )
}

fn assert_exercised(harness: &Harness, ops: u64) {
    let tally = harness.tally.borrow();
    println!("{}", harness.summary());
    assert_eq!(tally.operations, ops.div_ceil(LANES) * LANES);
    // The run really exercised what it claims to: a fault plan that injected nothing would
    // pass every invariant vacuously.
    assert!(
        tally.retries > tally.operations / 20,
        "{}",
        harness.summary()
    );
    assert!(
        tally.faults_after > 0 && tally.faults_before > 0,
        "{}",
        harness.summary()
    );
    assert!(
        tally.maybe_executed_write_errors > 0 && tally.permanent_errors > 0 && tally.exhausted > 0,
        "{}",
        harness.summary()
    );
}

#[test]
fn chaos_through_the_retry_driver() {
    let _turn = one_at_a_time();
    let (seed, ops) = settings();
    assert_exercised(&chaos(Path::Driver, seed, ops), ops);
}

#[test]
fn chaos_through_d1_retry_methods() {
    let _turn = one_at_a_time();
    let (seed, ops) = settings();
    assert_exercised(&chaos(Path::Macro, seed, ops), ops);
}

/// The same seed replays the same run: same calls, same faults, same outcomes.
#[test]
fn a_seed_replays_the_same_run() {
    let _turn = one_at_a_time();
    for path in [Path::Driver, Path::Macro] {
        let (a, b, c) = (
            chaos(path, 7, 400),
            chaos(path, 7, 400),
            chaos(path, 8, 400),
        );
        let (a, b, c) = (a.tally.borrow(), b.tally.borrow(), c.tally.borrow());
        assert_eq!(a.fingerprint, b.fingerprint, "{path:?}");
        assert_eq!(
            (a.calls, a.faults_before, a.faults_after),
            (b.calls, b.faults_before, b.faults_after)
        );
        assert_ne!(a.fingerprint, c.fingerprint, "{path:?}");
    }
}
