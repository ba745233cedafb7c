//! The repository methods whose happy path `benches/happy_path.rs` times and
//! `tests/happy_path_alloc.rs` counts the allocations of, and the sizes of their futures.
//!
//! One source for both: each includes this file as a module of its own
//! (`#[path = "../test-support/shared/happy_path.rs"] mod happy_path;`), so the sizes the
//! test prints and asserts on are those of the very futures the bench times (in the test's
//! profile: the bench prints the release figures, the test the dev ones). It is not a module
//! of the test-support crate: `#[d1_retry]` expands to paths of the `d1_retry` facade, which
//! test-support does not depend on, and a method compiled in another crate would not be
//! inlined into the bench's loop as the plain one is.
//!
//! Every variant reads one row through the same stand-in D1 statement, which completes on its
//! first poll: the plain call, `#[d1_retry]` (also named, with time limits, and with a policy
//! constant with and without them), the `Retry` builder, and the peers a user would pick
//! instead, backon and tokio-retry2, configured to d1-retry's default schedule as far as each
//! allows and retrying only what d1-retry retries.

// Each includer uses its own part (the bench: the timed reads; the test: writes as well).
#![allow(dead_code)]

use std::hint::black_box;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use d1_retry::{Retry, classify, d1_retry, should_retry};
use tokio_retry2::strategy::{ExponentialFactorBackoff, jitter_with_bounds};
use tokio_retry2::{RetryError, RetryIf};

/// The error of the stand-in database: its text is what `classify` reads.
#[derive(Debug)]
pub struct DbError(pub String);

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DbError {}

impl From<d1_retry::TimedOut> for DbError {
    fn from(error: d1_retry::TimedOut) -> Self {
        DbError(error.to_string())
    }
}

/// What `first()` returns: the id and the length of the SQL, so the work is observable.
pub type Row = Option<(i64, usize)>;

/// A stand-in for `worker::D1Database` whose statements complete on their first poll
/// without doing anything.
pub struct Instant;

#[derive(Clone)]
pub struct InstantStatement<'q> {
    sql: &'q str,
    id: i64,
}

impl Instant {
    pub fn prepare<'q>(&self, sql: &'q str) -> InstantStatement<'q> {
        InstantStatement { sql, id: 0 }
    }
}

impl InstantStatement<'_> {
    pub fn bind(mut self, id: i64) -> Self {
        self.id = id;
        self
    }

    pub async fn first(&self) -> Result<Row, DbError> {
        // black_box keeps the "query" from being folded away at compile time, so every
        // variant does the same observable work.
        Ok(Some((black_box(self.id), black_box(self.sql).len())))
    }

    pub async fn run(&self) -> Result<usize, DbError> {
        Ok(black_box(self.sql).len() + usize::from(black_box(self.id) > 0))
    }
}

// Marked like `worker`'s statements, so the annotated methods take the retrying path, and
// like its database, whose `prepare` prepares the SQL it is given, so that the attribute
// judges that SQL (a read) rather than counting the statement out of sight.
impl d1_retry::D1Receiver for InstantStatement<'_> {}
impl d1_retry::D1Receiver for Instant {}
impl d1_retry::D1Prepare for Instant {}

/// The same stand-in without the [`d1_retry::D1Receiver`] mark: `#[d1_retry]` makes its
/// calls once, as written. Not timed: `tests/happy_path_alloc.rs` compares its future with the
/// marked one's, to know the marked methods take the retrying path.
pub struct Unmarked;

pub struct UnmarkedStatement<'q>(InstantStatement<'q>);

impl Unmarked {
    pub fn prepare<'q>(&self, sql: &'q str) -> UnmarkedStatement<'q> {
        UnmarkedStatement(Instant.prepare(sql))
    }
}

impl UnmarkedStatement<'_> {
    pub fn bind(self, id: i64) -> Self {
        UnmarkedStatement(self.0.bind(id))
    }

    pub async fn first(&self) -> Result<Row, DbError> {
        self.0.first().await
    }
}

