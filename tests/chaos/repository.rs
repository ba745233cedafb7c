//! The operations the chaos runs: their kinds, how each may be retried, the policies of the
//! driver and attribute paths, the schema and SQL, and the repository of `#[d1_retry]`
//! methods.

use std::time::Duration;

use d1_retry::testing::{D1Database, Error, Value};
use d1_retry::{FailureClass, RetryBudget, RetryPolicy, RetryTokens, d1_retry};

use crate::harness::Harness;

// Policies for the driver path: jittered, seeded per call.
const DRIVER_DEFAULT: RetryPolicy = RetryPolicy::DEFAULT.without_budget();
const DRIVER_SHORT: RetryPolicy = RetryPolicy::DEFAULT
    .without_budget()
    .with_max_attempts(3)
    .with_base_delay(Duration::from_millis(50))
    .with_max_delay(Duration::from_millis(120));
static DRIVER_TOKENS: RetryTokens = RetryTokens::new();
pub const DRIVER_BUDGETED: RetryPolicy = RetryPolicy::DEFAULT.with_budget(
    RetryBudget::new(&DRIVER_TOKENS)
        .with_max_tokens(20)
        .with_token_ratio(0.2),
);
/// The recommended time limits (README, "Stalls: time limits"): each attempt cut after
/// 2 s, the whole call by 10 s; and a deadline that cuts the third attempt of a stalled read.
const DRIVER_TIMED: RetryPolicy = DRIVER_DEFAULT
    .with_attempt_timeout(Duration::from_millis(2_000))
    .with_deadline(Duration::from_millis(10_000));
const DRIVER_TIMED_TIGHT: RetryPolicy = DRIVER_TIMED.with_deadline(Duration::from_millis(5_000));

// Policies for the attribute path: without jitter, so that a seed replays the same run
// (the attribute draws jitter from the platform, not from a seed).
const MACRO_DEFAULT: RetryPolicy = RetryPolicy::DEFAULT.without_budget().with_jitter(100, 100);
const MACRO_SHORT: RetryPolicy = DRIVER_SHORT.with_jitter(100, 100);
static MACRO_TOKENS: RetryTokens = RetryTokens::new();
pub const MACRO_BUDGETED: RetryPolicy = RetryPolicy::DEFAULT.with_jitter(100, 100).with_budget(
    RetryBudget::new(&MACRO_TOKENS)
        .with_max_tokens(20)
        .with_token_ratio(0.2),
);
/// What `policy = MACRO_DEFAULT, attempt_timeout_ms = 2000, deadline_ms = 10_000` makes of
/// the timed methods' policy (and `deadline_ms = 5000` of the tight read's); the checks
/// compare each timeout's message with these limits, so the two cannot drift apart.
const MACRO_TIMED: RetryPolicy = MACRO_DEFAULT
    .with_attempt_timeout(Duration::from_millis(2_000))
    .with_deadline(Duration::from_millis(10_000));
const MACRO_TIMED_TIGHT: RetryPolicy = MACRO_TIMED.with_deadline(Duration::from_millis(5_000));

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    Idempotent,
    /// A write through `first` or `raw` on the attribute's path: their error may be a
    /// row's own text, whatever it says, so it is never retried.
    DecodedWrite,
}

