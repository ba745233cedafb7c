//! A statement chosen by `if`/`else` or `match`: `#[d1_retry]` judges it by every arm's
//! SQL, so a read chosen among reads is made again after D1 may have run it, and a
//! statement that may be a write is never made again after a maybe-executed failure,
//! whichever arm chose it.
//!
//! Each method runs one chosen statement, and each test fails that statement once after it
//! ran (maybe executed). Reads count the calls D1 saw; writes count the rows that landed.

use d1_retry::testing::{D1Database, Error};
use d1_retry::{RetryPolicy, d1_retry};
use test_support::{Archive, count, lose_once_after_running};

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();

const COUNT_ALL: &str = "SELECT count(*) AS n FROM orders";
const COUNT_ITEM: &str = "SELECT count(*) AS n FROM orders WHERE item = ?1";
const INSERT: &str = "INSERT INTO orders (item) VALUES ('chosen')";
const ARCHIVE: &str = "INSERT INTO archive";

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Count {
    n: i64,
}

/// Which statement a method chooses.
#[derive(Clone, Copy, Debug)]
enum Filter {
    All,
    Item,
    Nothing,
}

/// A macro of the project's, named like std's `todo!`, that prepares a write: an arm that
/// calls it makes a statement the attribute cannot see.
macro_rules! todo {
    ($db:expr) => {
        $db.prepare("INSERT INTO orders (item) VALUES ('chosen')")
    };
}

struct Repo {
    db: D1Database,
    archive: Option<Archive>,
}

impl Repo {
    fn database(&self) -> &D1Database {
        &self.db
    }

    /// Two reads, chosen by `if`/`else`; the second bound to a parameter, on a database a
    /// call returns (probed where it is evaluated).
    #[d1_retry(policy = NO_BUDGET)]
    async fn by_if(&self, item: Option<&str>) -> Result<Option<Count>, Error> {
        let stmt = if let Some(item) = item {
            self.database().prepare(COUNT_ITEM).bind(&[item.into()])?
        } else {
            self.db.prepare(COUNT_ALL)
        };
        stmt.first(None).await
    }

    /// Two reads chosen by `match`, and an arm that leaves without a statement.
    #[d1_retry(policy = NO_BUDGET)]
    async fn by_match(&self, filter: Filter) -> Result<Option<Count>, Error> {
        let stmt = match filter {
            Filter::All => self.db.prepare("SELECT count(*) AS n FROM orders"),
            Filter::Item => self
                .db
                .prepare("SELECT count(*) AS n FROM orders WHERE item = ?1")
                .bind(&["tea".into()])?,
            Filter::Nothing => return Ok(None),
        };
        stmt.first(None).await
    }

    /// A write or a read: the statement may write, whichever arm ran.
    #[d1_retry(policy = NO_BUDGET)]
    async fn write_or_read(&self, first: bool) -> Result<(), Error> {
        let stmt = if first {
            self.db
                .prepare("INSERT INTO orders (item) VALUES ('chosen')")
        } else {
            self.db.prepare("SELECT count(*) AS n FROM orders")
        };
        stmt.run().await?;
        Ok(())
    }

    /// The same, the write in the second arm.
    #[d1_retry(policy = NO_BUDGET)]
    async fn read_or_write(&self, first: bool) -> Result<(), Error> {
        let stmt = if first {
            self.db.prepare("SELECT count(*) AS n FROM orders")
        } else {
            self.db
                .prepare("INSERT INTO orders (item) VALUES ('chosen')")
        };
        stmt.run().await?;
        Ok(())
    }

    /// A statement chosen as the receiver of the execution itself, across `else if`, by
    /// arms naming their SQL through a constant, a dynamic text and a literal write.
    #[d1_retry(policy = NO_BUDGET)]
    async fn chosen_in_place(&self, which: u8, sql: &str) -> Result<(), Error> {
        (if which == 0 {
            self.db.prepare(COUNT_ALL)
        } else if which == 1 {
            self.db.prepare(sql)
        } else {
            self.db
                .prepare("INSERT INTO orders (item) VALUES ('chosen')")
        })
        .run()
        .await?;
        Ok(())
    }

    /// The same without the write: the dynamic arm's verdict is read at run time.
    #[d1_retry(policy = NO_BUDGET)]
    async fn read_in_place(&self, which: u8, sql: &str) -> Result<Option<Count>, Error> {
        (if which == 0 {
            self.db.prepare(COUNT_ALL)
        } else {
            self.db.prepare(sql)
        })
        .first(None)
        .await
    }