/// A dynamic read of 100 bytes: the size issue 10's goal is stated for ("scanning a 100-byte
/// dynamic read per attempt below 100 ns"). A join, a quoted value holding a write keyword.
pub const DYNAMIC_SQL: &str = "SELECT u.id, u.name FROM users u JOIN orders o ON o.user_id=u.id \
                               WHERE u.id = ?1 AND o.tag <> 'drop'";

const _: () = assert!(DYNAMIC_SQL.len() == 100);
const _: () = assert!(d1_retry::is_read_only(DYNAMIC_SQL));

/// backon configured to d1-retry's default schedule: 200 ms, doubling, capped at 2 s,
/// jittered, 4 retries (5 attempts in all). What differs: backon's jitter adds 0 to 100 % of
/// the delay (waits of 100-200 % of it, d1-retry's are 80-120 %); backon has no retry budget
/// shared between calls; its RNG is forked from fastrand's thread-local one on every call.
pub const BACKON_SCHEDULE: ExponentialBuilder = ExponentialBuilder::new()
    .with_min_delay(Duration::from_millis(200))
    .with_factor(2.0)
    .with_max_delay(Duration::from_secs(2))
    .with_jitter()
    .with_max_times(4);

/// tokio-retry2 configured to d1-retry's default schedule: 200 ms, doubling, capped at 2 s,
/// then jittered to 80-120 %, 4 retries (5 attempts in all): the same delays. What differs:
/// the jitter is drawn from `rand`'s thread RNG (d1-retry seeds its own), there is no retry
/// budget shared between calls, and `RetryIf::spawn` creates the first attempt's future when
/// it is called rather than on the first poll.
pub fn tokio_retry2_schedule() -> impl Iterator<Item = Duration> {
    ExponentialFactorBackoff::from_millis(200, 2.0)
        .max_delay_millis(2000)
        .map(jitter_with_bounds(0.8, 1.2))
        .take(4)
}

/// The peers' retry condition: what d1-retry retries after a failed read. `classify` reads
/// the error and its sources into d1-retry's failure classes, and `should_retry` is d1-retry's
/// own table (a read is retried when D1 was not reached or may have run it). The SQL of the
/// reads below is a literal `SELECT`, which d1-retry judges read-only at compile time, so
/// `true`. It runs only after a failure: on the happy path no variant classifies anything.
pub fn retried_like_d1_retry_read(error: &DbError) -> bool {
    should_retry(classify(error), true)
}

/// A no-op `notify` for tokio-retry2's `RetryIf` (its own is not public).
pub fn notify_nothing(_: &DbError, _: Duration) {}

pub struct UserRepo<Db> {
    pub db: Db,
}

