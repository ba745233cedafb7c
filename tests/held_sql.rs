//! A statement whose SQL `#[d1_retry]` cannot see where it runs (kept in a field, passed
//! in, made by a helper, reached through a wrapper) is judged by the SQL it holds, read
//! when its execution begins: a read is made again after a failure that may have run it,
//! and a write is never made again after one.
//!
//! Each test fails one statement once after it ran (maybe executed). Reads count the calls
//! D1 saw; writes count the rows that landed. A statement of a type that cannot tell its
//! SQL (a wrapper of the project's own, a generic receiver) stays a write.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use d1_retry::testing::{D1Database, D1PreparedStatement, Error};
use d1_retry::{D1Receiver, RetryPolicy, d1_retry};
use test_support::{calls_with, count, join_all, lose_once_after_running};

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();
const TIMED: RetryPolicy = NO_BUDGET.with_attempt_timeout(core::time::Duration::from_secs(2));

const READ: &str = "SELECT count(*) AS n FROM orders";
const INSERT: &str = "INSERT INTO orders (item) VALUES ('held')";

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Count {
    n: i64,
}

/// A wrapper of the project's own, marked as a D1 receiver: it runs the statement it
/// holds, but d1-retry cannot read its SQL through it.
#[derive(Clone)]
struct Wrapped(D1PreparedStatement);

impl D1Receiver for Wrapped {}

impl Wrapped {
    async fn first<T: serde::de::DeserializeOwned>(
        &self,
        column: Option<&str>,
    ) -> Result<Option<T>, Error> {
        self.0.first(column).await
    }

    async fn run(&self) -> Result<d1_retry::testing::D1Result, Error> {
        self.0.run().await
    }
}

/// Statements prepared once, when the repository is made.
struct Repo {
    db: D1Database,
    statement: D1PreparedStatement,
    shared: Arc<D1PreparedStatement>,
    counted: Rc<RefCell<D1PreparedStatement>>,
    listed: Vec<D1PreparedStatement>,
    wrapped: Wrapped,
}

/// A helper that makes the statement elsewhere.
fn made_elsewhere(db: &D1Database, sql: &str) -> D1PreparedStatement {
    db.prepare(sql)
}

impl Repo {
    fn new(db: D1Database, sql: &str) -> Self {
        Repo {
            statement: db.prepare(sql),
            shared: Arc::new(db.prepare(sql)),
            counted: Rc::new(RefCell::new(db.prepare(sql))),
            listed: vec![db.prepare("SELECT 1 AS n"), db.prepare(sql)],
            wrapped: Wrapped(db.prepare(sql)),
            db,
        }
    }

    /// The statement kept in a field, run as it is.
    #[d1_retry(policy = NO_BUDGET)]
    async fn field(&self) -> Result<(), Error> {
        self.statement.run().await?;
        Ok(())
    }

    /// The same, through `Arc`, a `RefCell` guard and a `Vec` element. (The guard is held
    /// across the await on purpose: it is the receiver's shape under test.)
    #[allow(clippy::await_holding_refcell_ref)]
    #[d1_retry(policy = NO_BUDGET)]
    async fn wrappers(&self, which: u8) -> Result<(), Error> {
        match which {
            0 => self.shared.run().await?,
            1 => self.counted.borrow().run().await?,
            _ => self.listed[1].run().await?,
        };
        Ok(())
    }

    /// A statement passed in by the caller.
    #[d1_retry(policy = NO_BUDGET)]
    async fn passed_in(&self, statement: &D1PreparedStatement) -> Result<(), Error> {
        statement.run().await?;
        Ok(())
    }

    /// A statement a helper made, run where it is made, and another awaited itself
    /// (`IntoFuture`).
    #[d1_retry(policy = NO_BUDGET)]
    async fn from_a_helper(&self, sql: &str, awaited: bool) -> Result<(), Error> {
        if awaited {
            let statement = made_elsewhere(&self.db, sql);
            statement.await?;
        } else {
            made_elsewhere(&self.db, sql).run().await?;
        }
        Ok(())
    }

    /// The field's statement awaited itself, as a clone, since awaiting takes it.
    #[d1_retry(policy = NO_BUDGET)]
    async fn field_awaited(&self) -> Result<(), Error> {
        self.statement.clone().await?;
        Ok(())
    }

    /// The field's statement under time limits, the path the example Worker's methods
    /// take.
    #[d1_retry(policy = TIMED)]
    async fn field_timed(&self) -> Result<(), Error> {
        self.statement.run().await?;
        Ok(())
    }

    /// Both statements of the list, joined: futures stored and awaited together.
    #[d1_retry(policy = NO_BUDGET)]
    async fn joined(&self) -> Result<(), Error> {
        for ran in join_all(self.listed.iter().map(|statement| statement.run())).await {
            ran?;
        }
        Ok(())
    }

