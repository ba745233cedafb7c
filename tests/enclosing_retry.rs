//! A `Retry` around D1 calls that d1-retry makes (a `#[d1_retry]` method's executions, a
//! `Retry` inside): those calls leave their failures to the attempt until one of them may
//! have written. From then on the `Retry` does not run the attempt again, which would write
//! twice, and the calls after it retry on their own, as they do outside any `Retry`.
//!
//! Each test fails one statement once, before or after it ran, and counts the rows that
//! landed and the calls D1 was sent. A raw D1 call in the attempt is out of d1-retry's
//! sight: `Retry`'s docs say to give such a write a `Retry` of its own.

use d1_retry::testing::{D1Database, Error, Fault, Message};
use d1_retry::{Retry, RetryPolicy, d1_retry};
use test_support::{calls_with, count, lose_once_after_running};

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();
const TIMED: RetryPolicy = NO_BUDGET.with_deadline(core::time::Duration::from_secs(10));

const READ: &str = "SELECT count(*) AS n FROM orders";

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Count {
    n: i64,
}

struct Repo {
    db: D1Database,
}

impl Repo {
    /// Two inserts, each retried on its own when the method is called alone.
    #[d1_retry(policy = NO_BUDGET)]
    async fn place_two(&self) -> Result<(), Error> {
        self.db
            .prepare("INSERT INTO orders (item) VALUES ('a')")
            .run()
            .await?;
        self.db
            .prepare("INSERT INTO orders (item) VALUES ('b')")
            .run()
            .await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn place(&self, item: &str) -> Result<(), Error> {
        self.db
            .prepare("INSERT INTO orders (item) VALUES (?1)")
            .bind(&[item.into()])?
            .run()
            .await?;
        Ok(())
    }

    /// An insert whose future is stored before it is awaited.
    #[d1_retry(policy = NO_BUDGET)]
    async fn place_stored(&self) -> Result<(), Error> {
        let statement = self
            .db
            .prepare("INSERT INTO orders (item) VALUES ('stored')");
        let insert = statement.run();
        insert.await?;
        Ok(())
    }

    /// Inserts 'a' unless it is there (the table has a unique index on `item`).
    #[d1_retry(policy = NO_BUDGET)]
    async fn place_unless_there(&self) -> Result<(), Error> {
        self.db
            .prepare("INSERT OR IGNORE INTO orders (item) VALUES ('a')")
            .run()
            .await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn order_count(&self) -> Result<i64, Error> {
        let count: Option<Count> = self
            .db
            .prepare("SELECT count(*) AS n FROM orders")
            .first(None)
            .await?;
        Ok(count.map_or(0, |count| count.n))
    }
}

fn database() -> D1Database {
    let db = D1Database::open_in_memory().unwrap();
    db.with_connection(|c| {
        c.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL);")
    })
    .unwrap();
    db
}

/// A database whose first call with `fragment` in its SQL fails before D1 ran it, once.
fn not_executed_once(fragment: &str) -> D1Database {
    let db = database();
    db.add_fault(
        Fault::new(Message::CannotResolve)
            .before_execution()
            .when_sql_contains(fragment)
            .times(1),
    );
    db
}

fn landed(db: &D1Database, item: &str) -> i64 {
    count(
        db,
        &format!("SELECT count(*) FROM orders WHERE item = '{item}'"),
    )
}

#[tokio::test(start_paused = true)]
async fn a_completed_write_of_an_annotated_method_is_not_run_again() {
    for timed in [false, true] {
        let db = not_executed_once("'b'");
        let repo = Repo { db: db.clone() };
        let retry = Retry::new("orders.place");
        let result = if timed {
            retry.policy(TIMED).run_timed(|| repo.place_two()).await
        } else {
            retry.policy(NO_BUDGET).run(|| repo.place_two()).await
        };
        // The second insert failed before it ran: it is made again on its own, as running
        // the attempt again would insert 'a' twice.
        assert!(result.is_ok(), "timed: {timed}");
        assert_eq!(
            (landed(&db, "a"), landed(&db, "b")),
            (1, 1),
            "timed: {timed}"
        );
        assert_eq!(calls_with(&db, "'a'"), 1, "timed: {timed}");
        assert_eq!(calls_with(&db, "'b'"), 2, "timed: {timed}");
    }
}

/// How the attempt makes its write, before the read that fails.
#[derive(Clone, Copy, Debug)]
enum Write {
    /// An annotated method.
    Annotated,
    /// An annotated method whose maybe-executed failure the attempt ignores.
    Ignored,
    /// An annotated method whose insert is stored before it is awaited.
    Stored,
    /// A raw insert with a `Retry` of its own, as `Retry`'s docs advise.
    OwnRetry,
}

impl Write {
    /// The SQL of the insert, as the journal shows it.
    fn sql(self) -> &'static str {
        match self {
            Write::Annotated | Write::Ignored => "VALUES (?1)",
            Write::Stored => "'stored'",
            Write::OwnRetry => "VALUES ('a')",
        }
    }

