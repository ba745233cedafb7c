//! What `#[d1_retry]` costs when nothing fails: the same repository method plain, with the
//! attribute, through d1-retry's `Retry` builder, and through the retry crates a user would
//! pick instead (backon, tokio-retry2), over a database call that succeeds at once.
//!
//! The methods and the stand-in database are `test-support/shared/happy_path.rs`, shared
//! with `tests/happy_path_alloc.rs`: the future sizes this bench prints (release) and the test
//! prints (dev) are those of the futures timed here.
//!
//! The futures are polled by a no-op-waker loop rather than a runtime, so that the figures
//! are the retry layer's own cost and not an executor's. Three comparisons, each in one
//! group so that the machine's noise falls on every variant alike:
//!
//! - `happy_path`: a call that does nothing (returns its arguments), the worst case for the
//!   ratio: it shows each retry layer's fixed cost in nanoseconds. Variants: `plain`,
//!   `d1_retry`, `d1_retry_named`, `backon`, `tokio_retry2`, `retry_builder`, and
//!   `d1_retry_timed` (time limits: the call raced against tokio's timer, the deadline's
//!   stopwatch started), and `d1_retry_policy` (`policy = POLICY`, a constant without time
//!   limits, which the compiler gives the loop without them). The whole group runs inside one entered tokio runtime (time
//!   enabled), which the timed variant needs and the peers' sleepers would use: every
//!   variant runs with it entered, none is driven by it;
//! - `happy_path_sqlite`: a real point read of an in-memory SQLite table through rusqlite
//!   (a cached prepared statement), the cheapest real database call there is, plain, with
//!   `#[d1_retry]`, and through the two peers; a D1 call from a Worker, a network round trip,
//!   costs a thousand times more;
//! - `happy_path_dynamic_sql`: a 100-byte read passed as an argument, which the expansion
//!   scans where it is prepared, in every attempt, beside the plain call: `d1_retry` retries
//!   the call on its own, and so does `d1_retry_read_only` (`#[d1_retry(read_only)]` on a
//!   body that is one D1 call), `d1_retry_read_only_whole` the whole body (the same body
//!   with a second `.await`, of a future ready at once: one turn of the whole-body loop),
//!   and `backon` the whole body too, with no scan. No
//!   runtime entered: no variant has a timer (backon's sleeper is never reached).
//!
//! The peers retry only what d1-retry would: their condition (`when` for backon, `RetryIf`'s
//! for tokio-retry2) is d1-retry's `classify` and `should_retry`, so each variant would make
//! the same decisions; on the happy path none of them classifies anything. Their schedules
//! (200 ms doubling, 2 s cap, jitter, 5 attempts) and what differs are documented in the
//! shared file.
//!
//! Run: `cargo bench --bench happy_path -- --warm-up-time 1 --measurement-time 3`

#[path = "../test-support/shared/happy_path.rs"]
mod happy_path;

use std::hint::black_box;

use backon::Retryable;
use criterion::{Criterion, criterion_group, criterion_main};
use d1_retry::d1_retry;
use rusqlite::{Connection, OptionalExtension};
use test_support::block_on;
use tokio_retry2::{RetryError, RetryIf};

use happy_path::{
    BACKON_SCHEDULE, DYNAMIC_SQL, DbError, Instant, Row, UserRepo, future_size_report,
    notify_nothing, retried_like_d1_retry_read, tokio_retry2_schedule,
};

impl From<rusqlite::Error> for DbError {
    fn from(error: rusqlite::Error) -> Self {
        DbError(error.to_string())
    }
}

/// A D1-shaped binding over a real SQLite database in memory.
struct Sqlite {
    connection: Connection,
}

#[derive(Clone)]
struct SqliteStatement<'c, 'q> {
    connection: &'c Connection,
    sql: &'q str,
    id: i64,
}

