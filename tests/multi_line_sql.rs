//! SQL over several lines, judged by where it is handed.
//!
//! D1 sends a prepared statement to SQLite whole: a comment, string or name that runs over
//! several lines is one token of it, and a read stays a read. `exec()` runs each line as a
//! query of its own: there the same text may write. So `#[d1_retry]` judges SQL handed to
//! `prepare` with `is_read_only_prepared` and SQL handed to `exec` with `is_read_only`, for
//! literals and constants when it compiles and for dynamic SQL when it runs.
//!
//! Each test injects a maybe-executed failure after the call has run, on the testing kit's
//! SQLite (whose `exec()` runs line by line, as D1's does), and counts the runs: a read is
//! made again, a text that writes is handed back after one run.

use d1_retry::testing::{D1Database, Error, Fault, Message, Operation};
use d1_retry::{RetryPolicy, d1_retry, is_read_only, is_read_only_prepared};

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();

/// A read to SQLite, whose comment holds a write that `exec()` would run as a line.
const COMMENTED: &str = "SELECT count(*) AS n FROM users /* every user,\nDELETE FROM users;\n*/";

/// A read whose string holds a line break, and a name at the start of a line that is a
/// write keyword elsewhere.
const MULTI_LINE_READ: &str = "SELECT 'a\nb' AS text,\n  replace\nFROM users";

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Count {
    n: i64,
}

/// Any row: only the number of rows is looked at.
#[derive(serde::Deserialize)]
struct Row {}

struct Repo {
    db: D1Database,
}

