//! Statements reached through a field behind a `Deref` of the user's (`self.jobs.stmt`,
//! `jobs` a cursor or a tracking handle). Each attempt evaluates the field again, as the
//! call is written, so the `Deref` runs again and may name another statement by then: the
//! next attempt is then that statement's, judged by its own SQL, never retried under the
//! access of the one the call began on: in the loop an awaited call is written into, and
//! in the runtime's loop of a call's future kept and awaited later or joined, with and
//! without time limits.

use core::cell::Cell;
use core::ops::Deref;
use core::time::Duration;

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, Error, Fault, Message};

use super::harness::{Count, INSERT_ITEM, NO_BUDGET, READ_N, database, n, rows};

struct Slot {
    stmt: D1PreparedStatement,
}

/// Statements in turn: `Deref` gives the current one, and the worker moves on while a call
/// waits to be retried.
struct Cursor {
    slots: Vec<Slot>,
    at: Cell<usize>,
}

impl Deref for Cursor {
    type Target = Slot;

    fn deref(&self) -> &Slot {
        &self.slots[self.at.get()]
    }
}

struct Jobs {
    cursor: Cursor,
}

impl Jobs {
    #[d1_retry(policy = NO_BUDGET)]
    async fn current(&self) -> Result<usize, Error> {
        Ok(self.cursor.stmt.all().await?.rows().len())
    }

    /// The same under time limits: the time-limited loop.
    #[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000)]
    async fn current_timed(&self) -> Result<usize, Error> {
        Ok(self.cursor.stmt.all().await?.rows().len())
    }

    /// The call's future kept, then awaited: the runtime's loop, which makes each attempt
    /// from a closure.
    #[d1_retry(policy = NO_BUDGET)]
    async fn current_kept(&self) -> Result<usize, Error> {
        let rows = self.cursor.stmt.all();
        Ok(rows.await?.rows().len())
    }

    /// The same under time limits.
    #[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000)]
    async fn current_kept_timed(&self) -> Result<usize, Error> {
        let rows = self.cursor.stmt.all();
        Ok(rows.await?.rows().len())
    }

    /// The call's future joined with another: the runtime's loop as well.
    #[d1_retry(policy = NO_BUDGET)]
    async fn current_joined(&self) -> Result<usize, Error> {
        let (rows, ()) = tokio::join!(self.cursor.stmt.all(), tokio::task::yield_now());
        Ok(rows?.rows().len())
    }

    /// Each shape of the call: awaited where made, kept or joined, without and with time
    /// limits.
    async fn shape(&self, shape: usize) -> Result<usize, Error> {
        match shape {
            0 => self.current().await,
            1 => self.current_timed().await,
            2 => self.current_kept().await,
            3 => self.current_kept_timed().await,
            _ => self.current_joined().await,
        }
    }
}

const SHAPES: usize = 5;

/// `Jobs` over a read, then `second`, both already bound.
fn jobs(db: &D1Database, second: D1PreparedStatement) -> Jobs {
    Jobs {
        cursor: Cursor {
            slots: vec![
                Slot {
                    stmt: db.prepare(READ_N),
                },
                Slot { stmt: second },
            ],
            at: Cell::new(0),
        },
    }
}

/// Runs `jobs.shape(shape)`, the cursor moving on 50 ms in, while its first retry waits
/// (the schedule's first wait is at least 160 ms).
async fn current_moving_on(jobs: &Jobs, shape: usize) -> Result<usize, Error> {
    let move_on = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        jobs.cursor.at.set(1);
    };
    tokio::join!(jobs.shape(shape), move_on).0
}

#[tokio::test(start_paused = true)]
async fn a_write_the_field_names_by_the_retry_is_judged_as_a_write() {
    for shape in 0..SHAPES {
        a_write_named_by_the_retry(shape).await;
    }
}

async fn a_write_named_by_the_retry(shape: usize) {
    let db = database();
    let insert = db.prepare(INSERT_ITEM).bind(&["cursor".into()]).unwrap();
    let jobs = jobs(&db, insert);
    // The read fails before it ran, "maybe executed": retried, as a read. By then the
    // field names the INSERT, which fails after it ran.
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .when_sql_contains(READ_N)
            .times(1),
    );
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .when_sql_contains("INSERT")
            .times(1),
    );
    let result = current_moving_on(&jobs, shape).await;
    assert!(result.is_err(), "shape {shape}, {result:?}");
    assert_eq!(
        rows(&db, "orders"),
        1,
        "the INSERT ran once (shape {shape})"
    );
    let inserts = db
        .calls()
        .iter()
        .filter(|call| {
            call.statements
                .iter()
                .any(|(sql, _)| sql.contains("INSERT"))
        })
        .count();
    assert_eq!(inserts, 1, "shape {shape}, {:#?}", db.calls());
}

#[tokio::test(start_paused = true)]
async fn a_read_the_field_names_by_the_retry_is_still_retried() {
    for shape in 0..SHAPES {
        a_read_named_by_the_retry(shape).await;
    }
}

async fn a_read_named_by_the_retry(shape: usize) {
    let db = database();
    let read = db.prepare("SELECT item FROM orders");
    let jobs = jobs(&db, read);
    // Each statement fails once, "maybe executed", after it ran: both are reads, so each
    // failure is retried, the second judged by its own SQL.
    for sql in [READ_N, "SELECT item"] {
        db.add_fault(
            Fault::new(Message::NetworkConnectionLost)
                .after_execution()
                .when_sql_contains(sql)
                .times(1),
        );
    }
    assert_eq!(
        current_moving_on(&jobs, shape).await.ok(),
        Some(0),
        "shape {shape}"
    );
    assert_eq!(db.calls().len(), 3, "shape {shape}, {:#?}", db.calls());
}

/// A handle that counts its uses, as a metrics wrapper would.
struct Tracked {
    slot: Slot,
    derefs: Cell<usize>,
}

impl Deref for Tracked {
    type Target = Slot;

    fn deref(&self) -> &Slot {
        self.derefs.set(self.derefs.get() + 1);
        &self.slot
    }
}

struct Counted {
    tracked: Tracked,
}

impl Counted {
    #[d1_retry(policy = NO_BUDGET)]
    async fn count(&self) -> Result<i64, Error> {
        Ok(n(self.tracked.stmt.first::<Count>(None).await?))
    }
}

/// The field is evaluated once to begin the call (its SQL read, its address kept) and once
/// by each attempt, and before each retry once more, to see whether it still names the
/// same statement.
#[tokio::test(start_paused = true)]
async fn the_field_is_evaluated_to_begin_by_each_attempt_and_before_each_retry() {
    let db = database();
    let counted = Counted {
        tracked: Tracked {
            slot: Slot {
                stmt: db.prepare(READ_N),
            },
            derefs: Cell::new(0),
        },
    };
    assert_eq!(counted.count().await.ok(), Some(0));
    assert_eq!(counted.tracked.derefs.replace(0), 2);
    db.add_fault(Fault::new(Message::NetworkConnectionLost).times(2));
    assert_eq!(counted.count().await.ok(), Some(0));
    assert_eq!(counted.tracked.derefs.get(), 2 + 2 * 2);
}
