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
use test_support::join_all;

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

    /// Two reads over several lines awaited together (`tokio::join!`), as a handler that
    /// loads a page's parts at once: each call is retried on its own.
    #[d1_retry(policy = NO_BUDGET)]
    async fn joined(&self, sql: &str) -> Result<(i64, u64), Error> {
        let counting = self
            .db
            .prepare("SELECT count(*) AS n FROM users /* every user,\nDELETE FROM users;\n*/");
        let listing = self.db.prepare(sql);
        let (count, rows) = tokio::join!(counting.first::<Count>(None), listing.all());
        Ok((
            count?.map_or(0, |count| count.n),
            rows?.results::<Row>()?.len() as u64,
        ))
    }

    /// A statement over several lines prepared once, run for each id concurrently.
    #[d1_retry(policy = NO_BUDGET)]
    async fn joined_each(&self, ids: &[i64]) -> Result<i64, Error> {
        let find = self
            .db
            .prepare("SELECT count(*) AS n FROM users /* one id\n   at a time */ WHERE id = ?1");
        let runs = ids.iter().map(|id| {
            let find = &find;
            async move {
                find.clone()
                    .bind(&[(*id).into()])?
                    .first::<Count>(None)
                    .await
            }
        });
        let mut found = 0;
        for count in join_all(runs).await {
            found += count?.map_or(0, |count| count.n);
        }
        Ok(found)
    }

    /// A write whose string runs over two lines, awaited beside a read.
    #[d1_retry(policy = NO_BUDGET)]
    async fn joined_write(&self) -> Result<u64, Error> {
        let insert = self
            .db
            .prepare("INSERT INTO users (replace) VALUES ('two\nlines')");
        let listing = self.db.prepare(MULTI_LINE_READ);
        let (inserted, rows) = tokio::join!(insert.run(), listing.all());
        inserted?;
        Ok(rows?.results::<Row>()?.len() as u64)
    }

    /// The project's own statement macro: the attribute cannot see the SQL inside it, so
    /// the statement is judged by the SQL it holds when it runs, however many lines it has.
    #[d1_retry(policy = NO_BUDGET)]
    async fn own_macro(&self) -> Result<Option<Count>, Error> {
        count_statement!(self.db).first::<Count>(None).await
    }

    /// The same macro shape, handing back a write over several lines.
    #[d1_retry(policy = NO_BUDGET)]
    async fn own_macro_write(&self) -> Result<(), Error> {
        insert_statement!(self.db).run().await?;
        Ok(())
    }
}

/// A project's own macro that hands back a statement.
macro_rules! count_statement {
    ($db:expr) => {
        $db.prepare("SELECT count(*) AS n FROM users /* every user,\nDELETE FROM users;\n*/")
    };
}
use count_statement;

/// A project's own macro that hands back a write, whose comment reads like a `SELECT`.
macro_rules! insert_statement {
    ($db:expr) => {
        $db.prepare("INSERT INTO users (replace) /* SELECT\n*/ VALUES ('macro')")
    };
}
use insert_statement;

/// A project's own macro that writes annotated methods, the SQL passed as `$sql:expr` (which
/// reaches the attribute as a literal in an invisible group): judged as the literal it is.
macro_rules! counting_methods {
    ($($name:ident => $sql:expr;)*) => {
        impl Repo {
            $(
                #[d1_retry(policy = NO_BUDGET)]
                async fn $name(&self) -> Result<Option<Count>, Error> {
                    self.db.prepare($sql).first::<Count>(None).await
                }
            )*
        }
    };
}

counting_methods! {
    macro_read => "SELECT count(*) AS n FROM users /* every user,\nDELETE FROM users;\n*/";
    macro_write => "DELETE FROM users WHERE id = 1 /* and,\nreturn */ RETURNING id AS n";
}

