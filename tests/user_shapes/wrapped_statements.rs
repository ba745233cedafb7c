//! A `read_only` body running a statement through a type that derefs to D1's statement but
//! is not marked D1's (`D1Receiver` forwards references, `Box`, `Rc`, `Arc` and std's lock
//! guards): a `Pin<Box<_>>`, a `Cow`, a `LazyCell`, tokio's `MutexGuard`, a newtype of the
//! user's, and a statement awaited through `into_future()`; and a typed query of the
//! user's whose awaited `first()` takes no column. Method calls see through
//! `Deref`, so `x.run()` is D1's own `run`; its output, a future of a `Result`, makes it a
//! write out of sight, and the body is not run again after a later failure. Before, each
//! of these ran its `INSERT` twice and the caller got `Ok`.

use core::future::IntoFuture;
use core::ops::Deref;
use std::borrow::Cow;
use std::cell::LazyCell;
use std::pin::Pin;

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, Error};
use test_support::calls_with;

use crate::harness::{NO_BUDGET, count_fails_once_after_running, count_orders, database, rows};

const INSERT: &str = "INSERT INTO orders (item) VALUES ('wrapped')";

/// A repository's own wrapper of a statement.
struct Statement(D1PreparedStatement);

impl Deref for Statement {
    type Target = D1PreparedStatement;
    fn deref(&self) -> &D1PreparedStatement {
        &self.0
    }
}

/// A typed query of the repository's own: its `first` takes no column, and holds no
/// `Deref` to D1's statement, so its call is no D1 call at all.
struct Typed {
    inner: D1PreparedStatement,
}

impl Typed {
    async fn first<T: serde::de::DeserializeOwned>(&self) -> Result<Option<T>, Error> {
        self.inner.first::<T>(None).await
    }
}

#[derive(serde::Deserialize)]
struct Item {
    #[allow(dead_code)]
    item: String,
}

type Lazy = LazyCell<D1PreparedStatement, Box<dyn FnOnce() -> D1PreparedStatement>>;

struct Held {
    db: D1Database,
    pinned: Pin<Box<D1PreparedStatement>>,
    newtype: Statement,
    lazy: Lazy,
    locked: tokio::sync::Mutex<D1PreparedStatement>,
    plain: D1PreparedStatement,
    typed: Typed,
}

impl Held {
    fn new(db: &D1Database, sql: &'static str) -> Held {
        let lazy_db = db.clone();
        Held {
            db: db.clone(),
            pinned: Box::pin(db.prepare(sql)),
            newtype: Statement(db.prepare(sql)),
            lazy: LazyCell::new(Box::new(move || lazy_db.prepare(sql))),
            locked: tokio::sync::Mutex::new(db.prepare(sql)),
            plain: db.prepare(sql),
            typed: Typed {
                inner: db.prepare(sql),
            },
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Through {
    PinBox,
    Newtype,
    Lazy,
    Cow,
    TokioGuard,
    IntoFuture,
    /// D1's function called by its path, the newtype coerced to the statement by `Deref`.
    PathNewtype,
    /// The same with the `Pin<Box<_>>`.
    PathPinBox,
    /// A typed query's `first()`, whose row type is inferred from where it goes.
    TypedFirst,
}

const ALL: [Through; 9] = [
    Through::PinBox,
    Through::Newtype,
    Through::Lazy,
    Through::Cow,
    Through::TokioGuard,
    Through::IntoFuture,
    Through::PathNewtype,
    Through::PathPinBox,
    Through::TypedFirst,
];

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn run_then_count(held: &Held, through: Through) -> Result<i64, Error> {
    match through {
        Through::PinBox => {
            held.pinned.run().await?;
        }
        Through::Newtype => {
            held.newtype.run().await?;
        }
        Through::Lazy => {
            held.lazy.run().await?;
        }
        Through::Cow => {
            let cow: Cow<'_, D1PreparedStatement> = Cow::Borrowed(&held.plain);
            cow.run().await?;
        }
        Through::TokioGuard => {
            let guard = held.locked.lock().await;
            guard.run().await?;
        }
        Through::IntoFuture => {
            held.plain.clone().into_future().await?;
        }
        Through::PathNewtype => {
            D1PreparedStatement::run(&held.newtype).await?;
        }
        Through::PathPinBox => {
            D1PreparedStatement::run(&held.pinned).await?;
        }
        Through::TypedFirst => {
            let _: Option<Item> = held.typed.first().await?;
        }
    }
    count_orders(&held.db).await
}

/// The count after the statement fails once, "maybe executed": a read, so the body would
/// be run again if the statement before it read.
async fn count_fails_once(sql: &'static str, through: Through) -> (Result<i64, Error>, usize, i64) {
    let db = database();
    count_fails_once_after_running(&db);
    let held = Held::new(&db, sql);
    let result = run_then_count(&held, through).await;
    (result, calls_with(&db, "'wrapped'"), rows(&db, "orders"))
}

#[tokio::test(start_paused = true)]
async fn a_write_through_a_wrapper_that_derefs_to_the_statement_is_made_once() {
    for through in ALL {
        let (result, inserts, orders) = count_fails_once(INSERT, through).await;
        assert_eq!((inserts, orders), (1, 1), "{through:?}: {result:?}");
        // Not run again; the read after the write is retried on its own.
        assert_eq!(result.ok(), Some(1), "{through:?}");
    }
}

/// The price, and the control: a read through such a wrapper counts as a write too, so the
/// body is not run again (the caller gets the failure); through `into_future()`, whose
/// receiver is D1's statement, the read is read as one, and the body is run again.
#[tokio::test(start_paused = true)]
async fn a_read_through_such_a_wrapper_costs_the_body_its_retries() {
    const READ: &str = "SELECT 'wrapped' AS item";
    for through in ALL {
        let (result, reads, _) = count_fails_once(READ, through).await;
        // Run again (the read sent twice), or not: the read after it is then retried on
        // its own. The caller has its count either way.
        let sent = match through {
            Through::IntoFuture => 2,
            _ => 1,
        };
        assert_eq!((result.ok(), reads), (Some(0), sent), "{through:?}");
    }
}
