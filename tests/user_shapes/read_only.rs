//! `#[d1_retry(read_only)]` bodies, run again as a whole after a transient failure: their
//! side effects repeat, as the README's contract says; SQL from a constant each
//! implementation picks keeps a reading body retried; and SQL that turns out to write at
//! run time (a local, an `if` in `prepare`'s argument, or a text handed to a statement
//! builder of the user's own) stops the body from running again.
//!
//! The writes a body runs out of sight (nested functions, held statements) are
//! `tests/read_only_writes.rs`'s.

use core::sync::atomic::{AtomicU32, Ordering};

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, Error};
use test_support::{Archive, calls_with};

use crate::harness::{
    NO_BUDGET, READ_N, count_fails_once_after_running, count_orders, database, hits, rows,
};

struct Reader {
    db: D1Database,
    archive: Archive,
    effects: AtomicU32,
}

impl Reader {
    /// A metric bumped before the read: allowed to repeat, by the `read_only` contract.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn effect_then_count(&self) -> Result<i64, Error> {
        self.effects.fetch_add(1, Ordering::Relaxed);
        count_orders(&self.db).await
    }

    /// A statement builder of the user's own, handed a text that reads but made into an
    /// `INSERT ... SELECT` by the builder, the text a parameter rather than a literal.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn archive_dynamic_then_count(&self, select: &str) -> Result<i64, Error> {
        self.archive.prepare(select).run().await?;
        count_orders(&self.db).await
    }
}

fn reader(db: &D1Database) -> Reader {
    Reader {
        db: db.clone(),
        archive: Archive { db: db.clone() },
        effects: AtomicU32::new(0),
    }
}

/// The whole body runs again, so the code before the read runs again too: the user vouched
/// for it.
#[tokio::test(start_paused = true)]
async fn a_read_only_body_s_side_effects_repeat_with_each_attempt() {
    let db = database();
    count_fails_once_after_running(&db);
    let repo = reader(&db);
    assert_eq!(repo.effect_then_count().await.unwrap(), 0);
    assert_eq!(repo.effects.load(Ordering::Relaxed), 2);
    assert_eq!(calls_with(&db, READ_N), 2);
}

/// A `prepare` of the user's own may make a write of any text, a dynamic one included:
/// the body is not run again, and the archive is filled once. (With a literal text:
/// `tests/read_only_writes.rs`.)
#[tokio::test(start_paused = true)]
async fn a_user_s_prepare_fed_dynamic_sql_stops_a_read_only_body_from_running_again() {
    let db = database();
    db.with_connection(|c| c.execute_batch("INSERT INTO orders (item) VALUES ('tea')"))
        .unwrap();
    count_fails_once_after_running(&db);
    let select = String::from("SELECT item FROM orders");
    let result = reader(&db).archive_dynamic_then_count(&select).await;
    // Not run again: the read after the write is retried on its own.
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(rows(&db, "archive"), 1);
    assert_eq!(calls_with(&db, READ_N), 2);
}

/// A table whose peek statement each implementation may pick.
trait Peek {
    const PEEK: &'static str = "SELECT count(*) AS n FROM orders";
    fn db(&self) -> &D1Database;

    /// A `read_only` default method running the implementation's constant.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn peek(&self) -> Result<i64, Error>
    where
        Self: Sync,
    {
        self.db().prepare(Self::PEEK).run().await?;
        count_orders(self.db()).await
    }
}

struct Reads(D1Database);

impl Peek for Reads {
    fn db(&self) -> &D1Database {
        &self.0
    }
}

/// A `read_only` generic function running `T::PEEK`.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn peek_generic<T: Peek + Sync>(table: &T) -> Result<i64, Error> {
    table.db().prepare(T::PEEK).run().await?;
    count_orders(table.db()).await
}

/// An associated constant that reads, reached through `Self::` or a type parameter, keeps
/// the body retried as a whole. (One that writes is a compile error once instantiated:
/// the UI tests `const_sql_read_only_write` and `self_const_sql_read_only_write`.)
#[tokio::test(start_paused = true)]
async fn a_read_only_body_reading_an_associated_const_is_run_again() {
    let db = database();
    count_fails_once_after_running(&db);
    assert_eq!(Reads(db.clone()).peek().await.unwrap(), 0);
    assert_eq!(calls_with(&db, READ_N), 3);

    let db = database();
    count_fails_once_after_running(&db);
    assert_eq!(peek_generic(&Reads(db.clone())).await.unwrap(), 0);
    assert_eq!(calls_with(&db, READ_N), 3);
}

struct Misuse {
    db: D1Database,
}

impl Misuse {
    /// SQL in a `let` local: dynamic to the attribute, judged as it runs.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn bump_from_a_local(&self) -> Result<i64, Error> {
        let sql = "UPDATE counters SET n = n + 1 WHERE name = 'hits'";
        self.db.prepare(sql).run().await?;
        count_orders(&self.db).await
    }

    /// SQL chosen by an `if` inside `prepare`'s argument.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn bump_unless(&self, read: bool) -> Result<i64, Error> {
        self.db
            .prepare(if read {
                "SELECT 1"
            } else {
                "UPDATE counters SET n = n + 1 WHERE name = 'hits'"
            })
            .run()
            .await?;
        count_orders(&self.db).await
    }
}