impl Sqlite {
    fn open() -> Self {
        let connection = Connection::open_in_memory().expect("in-memory SQLite");
        connection
            .execute_batch(
                "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                 INSERT INTO users (id, name) VALUES (7, 'Ada Lovelace'), (8, 'Alan Turing');",
            )
            .expect("the fixture is valid SQL");
        Sqlite { connection }
    }

    fn prepare<'q>(&self, sql: &'q str) -> SqliteStatement<'_, 'q> {
        SqliteStatement {
            connection: &self.connection,
            sql,
            id: 0,
        }
    }
}

impl SqliteStatement<'_, '_> {
    fn bind(mut self, id: i64) -> Self {
        self.id = id;
        self
    }

    async fn first(&self) -> Result<Row, DbError> {
        let mut statement = self.connection.prepare_cached(self.sql)?;
        let row = statement
            .query_row([self.id], |row| {
                Ok((row.get::<_, i64>(0)?, row.get_ref(1)?.as_str()?.len()))
            })
            .optional()?;
        Ok(row)
    }
}

// Marked like `worker`'s statements, so the annotated methods take the retrying path, and
// like its database, so that the SQL handed to its `prepare` is judged (a read).
impl d1_retry::D1Receiver for SqliteStatement<'_, '_> {}
impl d1_retry::D1Receiver for Sqlite {}
impl d1_retry::D1Prepare for Sqlite {}

impl UserRepo<Sqlite> {
    async fn find_plain(&self, id: i64) -> Result<Row, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .first()
            .await
    }

    #[d1_retry]
    async fn find(&self, id: i64) -> Result<Row, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .first()
            .await
    }

    /// backon, as in the shared `UserRepo<Instant>::find_backon`.
    async fn find_backon(&self, id: i64) -> Result<Row, DbError> {
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

    /// tokio-retry2, as in the shared `UserRepo<Instant>::find_tokio_retry2`.
    async fn find_tokio_retry2(&self, id: i64) -> Result<Row, DbError> {
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
}

/// A tokio runtime with its time driver, entered for as long as the guard lives: the timed
/// variant's timer is tokio's and would panic without it. Every variant of a group runs with
/// it entered, so that all run alike, though the futures are polled by the no-op-waker loop.
fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds")
}

fn instant(c: &mut Criterion) {
    let runtime = tokio_runtime();
    let _entered = runtime.enter();
    let repo = UserRepo { db: Instant };
    eprint!("{}", future_size_report(&repo, "bench, release profile"));
    let expected = block_on(repo.find_plain(7)).ok();
    assert!(expected.is_some());
    assert_eq!(block_on(repo.find(7)).ok(), expected);
    assert_eq!(block_on(repo.find_named(7)).ok(), expected);
    assert_eq!(block_on(repo.find_backon(7)).ok(), expected);
    assert_eq!(block_on(repo.find_tokio_retry2(7)).ok(), expected);
    assert_eq!(block_on(repo.find_with_builder(7)).ok(), expected);
    assert_eq!(block_on(repo.find_timed(7)).ok(), expected);
    assert_eq!(block_on(repo.find_with_policy(7)).ok(), expected);

    let mut group = c.benchmark_group("happy_path");
    group.bench_function("plain", |b| {
        b.iter(|| block_on(repo.find_plain(black_box(7))));
    });
    group.bench_function("d1_retry", |b| {
        b.iter(|| block_on(repo.find(black_box(7))));
    });
    group.bench_function("d1_retry_named", |b| {
        b.iter(|| block_on(repo.find_named(black_box(7))));
    });
    group.bench_function("backon", |b| {
        b.iter(|| block_on(repo.find_backon(black_box(7))));
    });
    group.bench_function("tokio_retry2", |b| {
        b.iter(|| block_on(repo.find_tokio_retry2(black_box(7))));
    });
    group.bench_function("retry_builder", |b| {
        b.iter(|| block_on(repo.find_with_builder(black_box(7))));
    });
    group.bench_function("d1_retry_timed", |b| {
        b.iter(|| block_on(repo.find_timed(black_box(7))));
    });
    group.bench_function("d1_retry_policy", |b| {
        b.iter(|| block_on(repo.find_with_policy(black_box(7))));
    });
    group.finish();
}