    /// A borrowed statement chosen by `match` (its temporary extended through the arms), run
    /// from the `async move` blocks of a `join_all`, each block reading the verdict; arms
    /// that leave, by `return` and by `unreachable!`, make no statement.
    #[d1_retry(policy = NO_BUDGET)]
    async fn joined(&self, filter: Filter, times: usize) -> Result<i64, Error> {
        let stmt = match filter {
            Filter::All => &self.db.prepare(COUNT_ALL),
            Filter::Item if times > 0 => &self.db.prepare(COUNT_ITEM).bind(&["tea".into()])?,
            Filter::Item => return Ok(0),
            Filter::Nothing => unreachable!("nothing is never joined"),
        };
        let runs = (0..times).map(|_| async move { stmt.first::<Count>(None).await });
        let mut total = 0;
        for found in test_support::join_all(runs).await {
            total += found?.map_or(0, |count| count.n);
        }
        Ok(total)
    }

    /// A read, or a statement out of sight (the project's `todo!`, an insert): the latter
    /// is judged by the SQL it holds when its arm ran, recorded there; an arm that leaves
    /// by `Err(..)?` makes none.
    #[d1_retry(policy = NO_BUDGET)]
    async fn read_or_out_of_sight(&self, filter: Filter) -> Result<(), Error> {
        let stmt = match filter {
            Filter::All => self.db.prepare(COUNT_ALL),
            Filter::Item => todo!(self.db),
            Filter::Nothing => Err("nothing to run")?,
        };
        stmt.run().await?;
        Ok(())
    }

    /// An `if` whose first arm has a statement before its value: out of sight, so judged
    /// by the SQL it holds when it runs (a read); the other arm is a read.
    #[d1_retry(policy = NO_BUDGET)]
    async fn with_a_block_arm(&self, item: Option<&str>) -> Result<Option<Count>, Error> {
        let stmt = if let Some(item) = item {
            let params = [item.into()];
            self.db.prepare(COUNT_ITEM).bind(&params)?
        } else {
            self.db.prepare(COUNT_ALL)
        };
        stmt.first(None).await
    }

    /// Arms out of sight in a `match`, beside a read in sight: a block with a statement
    /// before its value (an insert of `text`), and a helper's statement (of `text`).
    #[d1_retry(policy = NO_BUDGET)]
    async fn out_of_sight_arms(&self, filter: Filter, text: &str) -> Result<(), Error> {
        let stmt = match filter {
            Filter::Item => {
                let params = [text.into()];
                self.db
                    .prepare("INSERT INTO orders (item) VALUES (?1)")
                    .bind(&params)?
            }
            Filter::All => self.made(text),
            Filter::Nothing => self.db.prepare(COUNT_ALL),
        };
        stmt.run().await?;
        Ok(())
    }

    fn made(&self, sql: &str) -> d1_retry::testing::D1PreparedStatement {
        self.db.prepare(sql)
    }

    /// The same beside a literal write, which is judged without a probe: the block arm
    /// alone records.
    #[d1_retry(policy = NO_BUDGET)]
    async fn block_arm_or_write(&self, item: Option<&str>) -> Result<(), Error> {
        let stmt = if let Some(item) = item {
            let params = [item.into()];
            self.db.prepare(COUNT_ITEM).bind(&params)?
        } else {
            self.db
                .prepare("INSERT INTO orders (item) VALUES ('chosen')")
        };
        stmt.run().await?;
        Ok(())
    }

    /// An arm whose pattern binds `db` to the project's own builder, beside a `db` that is
    /// D1's: the arm's `prepare` is the builder's, whatever the outer `db` is, so its
    /// archive is out of sight and lands once.
    #[d1_retry(policy = NO_BUDGET)]
    async fn arm_binds_the_receiver(&self) -> Result<(), Error> {
        let db = &self.db;
        let stmt = match &self.archive {
            Some(db) => db.prepare("SELECT item FROM orders"),
            None => db.prepare("SELECT item FROM orders"),
        };
        stmt.run().await?;
        Ok(())
    }
}

fn seeded(with_archive: bool) -> Repo {
    let db = test_support::orders_with_archive();
    Repo {
        archive: with_archive.then(|| Archive { db: db.clone() }),
        db,
    }
}

fn rows(repo: &Repo, table: &str) -> i64 {
    count(&repo.db, &format!("SELECT count(*) FROM {table}"))
}

