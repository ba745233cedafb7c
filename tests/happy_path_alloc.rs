//! A `#[d1_retry]` method whose first attempt succeeds allocates nothing more than the same
//! method without the attribute; a counting global allocator watches both. The sizes of the
//! two futures are printed for BENCHMARKS.md (`cargo test --test happy_path_alloc -- --nocapture`).

use std::future::Future;
use std::hint::black_box;

use d1_retry::d1_retry;

use test_support::{CountingAllocator, allocations_of};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[derive(Debug)]
struct DbError;

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("D1_ERROR: no such table: users: SQLITE_ERROR")
    }
}

impl std::error::Error for DbError {}

impl From<d1_retry::TimedOut> for DbError {
    fn from(_: d1_retry::TimedOut) -> Self {
        DbError
    }
}

/// A stand-in for `worker::D1Database` whose statements succeed on their first poll.
struct Db;

#[derive(Clone)]
struct Statement<'q> {
    sql: &'q str,
    id: i64,
}

// Marked, so the annotated methods below take the retrying path.
impl d1_retry::D1Receiver for Statement<'_> {}

impl Db {
    fn prepare<'q>(&self, sql: &'q str) -> Statement<'q> {
        Statement { sql, id: 0 }
    }
}

impl Statement<'_> {
    fn bind(mut self, id: i64) -> Self {
        self.id = id;
        self
    }

    async fn run(&self) -> Result<usize, DbError> {
        Ok(black_box(self.sql).len() + usize::from(black_box(self.id) > 0))
    }
}

struct Repo {
    db: Db,
}

impl Repo {
    async fn find_plain(&self, id: i64) -> Result<usize, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .run()
            .await
    }

    #[d1_retry]
    async fn find(&self, id: i64) -> Result<usize, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .run()
            .await
    }

    /// With the recommended time limits (its future's size is reported below).
    #[d1_retry(attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn find_timed(&self, id: i64) -> Result<usize, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(id)
            .run()
            .await
    }

    async fn rename_plain(&self, id: i64) -> Result<usize, DbError> {
        self.db
            .prepare("UPDATE users SET name = 'x' WHERE id = ?1")
            .bind(id)
            .run()
            .await
    }

    #[d1_retry]
    async fn rename(&self, id: i64) -> Result<usize, DbError> {
        self.db
            .prepare("UPDATE users SET name = 'x' WHERE id = ?1")
            .bind(id)
            .run()
            .await
    }

    async fn query_plain(&self, sql: &str, id: i64) -> Result<usize, DbError> {
        self.db.prepare(sql).bind(id).run().await
    }

    #[d1_retry(read_only)]
    async fn query(&self, sql: &str, id: i64) -> Result<usize, DbError> {
        self.db.prepare(sql).bind(id).run().await
    }
}

const DYNAMIC_SQL: &str = "/* list */ SELECT u.id FROM users u JOIN orders o ON o.user_id = u.id \
                           WHERE u.id = ?1 AND o.note <> 'please delete'";

/// Runs the plain and the annotated future, checks they return the same value, and returns
/// the allocations of each.
fn compare<P, A>(plain: P, annotated: A) -> (u64, u64)
where
    P: Future<Output = Result<usize, DbError>>,
    A: Future<Output = Result<usize, DbError>>,
{
    let (plain_allocations, plain_output) = allocations_of(plain);
    let (annotated_allocations, annotated_output) = allocations_of(annotated);
    assert_eq!(
        plain_output.expect("the plain call succeeds"),
        annotated_output.expect("the annotated call succeeds"),
    );
    (plain_allocations, annotated_allocations)
}

#[test]
fn a_read_allocates_nothing_more_than_without_the_attribute() {
    let repo = Repo { db: Db };
    let (plain, annotated) = compare(repo.find_plain(7), repo.find(7));
    assert!(
        annotated <= plain,
        "#[d1_retry] read: {annotated} allocations, plain: {plain}"
    );
}

#[test]
fn a_write_allocates_nothing_more_than_without_the_attribute() {
    let repo = Repo { db: Db };
    let (plain, annotated) = compare(repo.rename_plain(7), repo.rename(7));
    assert!(
        annotated <= plain,
        "#[d1_retry] write: {annotated} allocations, plain: {plain}"
    );
}

#[test]
fn dynamic_sql_allocates_nothing_more_than_without_the_attribute() {
    // The expansion scans dynamic SQL in every attempt: the scanner must not allocate.
    let repo = Repo { db: Db };
    let (plain, annotated) = compare(repo.query_plain(DYNAMIC_SQL, 7), repo.query(DYNAMIC_SQL, 7));
    assert!(
        annotated <= plain,
        "#[d1_retry(read_only)] dynamic SQL: {annotated} allocations, plain: {plain}"
    );
}

#[test]
fn future_sizes_are_reported() {
    let repo = Repo { db: Db };
    let sizes = [
        ("plain read", size_of_val(&repo.find_plain(7))),
        ("#[d1_retry] read", size_of_val(&repo.find(7))),
        (
            "#[d1_retry(attempt_timeout_ms, deadline_ms)] read",
            size_of_val(&repo.find_timed(7)),
        ),
        ("plain write", size_of_val(&repo.rename_plain(7))),
        ("#[d1_retry] write", size_of_val(&repo.rename(7))),
        (
            "plain dynamic",
            size_of_val(&repo.query_plain(DYNAMIC_SQL, 7)),
        ),
        (
            "#[d1_retry(read_only)] dynamic",
            size_of_val(&repo.query(DYNAMIC_SQL, 7)),
        ),
    ];
    for (name, size) in sizes {
        println!("future size: {name}: {size} bytes");
        assert!(size > 0, "{name}: a future holding `&self` has a size");
    }
}

#[test]
fn the_counter_sees_allocations() {
    // Guards the tests above: an allocator that did not count would let them pass vacuously.
    let (counted, boxed) = allocations_of(async { Box::new(black_box(7)) });
    assert_eq!(*boxed, 7);
    assert!(counted > 0, "a Box::new was not counted");
}