fn sqlite(c: &mut Criterion) {
    // Entered as in `happy_path`, so the peers run as they do there.
    let runtime = tokio_runtime();
    let _entered = runtime.enter();
    let repo = UserRepo { db: Sqlite::open() };
    let expected = Some(Some((7, "Ada Lovelace".len())));
    assert_eq!(block_on(repo.find_plain(7)).ok(), expected);
    assert_eq!(block_on(repo.find(7)).ok(), expected);
    assert_eq!(block_on(repo.find_backon(7)).ok(), expected);
    assert_eq!(block_on(repo.find_tokio_retry2(7)).ok(), expected);
    eprintln!(
        "future sizes (bench, release): SQLite read: plain {} B, #[d1_retry] {} B, backon {} B, \
         tokio-retry2 {} B",
        size_of_val(&repo.find_plain(7)),
        size_of_val(&repo.find(7)),
        size_of_val(&repo.find_backon(7)),
        size_of_val(&repo.find_tokio_retry2(7)),
    );

    let mut group = c.benchmark_group("happy_path_sqlite");
    group.bench_function("plain", |b| {
        b.iter(|| block_on(repo.find_plain(black_box(7))));
    });
    group.bench_function("d1_retry", |b| {
        b.iter(|| block_on(repo.find(black_box(7))));
    });
    group.bench_function("backon", |b| {
        b.iter(|| block_on(repo.find_backon(black_box(7))));
    });
    group.bench_function("tokio_retry2", |b| {
        b.iter(|| block_on(repo.find_tokio_retry2(black_box(7))));
    });
    group.finish();
}

fn dynamic_sql(c: &mut Criterion) {
    let repo = UserRepo { db: Instant };
    // The sizes are in the report printed before `happy_path`.
    eprintln!("dynamic SQL: {} bytes: {DYNAMIC_SQL}", DYNAMIC_SQL.len());
    let expected = block_on(repo.query_plain(DYNAMIC_SQL, 7)).ok();
    assert_eq!(expected, Some(Some((7, DYNAMIC_SQL.len()))));
    assert_eq!(block_on(repo.query(DYNAMIC_SQL, 7)).ok(), expected);
    assert_eq!(
        block_on(repo.query_read_only(DYNAMIC_SQL, 7)).ok(),
        expected
    );
    assert_eq!(
        block_on(repo.query_read_only_whole(DYNAMIC_SQL, 7)).ok(),
        expected
    );
    assert_eq!(block_on(repo.query_backon(DYNAMIC_SQL, 7)).ok(), expected);

    let mut group = c.benchmark_group("happy_path_dynamic_sql");
    group.bench_function("plain", |b| {
        b.iter(|| block_on(repo.query_plain(black_box(DYNAMIC_SQL), black_box(7))));
    });
    group.bench_function("d1_retry", |b| {
        b.iter(|| block_on(repo.query(black_box(DYNAMIC_SQL), black_box(7))));
    });
    group.bench_function("d1_retry_read_only", |b| {
        b.iter(|| block_on(repo.query_read_only(black_box(DYNAMIC_SQL), black_box(7))));
    });
    group.bench_function("d1_retry_read_only_whole", |b| {
        b.iter(|| block_on(repo.query_read_only_whole(black_box(DYNAMIC_SQL), black_box(7))));
    });
    group.bench_function("backon", |b| {
        b.iter(|| block_on(repo.query_backon(black_box(DYNAMIC_SQL), black_box(7))));
    });
    group.finish();
}

criterion_group!(benches, instant, sqlite, dynamic_sql);
criterion_main!(benches);