/// A read chosen among reads, by `if let` or `match`, is made again after D1 may have run
/// it; an arm that leaves makes no call.
#[tokio::test(start_paused = true)]
async fn a_read_chosen_among_reads_is_made_again() {
    for item in [None, Some("tea")] {
        let repo = seeded(false);
        lose_once_after_running(&repo.db, "FROM orders");
        assert_eq!(repo.by_if(item).await.unwrap(), Some(Count { n: 1 }));
        assert_eq!(repo.db.calls().len(), 2, "{item:?}: made again");
    }
    for filter in [Filter::All, Filter::Item] {
        let repo = seeded(false);
        lose_once_after_running(&repo.db, "FROM orders");
        assert_eq!(repo.by_match(filter).await.unwrap(), Some(Count { n: 1 }));
        assert_eq!(repo.db.calls().len(), 2, "{filter:?}: made again");
    }
    let repo = seeded(false);
    assert_eq!(repo.by_match(Filter::Nothing).await.unwrap(), None);
    assert!(repo.db.calls().is_empty());
}

/// A statement that one arm makes a write is a write in every arm: the insert lands once,
/// in either arm, and the read beside it is not made again either.
/// The write (`write`) or the read, through the method with the write in its first arm
/// (`write_first`) or in its second.
async fn choose(repo: &Repo, write_first: bool, write: bool) -> Result<(), Error> {
    if write_first {
        repo.write_or_read(write).await
    } else {
        repo.read_or_write(!write).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_statement_that_may_write_is_made_once() {
    for write_first in [true, false] {
        let repo = seeded(false);
        lose_once_after_running(&repo.db, INSERT);
        assert!(choose(&repo, write_first, true).await.is_err());
        assert_eq!(repo.db.calls().len(), 1, "write first: {write_first}");
        assert_eq!(rows(&repo, "orders"), 2, "the insert landed once");

        let repo = seeded(false);
        lose_once_after_running(&repo.db, COUNT_ALL);
        assert!(choose(&repo, write_first, false).await.is_err());
        assert_eq!(repo.db.calls().len(), 1, "write first: {write_first}");
    }
}

/// Chosen as the execution's receiver: among reads, the read is made again, the dynamic
/// one as well, and a dynamic text that writes is made once; with a write among the arms,
/// no arm's statement is made again after D1 may have run it.
#[tokio::test(start_paused = true)]
async fn a_statement_chosen_in_place_is_judged_by_every_arm() {
    let returning = "INSERT INTO orders (item) VALUES ('dynamic') RETURNING 1 AS n";
    for (which, sql, calls) in [(0, COUNT_ALL, 2), (1, COUNT_ALL, 2), (1, returning, 1)] {
        let repo = seeded(false);
        lose_once_after_running(&repo.db, if calls == 2 { COUNT_ALL } else { "INSERT" });
        let read = repo.read_in_place(which, sql).await;
        assert_eq!(read.is_ok(), calls == 2, "{which} {sql}");
        assert_eq!(repo.db.calls().len(), calls, "{which} {sql}");
        assert_eq!(rows(&repo, "orders"), 3 - calls as i64, "{which} {sql}");
    }
    for (which, fragment) in [(0, COUNT_ALL), (1, COUNT_ALL), (2, INSERT)] {
        let repo = seeded(false);
        lose_once_after_running(&repo.db, fragment);
        assert!(
            repo.chosen_in_place(which, COUNT_ALL).await.is_err(),
            "{which}"
        );
        assert_eq!(repo.db.calls().len(), 1, "{which}: made once");
        assert_eq!(rows(&repo, "orders"), 1 + i64::from(which == 2), "{which}");
    }
}

/// A borrowed statement chosen by `match` and run from several `async move` blocks: the
/// read that failed after it ran is made again, alone.
#[tokio::test(start_paused = true)]
async fn a_chosen_statement_reaches_every_async_block() {
    for filter in [Filter::All, Filter::Item] {
        let repo = seeded(false);
        test_support::lose_call_after_running(&repo.db, d1_retry::testing::Operation::First, 1);
        assert_eq!(repo.joined(filter, 3).await.unwrap(), 3, "{filter:?}");
        assert_eq!(repo.db.calls().len(), 4, "{filter:?}: one run made twice");
    }
}

/// An arm out of sight makes the statement out of sight only when it runs, and the
/// statement is then judged by the SQL it holds: the insert of the project's `todo!` lands
/// once, the read of a block arm is made again, and so is the read of the other arm.
#[tokio::test(start_paused = true)]
async fn an_arm_out_of_sight_is_judged_by_the_sql_it_holds_when_it_runs() {
    let repo = seeded(false);
    lose_once_after_running(&repo.db, INSERT);
    assert!(repo.read_or_out_of_sight(Filter::Item).await.is_err());
    assert_eq!(repo.db.calls().len(), 1, "made once");
    assert_eq!(rows(&repo, "orders"), 2, "the insert landed once");

    let repo = seeded(false);
    lose_once_after_running(&repo.db, COUNT_ALL);
    repo.read_or_out_of_sight(Filter::All).await.unwrap();
    assert_eq!(repo.db.calls().len(), 2, "the read was made again");

    let repo = seeded(false);
    assert!(repo.read_or_out_of_sight(Filter::Nothing).await.is_err());
    assert!(repo.db.calls().is_empty());

    // An arm with a statement before its value, the first of an `if`: a read, read off
    // the statement when it runs, beside a read and beside a literal write.
    let repo = seeded(false);
    lose_once_after_running(&repo.db, COUNT_ITEM);
    repo.with_a_block_arm(Some("tea")).await.unwrap();
    assert_eq!(
        repo.db.calls().len(),
        2,
        "out of sight, holds a read: made again"
    );
    let repo = seeded(false);
    lose_once_after_running(&repo.db, COUNT_ITEM);
    repo.block_arm_or_write(Some("tea")).await.unwrap();
    assert_eq!(
        repo.db.calls().len(),
        2,
        "out of sight, holds a read: made again"
    );
    lose_once_after_running(&repo.db, INSERT);
    assert!(repo.block_arm_or_write(None).await.is_err());
    assert_eq!(rows(&repo, "orders"), 2, "the insert landed once");

    let repo = seeded(false);
    lose_once_after_running(&repo.db, COUNT_ALL);
    assert_eq!(
        repo.with_a_block_arm(None).await.unwrap(),
        Some(Count { n: 1 })
    );
    assert_eq!(repo.db.calls().len(), 2, "the read was made again");
}

/// Arms out of sight that hold a write make it once, whichever shape hid them; one that
/// holds a read is made again.
#[tokio::test(start_paused = true)]
async fn an_arm_out_of_sight_that_holds_a_write_makes_it_once() {
    let repo = seeded(false);
    lose_once_after_running(&repo.db, "INSERT INTO orders (item) VALUES (?1)");
    assert!(repo.out_of_sight_arms(Filter::Item, "block").await.is_err());
    assert_eq!(repo.db.calls().len(), 1, "a block arm's insert: made once");
    assert_eq!(
        count(&repo.db, "SELECT count(*) FROM orders WHERE item = 'block'"),
        1
    );

    let repo = seeded(false);
    lose_once_after_running(&repo.db, INSERT);
    assert!(repo.out_of_sight_arms(Filter::All, INSERT).await.is_err());
    assert_eq!(repo.db.calls().len(), 1, "a helper's insert: made once");
    assert_eq!(rows(&repo, "orders"), 2, "the insert landed once");

    let repo = seeded(false);
    lose_once_after_running(&repo.db, COUNT_ALL);
    repo.out_of_sight_arms(Filter::All, COUNT_ALL)
        .await
        .unwrap();
    assert_eq!(repo.db.calls().len(), 2, "a helper's read: made again");

    let repo = seeded(false);
    lose_once_after_running(&repo.db, COUNT_ALL);
    repo.out_of_sight_arms(Filter::Nothing, "").await.unwrap();
    assert_eq!(repo.db.calls().len(), 2, "the read in sight: made again");
}

/// The builder an arm's pattern binds is probed in the arm: its archive, judged by the
/// `SELECT` handed to it as if the outer `db` made it, would land twice. D1's `prepare` in
/// the other arm keeps its statement judged by its SQL.
#[tokio::test(start_paused = true)]
async fn an_arm_s_own_receiver_is_the_one_probed() {
    let repo = seeded(true);
    lose_once_after_running(&repo.db, ARCHIVE);
    assert!(repo.arm_binds_the_receiver().await.is_err());
    assert_eq!(repo.db.calls().len(), 1, "made once");
    assert_eq!(rows(&repo, "archive"), 1, "the archive landed once");

    let repo = seeded(false);
    lose_once_after_running(&repo.db, "SELECT item FROM orders");
    repo.arm_binds_the_receiver().await.unwrap();
    assert_eq!(repo.db.calls().len(), 2, "D1's read was made again");
}
