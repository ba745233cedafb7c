//! What `#[d1_retry]` costs when nothing fails: the same repository method with and without
//! the attribute, over a database call that succeeds at once.
//!
//! The futures are polled by a no-op-waker loop rather than a runtime, so that the figures
//! are the retry layer's own cost and not an executor's. Three comparisons, each in one
//! group so that the machine's noise falls on both sides alike:
//!
//! - `happy_path`: a call that does nothing (returns its arguments), the worst case for the
//!   ratio: it shows the retry layer's fixed cost in nanoseconds; with time limits too
//!   (`d1_retry_timed`: the call raced against tokio's timer, the deadline's stopwatch
//!   started);
//! - `happy_path_sqlite`: a real point read of an in-memory SQLite table through rusqlite
//!   (a cached prepared statement), the cheapest real database call there is; a D1 call from
//!   a Worker, a network round trip, costs a thousand times more;
//! - `happy_path_dynamic_sql`: SQL passed as an argument, which the expansion scans where
//!   it is prepared.
//!
//! Run: `cargo bench --bench happy_path -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use d1_retry::{Retry, d1_retry};
use rusqlite::{Connection, OptionalExtension};
use test_support::block_on;

#[derive(Debug)]
struct DbError(String);

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

impl From<rusqlite::Error> for DbError {
    fn from(error: rusqlite::Error) -> Self {
        DbError(error.to_string())
    }
}

type Row = Option<(i64, usize)>;

/// A stand-in for `worker::D1Database` whose statements complete on their first poll
/// without doing anything.
struct Instant;

#[derive(Clone)]
struct InstantStatement<'q> {
    sql: &'q str,
    id: i64,
}

impl Instant {
    fn prepare<'q>(&self, sql: &'q str) -> InstantStatement<'q> {
        InstantStatement { sql, id: 0 }
    }
}

impl InstantStatement<'_> {
    fn bind(mut self, id: i64) -> Self {
        self.id = id;
        self
    }

    async fn first(&self) -> Result<Row, DbError> {
        // black_box keeps the "query" from being folded away at compile time, so both
        // variants do the same observable work.
        Ok(Some((black_box(self.id), black_box(self.sql).len())))
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

// Marked like `worker`'s statements, so the annotated methods take the retrying path.
impl d1_retry::D1Receiver for InstantStatement<'_> {}
impl d1_retry::D1Receiver for SqliteStatement<'_, '_> {}

struct UserRepo<Db> {
    db: Db,
}

impl UserRepo<Instant> {
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

    /// With the recommended time limits: the call races a 2 s timer, within a 10 s deadline.
    #[d1_retry(attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn find_timed(&self, id: i64) -> Result<Row, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .first()
            .await
    }

    /// With the operation named, the default `Type::method` name is not built.
    #[d1_retry(name = "UserRepo::find")]
    async fn find_named(&self, id: i64) -> Result<Row, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .first()
            .await
    }

    async fn find_with_builder(&self, id: i64) -> Result<Row, DbError> {
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

    async fn query_plain(&self, sql: &str, id: i64) -> Result<Row, DbError> {
        self.db.prepare(sql).bind(id).first().await
    }

    /// Dynamic SQL: the expansion scans `sql` where it is prepared.
    #[d1_retry]
    async fn query(&self, sql: &str, id: i64) -> Result<Row, DbError> {
        self.db.prepare(sql).bind(id).first().await
    }
}

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
}

const DYNAMIC_SQL: &str = "SELECT u.id, u.name FROM users u JOIN orders o ON o.user_id = u.id \
                           WHERE u.id = ?1 ORDER BY o.created_at DESC LIMIT 1";

fn instant(c: &mut Criterion) {
    // The time limits' timer is tokio's: its time driver must be there (for every variant,
    // so that all run alike), though the futures are still polled by the no-op-waker loop.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime builds");
    let _timer = runtime.enter();
    let repo = UserRepo { db: Instant };
    eprintln!(
        "future sizes: plain {} B, #[d1_retry] {} B, #[d1_retry(name)] {} B, Retry builder {} B, \
         #[d1_retry(attempt_timeout_ms, deadline_ms)] {} B",
        size_of_val(&repo.find_plain(7)),
        size_of_val(&repo.find(7)),
        size_of_val(&repo.find_named(7)),
        size_of_val(&repo.find_with_builder(7)),
        size_of_val(&repo.find_timed(7)),
    );
    let expected = block_on(repo.find_plain(7)).ok();
    assert_eq!(block_on(repo.find(7)).ok(), expected);
    assert_eq!(block_on(repo.find_timed(7)).ok(), expected);
    assert_eq!(block_on(repo.find_named(7)).ok(), expected);
    assert_eq!(block_on(repo.find_with_builder(7)).ok(), expected);

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
    group.bench_function("retry_builder", |b| {
        b.iter(|| block_on(repo.find_with_builder(black_box(7))));
    });
    group.bench_function("d1_retry_timed", |b| {
        b.iter(|| block_on(repo.find_timed(black_box(7))));
    });
    group.finish();
}

fn sqlite(c: &mut Criterion) {
    let repo = UserRepo { db: Sqlite::open() };
    let expected = Some((7, "Ada Lovelace".len()));
    assert_eq!(block_on(repo.find_plain(7)).ok(), Some(expected));
    assert_eq!(block_on(repo.find(7)).ok(), Some(expected));

    let mut group = c.benchmark_group("happy_path_sqlite");
    group.bench_function("plain", |b| {
        b.iter(|| block_on(repo.find_plain(black_box(7))));
    });
    group.bench_function("d1_retry", |b| {
        b.iter(|| block_on(repo.find(black_box(7))));
    });
    group.finish();
}

fn dynamic_sql(c: &mut Criterion) {
    let repo = UserRepo { db: Instant };
    eprintln!(
        "future sizes: plain dynamic {} B, #[d1_retry] dynamic {} B",
        size_of_val(&repo.query_plain(DYNAMIC_SQL, 7)),
        size_of_val(&repo.query(DYNAMIC_SQL, 7)),
    );
    assert_eq!(
        block_on(repo.query(DYNAMIC_SQL, 7)).ok(),
        block_on(repo.query_plain(DYNAMIC_SQL, 7)).ok()
    );

    let mut group = c.benchmark_group("happy_path_dynamic_sql");
    group.bench_function("plain", |b| {
        b.iter(|| block_on(repo.query_plain(black_box(DYNAMIC_SQL), black_box(7))));
    });
    group.bench_function("d1_retry", |b| {
        b.iter(|| block_on(repo.query(black_box(DYNAMIC_SQL), black_box(7))));
    });
    group.finish();
}

criterion_group!(benches, instant, sqlite, dynamic_sql);
criterion_main!(benches);