impl UserRepo<Instant> {
    pub async fn find_plain(&self, id: i64) -> Result<Row, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .first()
            .await
    }

    #[d1_retry]
    pub async fn find(&self, id: i64) -> Result<Row, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .first()
            .await
    }

    /// With the operation named, the default `Type::method` name is not built.
    #[d1_retry(name = "UserRepo::find")]
    pub async fn find_named(&self, id: i64) -> Result<Row, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .first()
            .await
    }

    /// With the recommended time limits: the call races a 2 s timer, within a 10 s deadline.
    /// Polling it needs a tokio runtime with time enabled, entered.
    #[d1_retry(attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    pub async fn find_timed(&self, id: i64) -> Result<Row, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .first()
            .await
    }

    /// With a policy constant, as most Workers name theirs: the attribute cannot read it,
    /// and the compiler picks the loop from its value. This one has no time limits, so the
    /// loop is `#[d1_retry]`'s own, with no clock and no timer.
    #[d1_retry(policy = POLICY)]
    pub async fn find_with_policy(&self, id: i64) -> Result<Row, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .first()
            .await
    }

    /// With a policy constant that has the recommended time limits: the time-limited loop,
    /// as with the options. Polling it needs a tokio runtime with time enabled, entered.
    #[d1_retry(policy = TIMED_POLICY)]
    pub async fn find_with_timed_policy(&self, id: i64) -> Result<Row, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .first()
            .await
    }

    /// d1-retry's builder instead of the attribute.
    pub async fn find_with_builder(&self, id: i64) -> Result<Row, DbError> {
        Retry::new("UserRepo::find_with_builder")
            .read_only(true)
            .run(|| async move {
                self.db
                    .prepare("SELECT id, name FROM users WHERE id = ?1")
                    .bind(id)
                    .first()
                    .await
            })
            .await
    }

    /// backon's `Retryable`, its default (tokio) sleeper.
    pub async fn find_backon(&self, id: i64) -> Result<Row, DbError> {
        (|| async move {
            self.db
                .prepare("SELECT id, name FROM users WHERE id = ?1")
                .bind(id)
                .first()
                .await
        })
        .retry(BACKON_SCHEDULE)
        .when(retried_like_d1_retry_read)
        .await
    }

    /// tokio-retry2's `RetryIf`: every error is handed to it as transient, and the condition
    /// decides, as backon's `when` does.
    pub async fn find_tokio_retry2(&self, id: i64) -> Result<Row, DbError> {
        RetryIf::spawn(
            tokio_retry2_schedule(),
            || async move {
                self.db
                    .prepare("SELECT id, name FROM users WHERE id = ?1")
                    .bind(id)
                    .first()
                    .await
                    .map_err(RetryError::transient)
            },
            retried_like_d1_retry_read,
            notify_nothing,
        )
        .await
    }

    pub async fn rename_plain(&self, id: i64) -> Result<usize, DbError> {
        self.db
            .prepare("UPDATE users SET name = 'x' WHERE id = ?1")
            .bind(id)
            .run()
            .await
    }

    #[d1_retry]
    pub async fn rename(&self, id: i64) -> Result<usize, DbError> {
        self.db
            .prepare("UPDATE users SET name = 'x' WHERE id = ?1")
            .bind(id)
            .run()
            .await
    }

    pub async fn query_plain(&self, sql: &str, id: i64) -> Result<Row, DbError> {
        self.db.prepare(sql).bind(id).first().await
    }

    /// Dynamic SQL: the expansion scans `sql` where it is prepared, in every attempt.
    #[d1_retry]
    pub async fn query(&self, sql: &str, id: i64) -> Result<Row, DbError> {
        self.db.prepare(sql).bind(id).first().await
    }

    /// backon's `Retryable` over the same dynamic read, retried whole as a
    /// `#[d1_retry(read_only)]` body of more than one call is (backon scans nothing: its
    /// condition is the read's).
    pub async fn query_backon(&self, sql: &str, id: i64) -> Result<Row, DbError> {
        (|| async move { self.db.prepare(sql).bind(id).first().await })
            .retry(BACKON_SCHEDULE)
            .when(retried_like_d1_retry_read)
            .await
    }

    /// Dynamic SQL vouched for, in a body that is one D1 call: that call retried on its own
    /// (as the default mode's), the SQL scanned where it is prepared, to tell a write the
    /// body should not have made.
    #[d1_retry(read_only)]
    pub async fn query_read_only(&self, sql: &str, id: i64) -> Result<Row, DbError> {
        self.db.prepare(sql).bind(id).first().await
    }

    /// The same body kept whole by a second `.await`, of a future ready at once: the whole
    /// body retried as a read, what a `read_only` body of more than one call is, the SQL
    /// scanned where it is prepared in each attempt.
    #[d1_retry(read_only)]
    pub async fn query_read_only_whole(&self, sql: &str, id: i64) -> Result<Row, DbError> {
        core::future::ready(()).await;
        self.db.prepare(sql).bind(id).first().await
    }
}

impl UserRepo<Unmarked> {
    /// `UserRepo<Instant>::find`, word for word, over the unmarked statement.
    #[d1_retry]
    pub async fn find(&self, id: i64) -> Result<Row, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .first()
            .await
    }
}

/// A policy constant without time limits, for [`UserRepo::find_with_policy`].
pub const POLICY: d1_retry::RetryPolicy = d1_retry::RetryPolicy::DEFAULT;

