//! Runs the operations in lanes, in rounds, on a local D1 with the fault plan, and records
//! what each caller saw and when each attempt started.

use std::cell::RefCell;
use std::collections::HashMap;

use d1_retry::Retry;
use d1_retry::testing::{Clock, D1Database, Error, Value};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

use crate::faults::{CallStamps, fault_plan, hash};
use crate::ms;
use crate::repository::{
    Access, BATCH_SQL, DUPLICATE_SQL, DYNAMIC_READ_SQL, DYNAMIC_WRITE_SQL, INSERT_SQL, Kind, Path,
    READ_SQL, Repo, SCHEMA, TIMED_INSERT_SQL, TIMED_READ_SQL, TIMED_UPSERT_SQL, UPSERT_SQL,
    exec_sql,
};

pub const LANES: u64 = 4;
const ROUND_OPS_PER_LANE: u64 = 50;
/// Keys of `kv` per lane; a lane owns its keys, so it can check its reads at once.
const KEYS_PER_LANE: i64 = 40;

/// What one operation did, as its caller saw it.
#[derive(Debug)]
pub struct Outcome {
    pub op: i64,
    pub lane: u64,
    pub kind: Kind,
    /// The length of an insert loop (0 for the other kinds).
    pub items: u32,
    /// The error message the caller got, if any.
    pub error: Option<String>,
    /// When the body started (virtual time), each time it ran: once for a `#[d1_retry]`
    /// method (its executions are retried on their own), once per attempt for an
    /// `idempotent` one and for the driver.
    pub stamps: Vec<Instant>,
    /// When the caller made the call, and when it had its answer (virtual time).
    pub started: Instant,
    pub ended: Instant,
}

#[derive(Default, Debug)]
pub struct Tally {
    pub operations: u64,
    pub calls: u64,
    pub faults_before: u64,
    pub faults_after: u64,
    pub retries: u64,
    pub caller_errors: u64,
    pub permanent_errors: u64,
    pub maybe_executed_write_errors: u64,
    pub exhausted: u64,
    pub budget_stops: u64,
    /// Operations of several executions (read-write-read, insert loops).
    pub multi_execution_ops: u64,
    /// Retries of an execution after an earlier one of the same call completed.
    pub later_execution_retries: u64,
    /// Operations with time limits, and what their stalls did.
    pub timed_operations: u64,
    pub stalled_calls: u64,
    /// Stalled calls cut by a time limit (their futures dropped mid-stall), by limit.
    pub attempt_timeouts: u64,
    pub deadline_cuts: u64,
    /// Cut calls of reads (and idempotent upserts) that were retried.
    pub timed_out_reads_retried: u64,
    /// Writes whose caller got a timeout: handed back, not retried.
    pub timed_out_writes_handed_back: u64,
    /// Of those, writes D1 had run before the caller gave up (in the database once).
    pub timed_out_writes_in_database: u64,
    /// Calls that stopped because the next retry's wait would pass the deadline.
    pub deadline_stops: u64,
    pub invariants: u64,
    pub fingerprint: u64,
}

pub struct Harness {
    pub path: Path,
    pub seed: u64,
    pub ops: u64,
    pub db: D1Database,
    pub stamps: RefCell<HashMap<i64, Vec<Instant>>>,
    /// When each D1 call was made.
    pub call_stamps: CallStamps,
    pub outcomes: RefCell<Vec<Outcome>>,
    pub tally: RefCell<Tally>,
}

impl Harness {
    pub fn new(path: Path, seed: u64, ops: u64) -> Self {
        let db = D1Database::open_in_memory().expect("an in-memory SQLite opens");
        db.with_connection(|c| c.execute_batch(SCHEMA))
            .expect("the schema applies");
        let call_stamps = CallStamps::default();
        db.set_faults(fault_plan(seed, &Clock::tokio(), &call_stamps));
        Harness {
            path,
            seed,
            ops,
            db,
            stamps: RefCell::default(),
            call_stamps,
            outcomes: RefCell::default(),
            tally: RefCell::default(),
        }
    }