    /// The project's wrapper: its SQL cannot be read, so it stays a write.
    #[d1_retry(policy = NO_BUDGET)]
    async fn wrapped(&self) -> Result<(), Error> {
        self.wrapped.run().await?;
        Ok(())
    }

    /// A read through the wrapper, for the same reason made once.
    #[d1_retry(policy = NO_BUDGET)]
    async fn wrapped_read(&self) -> Result<Option<Count>, Error> {
        self.wrapped.first(None).await
    }
}

/// A statement of a generic receiver type: its SQL is read through the type it turns out to
/// be, D1's statement here.
#[d1_retry(policy = NO_BUDGET)]
async fn generic<S: D1Receiver + StatementRun>(statement: &S) -> Result<(), Error> {
    statement.run().await?;
    Ok(())
}

/// `run` on a generic statement.
trait StatementRun {
    async fn run(&self) -> Result<d1_retry::testing::D1Result, Error>;
}

impl StatementRun for D1PreparedStatement {
    async fn run(&self) -> Result<d1_retry::testing::D1Result, Error> {
        D1PreparedStatement::run(self).await
    }
}

fn orders() -> D1Database {
    let db = D1Database::open_in_memory().unwrap();
    db.with_connection(|c| c.execute_batch("CREATE TABLE orders (item TEXT NOT NULL);"))
        .unwrap();
    db
}

fn rows(db: &D1Database) -> i64 {
    count(db, "SELECT count(*) FROM orders")
}

/// What each shape did after the statement holding `sql` failed once after it ran: the
/// result, and the calls D1 saw of that statement.
async fn held(shape: &str, sql: &str) -> (bool, usize, D1Database) {
    let db = orders();
    let repo = Repo::new(db.clone(), sql);
    lose_once_after_running(&db, sql);
    let result = match shape {
        "field" => repo.field().await,
        "arc" => repo.wrappers(0).await,
        "refcell" => repo.wrappers(1).await,
        "vec" => repo.wrappers(2).await,
        "passed in" => {
            let statement = db.prepare(sql);
            repo.passed_in(&statement).await
        }
        "helper" => repo.from_a_helper(sql, false).await,
        "helper, awaited" => repo.from_a_helper(sql, true).await,
        "field, awaited as a clone" => repo.field_awaited().await,
        "timed" => repo.field_timed().await,
        "joined" => repo.joined().await,
        other => unreachable!("{other}"),
    };
    (result.is_ok(), calls_with(&db, sql), db)
}

const SHAPES: [&str; 10] = [
    "field",
    "arc",
    "refcell",
    "vec",
    "passed in",
    "helper",
    "helper, awaited",
    "field, awaited as a clone",
    "timed",
    "joined",
];

/// A read kept in a field, passed in or made by a helper is made again after a failure
/// that may have run it: its SQL is read from the statement.
#[tokio::test(start_paused = true)]
async fn a_held_read_is_made_again() {
    for shape in SHAPES {
        let (ok, calls, _) = held(shape, READ).await;
        assert!(ok, "{shape}: the read was made again and succeeded");
        assert_eq!(calls, 2, "{shape}");
    }
}

/// A write held the same ways is never made again after such a failure: its row lands
/// once, and the caller gets the error.
#[tokio::test(start_paused = true)]
async fn a_held_write_runs_once() {
    for shape in SHAPES {
        let (ok, calls, db) = held(shape, INSERT).await;
        assert!(!ok, "{shape}: the error is handed back");
        assert_eq!(calls, 1, "{shape}");
        assert_eq!(rows(&db), 1, "{shape}: landed once");
    }
}

/// A statement behind a wrapper of the project's own cannot tell its SQL: a write,
/// whatever it holds.
#[tokio::test(start_paused = true)]
async fn a_statement_that_cannot_be_read_stays_a_write() {
    for sql in [READ, INSERT] {
        let db = orders();
        let repo = Repo::new(db.clone(), sql);
        lose_once_after_running(&db, sql);
        assert!(repo.wrapped().await.is_err(), "{sql}");
        assert_eq!(calls_with(&db, sql), 1, "{sql}");
        assert_eq!(rows(&db), i64::from(sql == INSERT), "{sql}");
    }
    let db = orders();
    let repo = Repo::new(db.clone(), READ);
    lose_once_after_running(&db, READ);
    assert!(repo.wrapped_read().await.is_err());
    assert_eq!(calls_with(&db, READ), 1);
}

/// A generic statement is read through the type it is made with: a read is made again, a
/// write lands once.
#[tokio::test(start_paused = true)]
async fn a_generic_statement_is_read_as_what_it_is() {
    for sql in [READ, INSERT] {
        let db = orders();
        lose_once_after_running(&db, sql);
        let made = generic(&db.prepare(sql)).await;
        assert_eq!(made.is_ok(), sql == READ, "{sql}");
        assert_eq!(
            calls_with(&db, sql),
            if sql == READ { 2 } else { 1 },
            "{sql}"
        );
        assert_eq!(rows(&db), i64::from(sql == INSERT), "{sql}");
    }
}