/// The recommended time limits in a policy constant, for
/// [`UserRepo::find_with_timed_policy`]: `find_timed`'s, given as options there.
pub const TIMED_POLICY: d1_retry::RetryPolicy = d1_retry::RetryPolicy::DEFAULT
    .with_attempt_timeout(Duration::from_millis(2000))
    .with_deadline(Duration::from_millis(10_000));

/// The size of one future, and the bench that times it (`group/function`), if one does.
pub struct FutureSize {
    pub what: &'static str,
    pub bench: Option<&'static str>,
    pub bytes: usize,
}

/// `size_of_val` of every future above, for the same call (`id` 7, [`DYNAMIC_SQL`]).
pub fn future_sizes(repo: &UserRepo<Instant>) -> [FutureSize; 16] {
    let size = |what, bench, bytes| FutureSize { what, bench, bytes };
    [
        size(
            "plain read",
            Some("happy_path/plain"),
            size_of_val(&repo.find_plain(7)),
        ),
        size(
            "#[d1_retry] read",
            Some("happy_path/d1_retry"),
            size_of_val(&repo.find(7)),
        ),
        size(
            "#[d1_retry(name)] read",
            Some("happy_path/d1_retry_named"),
            size_of_val(&repo.find_named(7)),
        ),
        size(
            "backon read",
            Some("happy_path/backon"),
            size_of_val(&repo.find_backon(7)),
        ),
        size(
            "tokio-retry2 read",
            Some("happy_path/tokio_retry2"),
            size_of_val(&repo.find_tokio_retry2(7)),
        ),
        size(
            "Retry builder read",
            Some("happy_path/retry_builder"),
            size_of_val(&repo.find_with_builder(7)),
        ),
        size(
            "#[d1_retry(attempt_timeout_ms, deadline_ms)] read",
            Some("happy_path/d1_retry_timed"),
            size_of_val(&repo.find_timed(7)),
        ),
        size(
            "#[d1_retry(policy = POLICY)] read",
            Some("happy_path/d1_retry_policy"),
            size_of_val(&repo.find_with_policy(7)),
        ),
        size(
            "#[d1_retry(policy = TIMED_POLICY)] read",
            None,
            size_of_val(&repo.find_with_timed_policy(7)),
        ),
        size("plain write", None, size_of_val(&repo.rename_plain(7))),
        size("#[d1_retry] write", None, size_of_val(&repo.rename(7))),
        size(
            "plain dynamic read",
            Some("happy_path_dynamic_sql/plain"),
            size_of_val(&repo.query_plain(DYNAMIC_SQL, 7)),
        ),
        size(
            "#[d1_retry] dynamic read",
            Some("happy_path_dynamic_sql/d1_retry"),
            size_of_val(&repo.query(DYNAMIC_SQL, 7)),
        ),
        size(
            "#[d1_retry(read_only)] dynamic read",
            Some("happy_path_dynamic_sql/d1_retry_read_only"),
            size_of_val(&repo.query_read_only(DYNAMIC_SQL, 7)),
        ),
        size(
            "#[d1_retry(read_only)] dynamic read, retried whole",
            Some("happy_path_dynamic_sql/d1_retry_read_only_whole"),
            size_of_val(&repo.query_read_only_whole(DYNAMIC_SQL, 7)),
        ),
        size(
            "backon dynamic read",
            Some("happy_path_dynamic_sql/backon"),
            size_of_val(&repo.query_backon(DYNAMIC_SQL, 7)),
        ),
    ]
}

/// The sizes as lines of text, one future a line, for the bench and the test to print.
pub fn future_size_report(repo: &UserRepo<Instant>, profile: &str) -> String {
    let mut report = format!("future sizes ({profile}):\n");
    for FutureSize { what, bench, bytes } in future_sizes(repo) {
        let bench = bench.map_or(String::new(), |bench| format!("  [{bench}]"));
        report.push_str(&format!("  {what}: {bytes} B{bench}\n"));
    }
    report
}