    pub fn stamp(&self, op: i64) {
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

    pub fn check(&self, ok: bool, what: impl FnOnce() -> String) {
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
        let items = if kind == Kind::InsertLoop {
            rng.random_range(1..=5)
        } else {
            0
        };
        let repo = Repo {
            harness: self,
            db: self.db.clone(),
        };
        let started = Instant::now();
        let error = match kind {
            Kind::Read | Kind::ReadShort | Kind::TimedRead | Kind::TimedReadTight => {
                let read = match self.path {
                    Path::Macro => match kind {
                        Kind::Read => repo.read(op, key).await,
                        Kind::ReadShort => repo.read_short(op, key).await,
                        Kind::TimedRead => repo.timed_read(op, key).await,
                        _ => repo.timed_read_tight(op, key).await,
                    },
                    Path::Driver => {
                        let sql = if kind.timed() {
                            TIMED_READ_SQL
                        } else {
                            READ_SQL
                        };
                        self.driver(kind, jitter_seed, op, || async {
                            self.db
                                .prepare(sql)
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
            Kind::Upsert | Kind::TimedUpsert => {
                let result = match self.path {
                    Path::Macro if kind == Kind::Upsert => repo.upsert(op, key, value).await,
                    Path::Macro => repo.timed_upsert(op, key, value).await,
                    Path::Driver => {
                        let sql = if kind.timed() {
                            TIMED_UPSERT_SQL
                        } else {
                            UPSERT_SQL
                        };
                        self.driver(kind, jitter_seed, op, || async {
                            self.db
                                .prepare(sql)
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
            Kind::Insert | Kind::InsertBudgeted | Kind::TimedInsert => match self.path {
                Path::Macro if kind == Kind::Insert => repo.insert(op).await.err(),
                Path::Macro if kind == Kind::TimedInsert => repo.timed_insert(op).await.err(),
                Path::Macro => repo.insert_budgeted(op).await.err(),
                Path::Driver => self
                    .driver(kind, jitter_seed, op, || async {
                        let sql = if kind.timed() {
                            TIMED_INSERT_SQL
                        } else {
                            INSERT_SQL
                        };
                        self.db
                            .prepare(sql)
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
            // Attribute path only: several executions in one method.
            Kind::ReadWriteRead => {
                let read = repo.read_write_read(op, key).await;
                if let Ok((first, second)) = &read {
                    let held = self.kv(key);
                    self.check(*first == held && *second == held, || {
                        format!(
                            "op {op} ({kind:?}) read {first:?} and {second:?}, the database \
                             holds {held:?}"
                        )
                    });
                }
                read.err()
            }
            Kind::InsertLoop => repo.insert_loop(op, items).await.err(),
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
        let ended = Instant::now();
        let stamps = self.stamps.borrow_mut().remove(&op).unwrap_or_default();
        self.outcomes.borrow_mut().push(Outcome {
            op,
            lane,
            kind,
            items,
            error: error.map(|e| e.to_string()),
            stamps,
            started,
            ended,
        });
    }

    /// The driver path: `d1_retry::Retry`, with the kind's access and policy; within the
    /// policy's time limits (`run_timed`) when it has them.
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
        let policy = kind.policy(Path::Driver);
        let retry = Retry::new("chaos").policy(policy).seed(seed);
        let retry = match kind.access() {
            Access::Read => retry.read_only(true),
            Access::Idempotent => retry.idempotent(true),
            Access::Write | Access::DecodedWrite => retry,
        };
        let attempt = || {
            self.stamp(op);
            attempt()
        };
        if policy.has_time_limits() {
            retry.run_timed(attempt).await
        } else {
            retry.run(attempt).await
        }
    }

    async fn lane(&self, lane: u64, round: u64, ops: u64) {
        let mut rng = SmallRng::seed_from_u64(hash(&[self.seed, lane, round]));
        for i in 0..ops {
            let index = round * ROUND_OPS_PER_LANE + i;
            let op = i64::try_from(index * LANES + lane + 1).unwrap_or(i64::MAX);
            let kinds = Kind::all(self.path);
            let kind = kinds[rng.random_range(0..kinds.len())];
            self.operation(lane, op, kind, &mut rng).await;
            // Think time, so that virtual time moves through the outages.
            tokio::time::sleep(ms(rng.random_range(0..120))).await;
        }
    }

    pub async fn run(&self) {
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

    pub fn summary(&self) -> String {
        let t = self.tally.borrow();
        let stats = self.db.stats();
        format!(
            "chaos ({:?} path) seed={:#x}: {} operations, {} D1 calls, {} faults injected \
             ({} before execution, {} after), {} retries; caller errors: {} ({} permanent, \
             {} maybe-executed writes, {} after the last attempt, {} stopped by the budget); \
             {} operations of several executions, {} retries after an earlier execution \
             completed; {} invariants checked; fingerprint {:016x}",
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
            t.multi_execution_ops,
            t.later_execution_retries,
            t.invariants,
            t.fingerprint,
        ) + &format!(
            "; stalls: {} operations with time limits, {} stalled calls, {} cut by the \
             attempt timeout and {} by the deadline, {} cut reads retried, {} cut writes \
             handed back ({} of them in the database, once), {} calls stopped before a wait \
             past the deadline [db: {} calls, {} SQL errors, {} stalled, {} dropped]",
            t.timed_operations,
            t.stalled_calls,
            t.attempt_timeouts,
            t.deadline_cuts,
            t.timed_out_reads_retried,
            t.timed_out_writes_handed_back,
            t.timed_out_writes_in_database,
            t.deadline_stops,
            stats.calls,
            stats.sql_errors,
            stats.stalled,
            stats.dropped
        )
    }
}