impl Access {
    pub fn retries(self, class: FailureClass) -> bool {
        match self {
            Access::Read | Access::Idempotent => class != FailureClass::Permanent,
            Access::Write => class == FailureClass::NotExecuted,
            Access::DecodedWrite => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
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
    /// A read, an insert and a read in one `#[d1_retry]` method (attribute path only).
    ReadWriteRead,
    /// A loop of inserts in one `#[d1_retry]` method (attribute path only).
    InsertLoop,
    /// With time limits (`attempt_timeout_ms`, `deadline_ms`; `Retry::run_timed` on the
    /// driver path), on SQL the fault plan's stalls strike (it contains `timed`): a read,
    /// a read whose deadline cuts its third attempt, an insert, an idempotent upsert.
    TimedRead,
    TimedReadTight,
    TimedInsert,
    TimedUpsert,
}

impl Kind {
    pub const ALL: [Kind; 14] = [
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
        Kind::TimedRead,
        Kind::TimedReadTight,
        Kind::TimedInsert,
        Kind::TimedUpsert,
    ];

    /// The attribute path runs these too: several executions in one method, each retried
    /// on its own, all sharing the call's `max_attempts - 1` retries.
    pub const PER_CALL: [Kind; 16] = [
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
        Kind::ReadWriteRead,
        Kind::InsertLoop,
        Kind::TimedRead,
        Kind::TimedReadTight,
        Kind::TimedInsert,
        Kind::TimedUpsert,
    ];

    /// The kinds a path runs.
    pub fn all(path: Path) -> &'static [Kind] {
        match path {
            Path::Driver => &Kind::ALL,
            Path::Macro => &Kind::PER_CALL,
        }
    }

    /// How the driver retries the operation's one attempt (the kinds both paths run).
    pub fn access(self) -> Access {
        match self {
            Kind::Read
            | Kind::ReadShort
            | Kind::DynamicRead
            | Kind::TimedRead
            | Kind::TimedReadTight => Access::Read,
            Kind::Upsert | Kind::TimedUpsert => Access::Idempotent,
            Kind::Insert
            | Kind::TimedInsert
            | Kind::InsertBudgeted
            | Kind::Batch
            | Kind::Exec
            | Kind::Duplicate
            | Kind::DynamicWrite
            | Kind::ReadWriteRead
            | Kind::InsertLoop => Access::Write,
        }
    }

    /// Rows of `writes` one execution adds.
    fn rows_written(self) -> i64 {
        match self {
            Kind::Insert
            | Kind::InsertBudgeted
            | Kind::Exec
            | Kind::DynamicWrite
            | Kind::InsertLoop
            | Kind::TimedInsert => 1,
            Kind::Batch => 2,
            _ => 0,
        }
    }

    /// The executions the operation makes, in order, when none fails for good: how each
    /// may be retried, and the rows of `writes` it adds. `items` is an insert loop's length.
    /// On the attribute's path, the dynamic write goes through `raw`: a decoded write.
    pub fn executions(self, items: u32, path: Path) -> Vec<(Access, i64)> {
        match self {
            Kind::ReadWriteRead => vec![(Access::Read, 0), (Access::Write, 1), (Access::Read, 0)],
            Kind::InsertLoop => vec![(Access::Write, 1); items as usize],
            Kind::DynamicWrite if path == Path::Macro => vec![(Access::DecodedWrite, 1)],
            _ => vec![(self.access(), self.rows_written())],
        }
    }

    /// Whether the body runs once per call however often D1 is called: every method on
    /// the attribute path but the `idempotent` one, whose whole body is retried.
    pub fn body_runs_once(self, path: Path) -> bool {
        path == Path::Macro && self.access() != Access::Idempotent
    }

    /// Whether the kind runs with time limits, and meets the fault plan's stalls.
    pub fn timed(self) -> bool {
        matches!(
            self,
            Kind::TimedRead | Kind::TimedReadTight | Kind::TimedInsert | Kind::TimedUpsert
        )
    }

    pub fn policy(self, path: Path) -> RetryPolicy {
        match (self, path) {
            (Kind::ReadShort | Kind::Duplicate, Path::Driver) => DRIVER_SHORT,
            (Kind::ReadShort | Kind::Duplicate, Path::Macro) => MACRO_SHORT,
            (Kind::InsertBudgeted, Path::Driver) => DRIVER_BUDGETED,
            (Kind::InsertBudgeted, Path::Macro) => MACRO_BUDGETED,
            (Kind::TimedRead | Kind::TimedInsert | Kind::TimedUpsert, Path::Driver) => DRIVER_TIMED,
            (Kind::TimedRead | Kind::TimedInsert | Kind::TimedUpsert, Path::Macro) => MACRO_TIMED,
            (Kind::TimedReadTight, Path::Driver) => DRIVER_TIMED_TIGHT,
            (Kind::TimedReadTight, Path::Macro) => MACRO_TIMED_TIGHT,
            (_, Path::Driver) => DRIVER_DEFAULT,
            (_, Path::Macro) => MACRO_DEFAULT,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    Driver,
    Macro,
}

pub const SCHEMA: &str = "
    CREATE TABLE writes (op_id INTEGER NOT NULL, kind TEXT NOT NULL);
    CREATE INDEX writes_op ON writes (op_id);
    CREATE TABLE kv (key INTEGER PRIMARY KEY, value INTEGER NOT NULL, op INTEGER);
    CREATE TABLE uniq (email TEXT NOT NULL UNIQUE, op INTEGER);
    INSERT INTO uniq (email) VALUES ('taken@example.com');
";

pub const READ_SQL: &str = "SELECT value, ?1 AS op FROM kv WHERE key = ?2";
pub const INSERT_SQL: &str = "INSERT INTO writes (op_id, kind) VALUES (?1, 'insert')";
pub const UPSERT_SQL: &str = "INSERT INTO kv (key, value, op) VALUES (?2, ?3, ?1) \
                          ON CONFLICT (key) DO UPDATE SET value = excluded.value, op = excluded.op";
pub const BATCH_SQL: &str = "INSERT INTO writes (op_id, kind) VALUES (?1, 'batch')";
pub const DUPLICATE_SQL: &str = "INSERT INTO uniq (email, op) VALUES ('taken@example.com', ?1)";
pub const DYNAMIC_READ_SQL: &str = "SELECT count(*) AS n, ?1 AS op FROM kv WHERE key >= ?2";
pub const DYNAMIC_WRITE_SQL: &str = "INSERT INTO writes (op_id, kind) VALUES (?1, 'dynamic')";
/// What the stalls of the fault plan look for: only the timed kinds' SQL contains it.
pub const TIMED_MARK: &str = "timed";
pub const TIMED_READ_SQL: &str = "SELECT value, ?1 AS op FROM kv /* timed */ WHERE key = ?2";
pub const TIMED_INSERT_SQL: &str = "INSERT INTO writes (op_id, kind) VALUES (?1, 'timed')";
pub const TIMED_UPSERT_SQL: &str = "INSERT INTO kv (key, value, op) VALUES (?2, ?3, ?1) /* timed */ \
                          ON CONFLICT (key) DO UPDATE SET value = excluded.value, op = excluded.op";

pub fn exec_sql(op: i64) -> String {
    format!("/* op {op} */ INSERT INTO writes (op_id, kind) VALUES ({op}, 'exec')")
}

pub struct Repo<'h> {
    pub harness: &'h Harness,
    pub db: D1Database,
}

impl Repo<'_> {
    /// Counts a run of the body (once per call, except under `idempotent`).
    fn stamp(&self, op: i64) {
        self.harness.stamp(op);
    }

    #[d1_retry(policy = MACRO_DEFAULT)]
    pub async fn read(&self, op: i64, key: i64) -> Result<Option<i64>, Error> {
        self.stamp(op);
        self.db
            .prepare("SELECT value, ?1 AS op FROM kv WHERE key = ?2")
            .bind(&[op.into(), key.into()])?
            .first(Some("value"))
            .await
    }

    #[d1_retry(policy = MACRO_SHORT)]
    pub async fn read_short(&self, op: i64, key: i64) -> Result<Option<i64>, Error> {
        self.stamp(op);
        self.db
            .prepare("SELECT value, ?1 AS op FROM kv WHERE key = ?2")
            .bind(&[op.into(), key.into()])?
            .first(Some("value"))
            .await
    }

    #[d1_retry(policy = MACRO_DEFAULT)]
    pub async fn insert(&self, op: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db
            .prepare("INSERT INTO writes (op_id, kind) VALUES (?1, 'insert')")
            .bind(&[op.into()])?
            .run()
            .await
            .map(|_| ())
    }

    #[d1_retry(policy = MACRO_BUDGETED)]
    pub async fn insert_budgeted(&self, op: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db
            .prepare("INSERT INTO writes (op_id, kind) VALUES (?1, 'insert')")
            .bind(&[op.into()])?
            .run()
            .await
            .map(|_| ())
    }

    #[d1_retry(idempotent, policy = MACRO_DEFAULT)]
    pub async fn upsert(&self, op: i64, key: i64, value: i64) -> Result<(), Error> {
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
    pub async fn batch(&self, op: i64) -> Result<(), Error> {
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
    pub async fn exec(&self, op: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db.exec(&exec_sql(op)).await.map(|_| ())
    }

    #[d1_retry(policy = MACRO_SHORT)]
    pub async fn duplicate(&self, op: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db
            .prepare("INSERT INTO uniq (email, op) VALUES ('taken@example.com', ?1)")
            .bind(&[op.into()])?
            .run()
            .await
            .map(|_| ())
    }

    /// Three executions in one body: each retried on its own (the reads after any
    /// transient failure, the insert only when D1 was not reached), none run again once it
    /// completed, all sharing the call's retries.
    #[d1_retry(policy = MACRO_DEFAULT)]
    pub async fn read_write_read(
        &self,
        op: i64,
        key: i64,
    ) -> Result<(Option<i64>, Option<i64>), Error> {
        self.stamp(op);
        let before = self
            .db
            .prepare("SELECT value, ?1 AS op FROM kv WHERE key = ?2")
            .bind(&[op.into(), key.into()])?
            .first(Some("value"))
            .await?;
        self.db
            .prepare("INSERT INTO writes (op_id, kind) VALUES (?1, 'rwr')")
            .bind(&[op.into()])?
            .run()
            .await?;
        let after = self
            .db
            .prepare("SELECT value, ?1 AS op FROM kv WHERE key = ?2")
            .bind(&[op.into(), key.into()])?
            .first(Some("value"))
            .await?;
        Ok((before, after))
    }

    /// One statement prepared once, bound and run for each item: an insert that failed
    /// before D1 ran it is retried, and no other.
    #[d1_retry(policy = MACRO_DEFAULT)]
    pub async fn insert_loop(&self, op: i64, items: u32) -> Result<(), Error> {
        self.stamp(op);
        let insert = self
            .db
            .prepare("INSERT INTO writes (op_id, kind) VALUES (?1, ?2)");
        for item in 0..items {
            insert
                .clone()
                .bind(&[op.into(), format!("loop {item}").into()])?
                .run()
                .await?;
        }
        Ok(())
    }

    /// A read with the recommended time limits: a stalled attempt is cut after 2 s and
    /// retried, the call ends by its 10 s deadline.
    #[d1_retry(policy = MACRO_DEFAULT, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    pub async fn timed_read(&self, op: i64, key: i64) -> Result<Option<i64>, Error> {
        self.stamp(op);
        self.db
            .prepare("SELECT value, ?1 AS op FROM kv /* timed */ WHERE key = ?2")
            .bind(&[op.into(), key.into()])?
            .first(Some("value"))
            .await
    }

    /// The same read with a 5 s deadline: a third stalled attempt is cut by the deadline.
    #[d1_retry(policy = MACRO_DEFAULT, attempt_timeout_ms = 2000, deadline_ms = 5000)]
    pub async fn timed_read_tight(&self, op: i64, key: i64) -> Result<Option<i64>, Error> {
        self.stamp(op);
        self.db
            .prepare("SELECT value, ?1 AS op FROM kv /* timed */ WHERE key = ?2")
            .bind(&[op.into(), key.into()])?
            .first(Some("value"))
            .await
    }

    /// An insert with time limits: a stalled insert is cut and handed back, never retried
    /// (it may have run).
    #[d1_retry(policy = MACRO_DEFAULT, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    pub async fn timed_insert(&self, op: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db
            .prepare("INSERT INTO writes (op_id, kind) VALUES (?1, 'timed')")
            .bind(&[op.into()])?
            .run()
            .await
            .map(|_| ())
    }

    /// An idempotent upsert with time limits: each whole attempt is cut after 2 s.
    #[d1_retry(
        idempotent,
        policy = MACRO_DEFAULT,
        attempt_timeout_ms = 2000,
        deadline_ms = 10_000
    )]
    pub async fn timed_upsert(&self, op: i64, key: i64, value: i64) -> Result<(), Error> {
        self.stamp(op);
        self.db
            .prepare(
                "INSERT INTO kv (key, value, op) VALUES (?2, ?3, ?1) /* timed */ \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, op = excluded.op",
            )
            .bind(&[op.into(), key.into(), value.into()])?
            .run()
            .await
            .map(|_| ())
    }

    /// SQL known only at run time: the attribute scans it where it is prepared.
    #[d1_retry(policy = MACRO_DEFAULT)]
    pub async fn dynamic(
        &self,
        op: i64,
        sql: &str,
        params: &[Value],
    ) -> Result<Vec<Vec<Value>>, Error> {
        self.stamp(op);
        self.db.prepare(sql).bind(params)?.raw().await
    }
}
