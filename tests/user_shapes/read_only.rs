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