impl Repo {
    #[d1_retry(policy = NO_BUDGET)]
    async fn literal(&self) -> Result<Option<Count>, Error> {
        self.db
            .prepare("SELECT count(*) AS n FROM users /* every user,\nDELETE FROM users;\n*/")
            .first::<Count>(None)
            .await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn constant(&self) -> Result<Option<Count>, Error> {
        self.db.prepare(COMMENTED).first::<Count>(None).await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn dynamic(&self, sql: &str) -> Result<u64, Error> {
        let result = self.db.prepare(sql).all().await?;
        Ok(result.results::<Row>()?.len() as u64)
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn exec_literal(&self) -> Result<u32, Error> {
        let result = self
            .db
            .exec("SELECT count(*) AS n FROM users /* every user,\nDELETE FROM users;\n*/")
            .await?;
        Ok(result.count().ok().flatten().unwrap_or(0))
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn exec_dynamic(&self, sql: &str) -> Result<u32, Error> {
        let result = self.db.exec(sql).await?;
        Ok(result.count().ok().flatten().unwrap_or(0))
    }

    /// A statement over several lines, prepared once and run in a loop.
    #[d1_retry(policy = NO_BUDGET)]
    async fn each(&self, ids: &[i64]) -> Result<i64, Error> {
        let find = self
            .db
            .prepare("SELECT count(*) AS n FROM users /* one id\n   at a time */ WHERE id = ?1");
        let mut found = 0;
        for id in ids {
            let count = find
                .clone()
                .bind(&[(*id).into()])?
                .first::<Count>(None)
                .await?;
            found += count.map_or(0, |count| count.n);
        }
        Ok(found)
    }

    /// The whole body vouched read-only: every SQL it prepares must be.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn whole_body(&self, sql: &str) -> Result<u64, Error> {
        let commented = self
            .db
            .prepare("SELECT count(*) AS n FROM users /* every user,\nDELETE FROM users;\n*/")
            .first::<Count>(None)
            .await?;
        let rows = self.db.prepare(sql).all().await?;
        Ok(commented.map_or(0, |count| count.n as u64) + rows.results::<Row>()?.len() as u64)
    }
}

fn seeded() -> Repo {
    let db = D1Database::open_in_memory().unwrap();
    db.with_connection(|c| {
        c.execute_batch(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, replace TEXT);
             INSERT INTO users (replace) VALUES ('a'), ('b'), ('c');",
        )
    })
    .unwrap();
    Repo { db }
}

/// The first call of `operation` fails as maybe executed, after it ran.
fn fail_once_after_running(repo: &Repo, operation: Operation) {
    repo.db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .on(operation)
            .times(1),
    );
}

fn users(repo: &Repo) -> i64 {
    repo.db
        .with_connection(|c| c.query_row("SELECT count(*) FROM users", [], |row| row.get(0)))
        .unwrap()
}

#[test]
fn the_texts_are_reads_only_when_prepared() {
    for sql in [COMMENTED, MULTI_LINE_READ] {
        assert!(is_read_only_prepared(sql), "{sql:?}");
        assert!(!is_read_only(sql), "{sql:?}");
    }
}

/// A literal is judged when the function compiles, a constant by the compiler where it is
/// used: both as prepared statements.
#[tokio::test(start_paused = true)]
async fn a_prepared_literal_or_constant_over_several_lines_is_retried_as_a_read() {
    let repo = seeded();
    fail_once_after_running(&repo, Operation::First);
    assert_eq!(repo.literal().await.unwrap(), Some(Count { n: 3 }));
    assert_eq!(repo.db.calls().len(), 2, "the literal ran again");
    fail_once_after_running(&repo, Operation::First);
    assert_eq!(repo.constant().await.unwrap(), Some(Count { n: 3 }));
    assert_eq!(repo.db.calls().len(), 4, "the constant ran again");
    assert_eq!(users(&repo), 3, "the comment ran nothing");
}

#[tokio::test(start_paused = true)]
async fn prepared_dynamic_sql_over_several_lines_is_retried_as_a_read() {
    let repo = seeded();
    fail_once_after_running(&repo, Operation::All);
    assert_eq!(repo.dynamic(MULTI_LINE_READ).await.unwrap(), 3);
    assert_eq!(repo.db.calls().len(), 2);
    fail_once_after_running(&repo, Operation::All);
    assert_eq!(repo.dynamic(COMMENTED).await.unwrap(), 1);
    assert_eq!(repo.db.calls().len(), 4);
    assert_eq!(users(&repo), 3);
}

#[tokio::test(start_paused = true)]
async fn prepared_dynamic_sql_that_writes_is_still_handed_back() {
    let repo = seeded();
    fail_once_after_running(&repo, Operation::All);
    let write = "SELECT 'a\nb';\nDELETE FROM users WHERE id = 1 RETURNING id";
    assert!(repo.dynamic(write).await.is_err());
    assert_eq!(repo.db.calls().len(), 1, "the write ran once");
}

/// In a loop, the failed run of the prepared statement is made again, and no other.
#[tokio::test(start_paused = true)]
async fn a_statement_prepared_once_over_several_lines_is_retried_in_a_loop() {
    let repo = seeded();
    repo.db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .on(Operation::First)
            .on_calls(1..2),
    );
    assert_eq!(repo.each(&[1, 2, 3]).await.unwrap(), 3);
    assert_eq!(repo.db.calls().len(), 4, "three runs, the second one twice");
    assert_eq!(users(&repo), 3);
}

/// `exec()` runs the comment's inner line: the same text writes there, so it is not made
/// again after it may have run.
#[tokio::test(start_paused = true)]
async fn the_same_text_handed_to_exec_is_a_write() {
    let repo = seeded();
    fail_once_after_running(&repo, Operation::Exec);
    assert!(repo.exec_literal().await.is_err());
    assert_eq!(repo.db.calls().len(), 1);
    assert_eq!(
        users(&repo),
        0,
        "exec ran the DELETE of the comment's line, once"
    );

    let repo = seeded();
    fail_once_after_running(&repo, Operation::Exec);
    assert!(repo.exec_dynamic(COMMENTED).await.is_err());
    assert_eq!(repo.db.calls().len(), 1);
}

/// Under `read_only`, SQL over several lines handed to `prepare` is a read: it compiles as
/// a literal, and dynamic, it is not counted as a write (which would stop the retries).
#[tokio::test(start_paused = true)]
async fn a_read_only_body_prepares_sql_over_several_lines() {
    let repo = seeded();
    fail_once_after_running(&repo, Operation::All);
    assert_eq!(repo.whole_body(MULTI_LINE_READ).await.unwrap(), 6);
    assert_eq!(repo.db.calls().len(), 4, "both reads ran twice");
    assert_eq!(users(&repo), 3);
}