impl Repo {
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
    test_support::count(&repo.db, "SELECT count(*) FROM users")
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

/// A statement prepared once and run for each id, in a loop (`each`) or concurrently
/// through `join_all` (`joined_each`): the failed run is made again, and no other.
#[tokio::test(start_paused = true)]
async fn a_statement_prepared_once_over_several_lines_is_retried_per_run() {
    for concurrently in [false, true] {
        let repo = seeded();
        test_support::lose_call_after_running(&repo.db, Operation::First, 1);
        let found = match concurrently {
            false => repo.each(&[1, 2, 3]).await,
            true => repo.joined_each(&[1, 2, 3]).await,
        };
        assert_eq!(found.unwrap(), 3, "concurrently: {concurrently}");
        let calls = repo.db.calls().len();
        assert_eq!(
            calls, 4,
            "three runs, one of them twice; concurrently: {concurrently}"
        );
        assert_eq!(users(&repo), 3);
    }
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

/// Awaited together, the read that failed after it ran is made again, and the other once.
#[tokio::test(start_paused = true)]
async fn reads_over_several_lines_awaited_together_are_each_retried() {
    for (operation, calls_first, calls_all) in [(Operation::First, 2, 1), (Operation::All, 1, 2)] {
        let repo = seeded();
        fail_once_after_running(&repo, operation);
        assert_eq!(repo.joined(MULTI_LINE_READ).await.unwrap(), (3, 3));
        let calls = repo.db.calls();
        let count = |op| calls.iter().filter(|call| call.operation == op).count();
        assert_eq!(count(Operation::First), calls_first, "{operation:?}");
        assert_eq!(count(Operation::All), calls_all, "{operation:?}");
        assert_eq!(users(&repo), 3);
    }
}

/// Beside a read, a write over two lines that may have run is handed back after one run;
/// failing before it ran, it is made again; either way its row is there once.
#[tokio::test(start_paused = true)]
async fn a_write_over_several_lines_awaited_together_runs_once() {
    let inserted = |repo: &Repo| {
        repo.db
            .with_connection(|c| {
                c.query_row(
                    "SELECT count(*) FROM users WHERE replace = 'two\nlines'",
                    [],
                    |row| row.get::<_, i64>(0),
                )
            })
            .unwrap()
    };
    let repo = seeded();
    fail_once_after_running(&repo, Operation::Run);
    assert!(repo.joined_write().await.is_err(), "handed back");
    assert_eq!(inserted(&repo), 1, "ran once");
    let runs = repo
        .db
        .calls()
        .iter()
        .filter(|c| c.operation == Operation::Run)
        .count();
    assert_eq!(runs, 1);

    let repo = seeded();
    repo.db.add_fault(
        Fault::new(Message::TooManyRequestsQueued)
            .before_execution()
            .on(Operation::Run)
            .times(1),
    );
    assert_eq!(repo.joined_write().await.unwrap(), 3);
    assert_eq!(inserted(&repo), 1, "made again, since it had not run");
}

/// SQL inside the project's own macro is out of the attribute's sight, and judged by what
/// the statement holds when it runs: the read over several lines (a `DELETE` inside its
/// comment) is made again after a failure that may have run it, the write is not.
#[tokio::test(start_paused = true)]
async fn sql_inside_a_user_macro_is_judged_when_it_runs() {
    let repo = seeded();
    fail_once_after_running(&repo, Operation::First);
    assert_eq!(repo.own_macro().await.unwrap(), Some(Count { n: 3 }));
    assert_eq!(repo.db.calls().len(), 2, "made again");

    let repo = seeded();
    fail_once_after_running(&repo, Operation::Run);
    assert!(repo.own_macro_write().await.is_err(), "handed back");
    assert_eq!(repo.db.calls().len(), 1, "not made again");
    assert_eq!(users(&repo), 4, "landed once");
}

/// Methods written by the project's own macro, their SQL passed in as `$sql:expr`: a read
/// over several lines is retried, a write is not.
#[tokio::test(start_paused = true)]
async fn sql_passed_to_a_user_macro_that_writes_methods_is_judged() {
    let repo = seeded();
    fail_once_after_running(&repo, Operation::First);
    assert_eq!(repo.macro_read().await.unwrap(), Some(Count { n: 3 }));
    assert_eq!(repo.db.calls().len(), 2, "the read ran again");
    fail_once_after_running(&repo, Operation::First);
    assert!(repo.macro_write().await.is_err());
    assert_eq!(repo.db.calls().len(), 3, "the write ran once");
    assert_eq!(users(&repo), 2);
}