/// A write a `read_only` body runs from SQL the attribute could not judge at compile time
/// makes the attempt a write: it is not run again (the read after it is retried on its
/// own), and the counter is bumped once;
/// the same body taking its reading branch is run again.
#[tokio::test(start_paused = true)]
async fn dynamic_sql_that_writes_stops_a_read_only_body_from_running_again() {
    for from_local in [true, false] {
        let db = database();
        count_fails_once_after_running(&db);
        let misuse = Misuse { db: db.clone() };
        let result = if from_local {
            misuse.bump_from_a_local().await
        } else {
            misuse.bump_unless(false).await
        };
        // Not run again: the read after the write is retried on its own.
        assert!(result.is_ok(), "from a local: {from_local}: {result:?}");
        assert_eq!(hits(&db), 1, "from a local: {from_local}");
    }
    let db = database();
    count_fails_once_after_running(&db);
    assert_eq!(
        Misuse { db: db.clone() }.bump_unless(true).await.unwrap(),
        0
    );
    assert_eq!(calls_with(&db, READ_N), 2);
}

/// A statement passed in, run inside `tokio::select!`, whose tokens the attribute does not
/// rewrite (its branches are not expressions): it cannot be observed, so the macro counts
/// as a statement out of sight that may write, as it begins. Before, the held `INSERT`
/// ran again with the body, and the caller got `Ok`.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn selected_then_count(
    db: &D1Database,
    statement: &d1_retry::testing::D1PreparedStatement,
) -> Result<i64, Error> {
    tokio::select! {
        ran = statement.run() => { ran?; }
        () = tokio::time::sleep(core::time::Duration::from_secs(60)) => {}
    }
    count_orders(db).await
}

/// Runs the statement it is handed, as a helper of the user's would.
async fn run_copy(statement: d1_retry::testing::D1PreparedStatement) -> Result<(), Error> {
    statement.run().await.map(drop)
}

/// Runs each statement it is handed, as a helper of the user's would.
async fn run_each(statements: [d1_retry::testing::D1PreparedStatement; 1]) -> Result<(), Error> {
    for statement in statements {
        statement.run().await?;
    }
    Ok(())
}

/// The same, the statement's copy, chosen by `if`, handed by a branch's handler to a
/// function of the user's that runs it.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn selected_copy_then_count(
    db: &D1Database,
    statement: &d1_retry::testing::D1PreparedStatement,
    fresh: bool,
) -> Result<i64, Error> {
    tokio::select! {
        () = core::future::ready(()) => {
            run_copy(if fresh { statement.clone() } else { statement.to_owned() }).await?;
        }
    }
    count_orders(db).await
}

/// The same, the copy handed on in an array.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn selected_array_then_count(
    db: &D1Database,
    statement: &d1_retry::testing::D1PreparedStatement,
) -> Result<i64, Error> {
    tokio::select! {
        () = core::future::ready(()) => run_each([statement.clone()]).await?,
    }
    count_orders(db).await
}

#[tokio::test(start_paused = true)]
async fn a_statement_run_inside_select_stops_a_read_only_body_from_running_again() {
    let db = database();
    count_fails_once_after_running(&db);
    let insert = db.prepare("INSERT INTO orders (item) VALUES ('selected')");
    let result = selected_then_count(&db, &insert).await;
    // Not run again; the read after the write is retried on its own.
    assert_eq!(result.ok(), Some(1));
    assert_eq!(rows(&db, "orders"), 1);
    // The price: a read there stops it too (sent once, not run again).
    let db = database();
    count_fails_once_after_running(&db);
    let read = db.prepare("SELECT 1");
    assert!(selected_then_count(&db, &read).await.is_ok());
    assert_eq!(calls_with(&db, "SELECT 1"), 1);
    // A copy a handler hands on, chosen by `if` or in an array, counts as well.
    for how in 0..3 {
        let db = database();
        count_fails_once_after_running(&db);
        let insert = db.prepare("INSERT INTO orders (item) VALUES ('handed')");
        let result = match how {
            2 => selected_array_then_count(&db, &insert).await,
            _ => selected_copy_then_count(&db, &insert, how == 0).await,
        };
        assert_eq!(result.ok(), Some(1), "how: {how}");
        assert_eq!(rows(&db, "orders"), 1, "how: {how}");
    }
}

/// A statement's future pinned by `pin!` (a macro the attribute does not rewrite) and
/// awaited later: the observation is a statement of its own before the `let`, so the pinned
/// temporary lives as long as it did without the attribute, and a write there stops the
/// body from running again.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn pinned_then_count(
    db: &D1Database,
    statement: &d1_retry::testing::D1PreparedStatement,
) -> Result<i64, Error> {
    let pending = core::pin::pin!(statement.run());
    pending.await?;
    count_orders(db).await
}