    async fn make(self, repo: &Repo) -> Result<(), Error> {
        match self {
            Write::Annotated => repo.place("a").await,
            Write::Ignored => {
                // The attempt goes on whatever became of the insert: it may have landed.
                let _ = repo.place("a").await;
                Ok(())
            }
            Write::Stored => repo.place_stored().await,
            Write::OwnRetry => Retry::new("inner")
                .policy(NO_BUDGET)
                .run(|| async {
                    repo.db
                        .prepare("INSERT INTO orders (item) VALUES ('a')")
                        .run()
                        .await
                })
                .await
                .map(drop),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_read_failing_after_a_completed_write_does_not_run_the_write_again() {
    for write in [
        Write::Annotated,
        Write::Ignored,
        Write::Stored,
        Write::OwnRetry,
    ] {
        let db = not_executed_once(READ);
        if let Write::Ignored = write {
            lose_once_after_running(&db, write.sql());
        }
        let repo = Repo { db: db.clone() };
        let result = Retry::new("orders.place_and_count")
            .policy(NO_BUDGET)
            .run(|| async {
                write.make(&repo).await?;
                repo.order_count().await
            })
            .await;
        // The read is made again on its own; the attempt, with the write, is not.
        assert_eq!(result.unwrap(), 1, "{write:?}");
        assert_eq!(calls_with(&db, write.sql()), 1, "{write:?}");
        assert_eq!(calls_with(&db, READ), 2, "{write:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn reads_inside_the_attempt_are_still_made_again() {
    let db = not_executed_once(READ);
    db.with_connection(|c| c.execute("INSERT INTO orders (item) VALUES ('a')", []))
        .unwrap();
    let repo = Repo { db: db.clone() };
    let count = Retry::new("orders.count")
        .policy(NO_BUDGET)
        .run(|| async {
            let first = repo.order_count().await?;
            let second = repo.order_count().await?;
            Ok::<_, Error>(first + second)
        })
        .await;
    // The first read completed, the second failed before it ran: the attempt runs again.
    assert_eq!(count.unwrap(), 2);
    assert_eq!(calls_with(&db, READ), 3);
}

#[tokio::test(start_paused = true)]
async fn a_write_that_failed_before_it_ran_is_run_again() {
    let db = not_executed_once("VALUES (?1)");
    let repo = Repo { db: db.clone() };
    let result = Retry::new("orders.place")
        .policy(NO_BUDGET)
        .run(|| async {
            let before = repo.order_count().await?;
            repo.place("a").await?;
            Ok::<_, Error>(before)
        })
        .await;
    // Nothing that may write completed before the failure: the attempt is made again.
    assert_eq!(result.unwrap(), 0);
    assert_eq!(landed(&db, "a"), 1);
    assert_eq!(calls_with(&db, "VALUES (?1)"), 2);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_declared_idempotent_is_run_again_after_its_write() {
    let db = not_executed_once(READ);
    db.with_connection(|c| c.execute_batch("CREATE UNIQUE INDEX one_item ON orders (item);"))
        .unwrap();
    let repo = Repo { db: db.clone() };
    let result = Retry::new("orders.upsert")
        .policy(NO_BUDGET)
        .idempotent(true)
        .run(|| async {
            repo.place_unless_there().await?;
            repo.order_count().await
        })
        .await;
    // The caller vouched that running the attempt twice is running it once.
    assert_eq!(result.unwrap(), 1);
    assert_eq!(calls_with(&db, "OR IGNORE"), 2);
}

#[tokio::test(start_paused = true)]
async fn a_raw_call_failing_after_an_annotated_write_does_not_run_the_write_again() {
    let db = not_executed_once(READ);
    let repo = Repo { db: db.clone() };
    let result = Retry::new("orders.place_and_count")
        .policy(NO_BUDGET)
        .run(|| async {
            repo.place("a").await?;
            // Out of d1-retry's sight: its failure is the attempt's.
            repo.db.prepare(READ).first::<Count>(None).await
        })
        .await;
    // It failed before it ran, but running the attempt again would insert 'a' twice.
    assert!(result.is_err());
    assert_eq!(landed(&db, "a"), 1);
    assert_eq!(calls_with(&db, READ), 1);
}

#[tokio::test(start_paused = true)]
async fn attempts_never_multiply() {
    // Before any write the attempt decides: 5 attempts of the read in all, not 5 × 5.
    let db = database();
    db.add_fault(Fault::new(Message::CannotResolve).when_sql_contains(READ));
    let repo = Repo { db: db.clone() };
    let result = Retry::new("orders.count")
        .policy(NO_BUDGET)
        .run(|| repo.order_count())
        .await;
    assert!(result.is_err());
    assert_eq!(calls_with(&db, READ), 5);

    // After a write the read decides, and the attempt is not made again.
    let db = database();
    db.add_fault(Fault::new(Message::CannotResolve).when_sql_contains(READ));
    let repo = Repo { db: db.clone() };
    let result = Retry::new("orders.place_and_count")
        .policy(NO_BUDGET)
        .run(|| async {
            repo.place("a").await?;
            repo.order_count().await
        })
        .await;
    assert!(result.is_err());
    assert_eq!(calls_with(&db, READ), 5);
    assert_eq!(landed(&db, "a"), 1);
}

/// The insert and a read, joined: when the read fails first, `try_join!` drops the insert
/// while it is in flight.
async fn place_and_count(repo: &Repo) -> Result<(), Error> {
    let (placed, _) = tokio::try_join!(repo.place("joined"), repo.count_orders())?;
    Ok(placed)
}

impl Repo {
    #[d1_retry(policy = NO_BUDGET)]
    async fn count_orders(&self) -> Result<i64, Error> {
        let row = self.db.prepare(READ).first::<Count>(None).await?;
        Ok(row.map_or(0, |row| row.n))
    }

    /// Declared `read_only`, but joins an insert with the read.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn joined_read_only(&self) -> Result<(), Error> {
        place_and_count(self).await
    }
}

/// A write dropped in flight may have run: a `Retry` whose attempt may write, or a
/// `read_only` body, that left one behind is not run again, though the failure that ended
/// the attempt reached no D1 (the read's). The insert lands, then its answer is late; the
/// read fails before D1 is reached.
#[tokio::test(start_paused = true)]
async fn a_write_dropped_in_flight_is_not_made_again() {
    for read_only in [true, false] {
        let db = database();
        db.add_fault(
            Fault::stall(core::time::Duration::from_secs(1))
                .after_execution()
                .when_sql_contains("INSERT")
                .times(1),
        );
        db.add_fault(
            Fault::new(Message::CannotResolve)
                .when_sql_contains(READ)
                .times(1),
        );
        let repo = Repo { db: db.clone() };
        let result = if read_only {
            repo.joined_read_only().await
        } else {
            Retry::new("orders.joined")
                .policy(NO_BUDGET)
                .run(|| place_and_count(&repo))
                .await
        };
        assert!(result.is_err(), "read_only: {read_only}");
        assert_eq!(
            count(&db, "SELECT count(*) FROM orders"),
            1,
            "read_only: {read_only}"
        );
        assert_eq!(calls_with(&db, "INSERT"), 1, "read_only: {read_only}");
    }
}

/// An error of the user's that keeps nothing of D1's failure.
#[derive(Debug, PartialEq)]
struct Lossy;

impl core::fmt::Display for Lossy {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("database error")
    }
}

impl std::error::Error for Lossy {}

impl From<d1_retry::TimedOut> for Lossy {
    fn from(_: d1_retry::TimedOut) -> Self {
        Lossy
    }
}

impl Repo {
    #[d1_retry(policy = NO_BUDGET)]
    async fn order_count_lossy(&self) -> Result<i64, Lossy> {
        let count: Option<Count> = self
            .db
            .prepare("SELECT count(*) AS n FROM orders")
            .first(None)
            .await
            .map_err(|_| Lossy)?;
        Ok(count.map_or(0, |count| count.n))
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn count_missing_lossy(&self) -> Result<i64, Lossy> {
        let count: Option<Count> = self
            .db
            .prepare("SELECT count(*) AS n FROM missing_table")
            .first(None)
            .await
            .map_err(|_| Lossy)?;
        Ok(count.map_or(0, |count| count.n))
    }
}

/// A `Retry` around a method whose error drops D1's failure: the read failed before D1 ran
/// it, so the attempt runs again, by the class the read left to it; a permanent failure
/// left beside it (`join!`) decides, and the attempt is not run again. A classifier of the
/// caller's own is not overruled.
#[tokio::test(start_paused = true)]
async fn a_retry_reads_the_failures_its_attempt_was_left_when_the_error_drops_them() {
    for timed in [false, true] {
        let db = not_executed_once(READ);
        let repo = Repo { db: db.clone() };
        let retry = Retry::new("orders.count").read_only(true);
        let result = if timed {
            retry
                .policy(TIMED)
                .run_timed(|| repo.order_count_lossy())
                .await
        } else {
            retry
                .policy(NO_BUDGET)
                .run(|| repo.order_count_lossy())
                .await
        };
        assert_eq!(result, Ok(0), "timed: {timed}");
        assert_eq!(calls_with(&db, READ), 2, "timed: {timed}");
    }

    let db = not_executed_once(READ);
    let repo = Repo { db: db.clone() };
    let result = Retry::new("orders.count")
        .read_only(true)
        .policy(NO_BUDGET)
        .run(|| async {
            let (missing, count) =
                tokio::join!(repo.count_missing_lossy(), repo.order_count_lossy());
            Ok::<_, Lossy>(missing? + count?)
        })
        .await;
    assert_eq!(result, Err(Lossy));
    assert_eq!(calls_with(&db, "missing_table"), 1, "not run again");

    let db = not_executed_once(READ);
    let repo = Repo { db: db.clone() };
    let result = Retry::new("orders.count")
        .read_only(true)
        .policy(NO_BUDGET)
        .run_by(
            |_: &Lossy| d1_retry::FailureClass::Permanent,
            || repo.order_count_lossy(),
        )
        .await;
    assert_eq!(result, Err(Lossy));
    assert_eq!(calls_with(&db, READ), 1, "the caller's verdict stands");
}

/// A `Retry` whose attempt may write (not declared read-only): a failure a method of its
/// attempt swallowed is not what its own error stands for, and a direct write after it,
/// out of d1-retry's sight, may have completed. Its error that tells no class stays
/// permanent, and the write is made once.
#[tokio::test(start_paused = true)]
async fn a_retry_that_may_write_does_not_take_a_swallowed_failure_for_its_error() {
    let db = not_executed_once(READ);
    let repo = Repo { db: db.clone() };
    let result = Retry::new("orders.place")
        .policy(NO_BUDGET)
        .run(|| async {
            let _cached = repo.order_count_lossy().await.ok();
            repo.db
                .prepare("INSERT INTO orders (item) VALUES ('direct')")
                .run()
                .await
                .map_err(|_| Lossy)?;
            Err::<(), _>(Lossy)
        })
        .await;
    assert_eq!(result, Err(Lossy));
    assert_eq!(landed(&db, "direct"), 1, "the direct write was made once");
}
