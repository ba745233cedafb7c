//! A method of the user's named like a D1 call, on a D1 type that has no method of that
//! name (an extension trait's `first` on the database), is made once, as written: it may
//! make several D1 calls, and a retry of it would make the ones that completed again.
//!
//! Each shape fails its second D1 call in every way, on the testing kit's SQLite; the rows
//! show that its first write ran once. A call the type does have, on the same receivers,
//! is still retried.

use d1_retry::testing::{
    D1Database, D1DatabaseSession, D1PreparedStatement, D1Result, Error, Message, Timing,
};
use d1_retry::{Retry, RetryPolicy, d1_retry};
use std::rc::Rc;
use test_support::{calls_with, count, fail_once, orders_and_audit};

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();
const INSERT: &str = "INSERT INTO orders";
const AUDIT: &str = "INSERT INTO audit";

/// Conveniences a Worker's code adds to the D1 types: each writes an order, then its audit
/// row, through two D1 calls.
trait Shortcuts {
    /// Named like a statement's `first`, which a database has not.
    async fn first(&self, item: &str) -> Result<D1Result, Error>;
    /// Named like a database's `dump`, which a session has not, and which d1-retry judges
    /// a read.
    async fn dump(&self) -> Result<D1Result, Error>;
}

async fn order_then_audit(
    prepare: impl Fn(&str) -> d1_retry::testing::D1PreparedStatement,
    item: &str,
) -> Result<D1Result, Error> {
    let order = prepare("INSERT INTO orders (item) VALUES (?1)")
        .bind(&[item.into()])?
        .run()
        .await?;
    prepare("INSERT INTO audit (what) VALUES (?1)")
        .bind(&[item.into()])?
        .run()
        .await?;
    Ok(order)
}

impl Shortcuts for D1Database {
    async fn first(&self, item: &str) -> Result<D1Result, Error> {
        order_then_audit(|sql| self.prepare(sql), item).await
    }
    async fn dump(&self) -> Result<D1Result, Error> {
        order_then_audit(|sql| self.prepare(sql), "dumped").await
    }
}

impl Shortcuts for D1DatabaseSession {
    async fn first(&self, item: &str) -> Result<D1Result, Error> {
        order_then_audit(|sql| self.prepare(sql), item).await
    }
    async fn dump(&self) -> Result<D1Result, Error> {
        order_then_audit(|sql| self.prepare(sql), "dumped").await
    }
}

/// A statement's convenience, named like a database's `exec`, which a statement has not:
/// runs the statement (the order), then writes its audit row through the database it is
/// handed, which is no SQL and no column.
trait StatementShortcuts {
    async fn exec(&self, db: &D1Database) -> Result<D1Result, Error>;
}

impl StatementShortcuts for D1PreparedStatement {
    async fn exec(&self, db: &D1Database) -> Result<D1Result, Error> {
        let order = self.run().await?;
        db.prepare("INSERT INTO audit (what) VALUES ('exec')")
            .run()
            .await?;
        Ok(order)
    }
}

#[d1_retry(policy = NO_BUDGET)]
async fn exec_on_a_statement(db: &D1Database) -> Result<(), Error> {
    let order = db.prepare("INSERT INTO orders (item) VALUES ('a')");
    order.exec(db).await?;
    Ok(())
}

#[d1_retry(policy = NO_BUDGET)]
async fn first_on_a_database(db: &D1Database) -> Result<(), Error> {
    db.first("a").await?;
    Ok(())
}

#[d1_retry(policy = NO_BUDGET)]
async fn first_on_a_shared_database(db: Rc<D1Database>) -> Result<(), Error> {
    db.first("a").await?;
    Ok(())
}

#[d1_retry(policy = NO_BUDGET)]
async fn dump_on_a_session(db: &D1Database) -> Result<(), Error> {
    let session = db.with_session(None)?;
    session.dump().await?;
    Ok(())
}

/// The database's own `batch` beside the shortcut: still retried.
#[d1_retry(policy = NO_BUDGET)]
async fn own_batch_then_shortcut(db: &D1Database) -> Result<(), Error> {
    db.batch(vec![
        db.prepare("INSERT INTO audit (what) VALUES ('batched')"),
    ])
    .await?;
    db.first("a").await?;
    Ok(())
}

/// One of each class, as D1 words it, before and after the statement runs.
fn failures() -> impl Iterator<Item = (Message, Timing)> {
    [
        Message::CannotResolve,
        Message::NetworkConnectionLost,
        Message::StorageTimeout,
    ]
    .into_iter()
    .flat_map(|message| {
        [Timing::BeforeExecution, Timing::AfterExecution].map(|timing| (message, timing))
    })
}

/// Runs `shape` with its audit write failing once as `message` says, and checks that the
/// order was written once and the shortcut made once.
async fn audit_fails_once<F, Fut>(name: &str, shape: F)
where
    F: Fn(D1Database) -> Fut,
    Fut: Future<Output = Result<(), Error>>,
{
    for (message, timing) in failures() {
        let db = orders_and_audit();
        fail_once(&db, AUDIT, message, timing);
        let result = shape(db.clone()).await;
        let case = format!("{name}: {message:?} {timing:?}");
        assert!(
            result.is_err(),
            "{case}: the shortcut's failure reaches the caller"
        );
        assert_eq!(calls_with(&db, INSERT), 1, "{case}");
        assert_eq!(calls_with(&db, AUDIT), 1, "{case}");
        assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1, "{case}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_extension_first_on_a_database_is_made_once() {
    audit_fails_once(
        "database",
        |db| async move { first_on_a_database(&db).await },
    )
    .await;
    audit_fails_once("Rc", |db| first_on_a_shared_database(Rc::new(db))).await;
}

/// The argument of a statement's own method named `exec` is handed as written: it is not
/// taken for the column of D1's `first`, which only that call's argument is typed as.
#[tokio::test(start_paused = true)]
async fn an_extension_exec_on_a_statement_is_made_once() {
    audit_fails_once(
        "statement",
        |db| async move { exec_on_a_statement(&db).await },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn an_extension_dump_on_a_session_is_made_once() {
    audit_fails_once("session", |db| async move { dump_on_a_session(&db).await }).await;
}

/// The database's own calls in the same function are retried as before.
#[tokio::test(start_paused = true)]
async fn the_type_s_own_calls_are_still_retried() {
    let db = orders_and_audit();
    fail_once(
        &db,
        "batched",
        Message::CannotResolve,
        Timing::BeforeExecution,
    );
    own_batch_then_shortcut(&db).await.unwrap();
    // The batch failed before it ran and was made again; the shortcut then ran once.
    assert_eq!(calls_with(&db, "batched"), 2);
    assert_eq!(count(&db, "SELECT count(*) FROM audit"), 2);
    assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);
}

/// Inside an enclosing `Retry`, the shortcut's failure counts as a write whatever its class:
/// its own first write ran before the audit write failed before D1 ran it, so the attempt
/// is not run again.
#[tokio::test(start_paused = true)]
async fn an_enclosing_retry_does_not_run_the_shortcut_again() {
    for (message, timing) in failures() {
        let db = orders_and_audit();
        fail_once(&db, AUDIT, message, timing);
        let result = Retry::new("checkout")
            .policy(NO_BUDGET)
            .run(|| first_on_a_database(&db))
            .await;
        let case = format!("{message:?} {timing:?}");
        assert!(result.is_err(), "{case}");
        assert_eq!(calls_with(&db, INSERT), 1, "{case}");
        assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1, "{case}");
    }
}