#[tokio::test(start_paused = true)]
async fn a_statement_pinned_by_a_macro_compiles_and_stops_a_read_only_body() {
    let db = database();
    count_fails_once_after_running(&db);
    let insert = db.prepare("INSERT INTO orders (item) VALUES ('pinned')");
    let result = pinned_then_count(&db, &insert).await;
    // Not run again; the read after the write is retried on its own.
    assert_eq!(result.ok(), Some(1));
    assert_eq!(rows(&db, "orders"), 1);
}

/// A counter of the user's with an associated function named like D1's `exec`, which takes
/// three arguments where D1's takes two: it is not D1's.
struct Tally(AtomicU32);

impl Tally {
    fn exec(tally: &Tally, _what: &str, by: u32) -> u32 {
        tally.0.fetch_add(by, Ordering::Relaxed) + by
    }
}

/// A repository over several databases, picked by a computed index.
struct Shards {
    dbs: Vec<D1Database>,
    tally: Tally,
}

impl Shards {
    /// A `prepare` on a database the attribute cannot probe where the call stands (an
    /// index that is not a literal): the statement is read where it runs, a read, and the
    /// body is run again as a whole. The `Tally::exec` of three arguments is the user's.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn count_on(&self, shard: usize) -> Result<i64, Error> {
        Tally::exec(&self.tally, "reads", 1);
        let row = self.dbs[shard]
            .prepare(READ_N)
            .first::<crate::harness::Count>(None)
            .await?;
        Ok(crate::harness::n(row) + count_orders(&self.dbs[shard]).await?)
    }
}

/// Neither a `prepare` on a receiver the attribute cannot probe nor a function of the
/// user's named `exec` counts as a write: the reading body is run again after its first
/// read failed after running (its code before the read twice, the read three times in
/// all). Counted as a write, either would keep the body from running again, and the
/// caller would get the read's failure.
#[tokio::test(start_paused = true)]
async fn unprobed_prepares_and_the_user_s_exec_keep_a_read_only_body_retried() {
    let db = database();
    count_fails_once_after_running(&db);
    let shards = Shards {
        dbs: vec![database(), db.clone()],
        tally: Tally(AtomicU32::new(0)),
    };
    assert_eq!(shards.count_on(1).await.unwrap(), 0);
    assert_eq!(shards.tally.0.load(Ordering::Relaxed), 2);
    assert_eq!(calls_with(&db, READ_N), 3);
}

/// Twice its argument: a function of the user's whose parameter type decides the type of
/// what it is handed.
fn double(n: u32) -> u32 {
    n * 2
}

/// A `select!` with an `else` branch and branches whose patterns are names, their futures
/// no statements of D1's (a function's, an `async` block's, a borrowed future): it reads as
/// branches, runs no statement, and the body stays retried.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn selected_ready_then_count(db: &D1Database, effects: &AtomicU32) -> Result<i64, Error> {
    effects.fetch_add(1, Ordering::Relaxed);
    let mut never = core::future::pending::<i64>();
    let picked = tokio::select! {
        biased;
        ready = core::future::ready(1) => ready,
        later = async { 2 } => later,
        never = &mut never => never,
        else => 0,
    };
    Ok(picked + count_orders(db).await?)
}

/// Values handed to the user's functions whose types those functions decide
/// (`"1".parse().unwrap()`, `.expect(..)`, an element taken out by `remove`): no statement
/// copies, they are handed on as written, and the body compiles as it does without the
/// attribute. Observed as a statement's copy, each would not compile.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn inferred_then_count(db: &D1Database, effects: &AtomicU32) -> Result<i64, Error> {
    let mut parsed = Vec::new();
    parsed.push("3".parse().expect("a number"));
    let sum = double("1".parse().unwrap()) + double(parsed.remove(0));
    effects.fetch_add(sum, Ordering::Relaxed);
    count_orders(db).await
}

/// Both bodies run again after their read failed after running: neither the `select!`
/// nor the values of inferred types count as a statement out of sight.
#[tokio::test(start_paused = true)]
async fn selects_and_inferred_values_keep_a_read_only_body_retried() {
    let db = database();
    count_fails_once_after_running(&db);
    let effects = AtomicU32::new(0);
    assert_eq!(selected_ready_then_count(&db, &effects).await.unwrap(), 1);
    assert_eq!(effects.load(Ordering::Relaxed), 2);
    assert_eq!(calls_with(&db, READ_N), 2);

    let db = database();
    count_fails_once_after_running(&db);
    let effects = AtomicU32::new(0);
    assert_eq!(inferred_then_count(&db, &effects).await.unwrap(), 0);
    assert_eq!(effects.load(Ordering::Relaxed), 16);
    assert_eq!(calls_with(&db, READ_N), 2);
}
