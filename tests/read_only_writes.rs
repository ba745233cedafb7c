//! A `#[d1_retry(read_only)]` function runs its whole body again, as its author vouched;
//! a write the runtime learns of while an attempt runs voids that: the attempt is not run
//! again, as an attempt that ran dynamic SQL that writes is not.
//!
//! The writes here are ones the body does not show: a nested `#[d1_retry]` function's,
//! which the runtime records as it completes or fails, and a statement the body runs but
//! did not make in sight (passed in, kept in a field, returned by a helper, picked from a
//! `Vec`), which the runtime judges by the SQL it holds as its execution begins. Each
//! function runs on the testing kit's SQLite, with its write failing after it ran, or a
//! later read failing before it ran, on both loops (without and with time limits); the rows
//! show the write ran once, and that a statement out of sight that reads keeps the body
//! retried.

use core::pin::Pin;
use core::sync::atomic::{AtomicU32, Ordering};

use d1_retry::testing::{D1Database, D1PreparedStatement, D1Result, Error, Message, Timing};
use d1_retry::{RetryPolicy, d1_retry};
use test_support::{
    Archive, Logs, calls_with, count, fail_once, join_all, orders_and_audit, orders_with_archive,
};

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();
const INSERT: &str = "INSERT INTO orders";
const READ: &str = "SELECT count(*)";

#[derive(serde::Deserialize)]
struct Count {
    n: i64,
}

/// A repository's write, retried call by call.
#[d1_retry(policy = NO_BUDGET)]
async fn place(db: &D1Database, item: &str) -> Result<(), Error> {
    db.prepare("INSERT INTO orders (item) VALUES (?1)")
        .bind(&[item.into()])?
        .run()
        .await?;
    Ok(())
}

/// A repository's read, retried call by call.
#[d1_retry(policy = NO_BUDGET)]
async fn orders(db: &D1Database) -> Result<i64, Error> {
    let row = db
        .prepare("SELECT count(*) AS n FROM orders")
        .first::<Count>(None)
        .await?;
    Ok(row.map_or(0, |row| row.n))
}

/// Declared `read_only`, but touches a row through `place` before it reads.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn touch_then_count(db: &D1Database) -> Result<i64, Error> {
    place(db, "touched").await?;
    orders(db).await
}

/// The same under time limits: the loop that races each attempt.
#[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
async fn touch_then_count_bounded(db: &D1Database) -> Result<i64, Error> {
    place(db, "touched").await?;
    orders(db).await
}

/// Truly read-only, through a nested read: still retried as a whole.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn count_twice(db: &D1Database) -> Result<i64, Error> {
    let first = orders(db).await?;
    Ok(first + orders(db).await?)
}

/// Declared `idempotent`: its author vouched for the write too, so it runs again.
#[d1_retry(idempotent, policy = NO_BUDGET)]
async fn touch_then_count_idempotent(db: &D1Database) -> Result<i64, Error> {
    place(db, "touched").await?;
    orders(db).await
}

fn failing(fragment: &str, message: Message, timing: Timing) -> D1Database {
    let db = orders_and_audit();
    fail_once(&db, fragment, message, timing);
    db
}

#[tokio::test(start_paused = true)]
async fn a_nested_write_stops_a_read_only_body_from_running_again() {
    for bounded in [false, true] {
        let run = |db: D1Database| async move {
            if bounded {
                touch_then_count_bounded(&db).await
            } else {
                touch_then_count(&db).await
            }
        };
        // The write fails after it ran: running the body again would write again.
        let db = failing(
            INSERT,
            Message::NetworkConnectionLost,
            Timing::AfterExecution,
        );
        assert!(run(db.clone()).await.is_err(), "bounded: {bounded}");
        assert_eq!(calls_with(&db, INSERT), 1, "bounded: {bounded}");
        assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);

        // The write completed, then the read failed before it ran: the body is not run
        // again, and the read, after a write, is retried on its own.
        let db = failing(READ, Message::CannotResolve, Timing::BeforeExecution);
        assert!(run(db.clone()).await.is_ok(), "bounded: {bounded}");
        assert_eq!(calls_with(&db, INSERT), 1, "bounded: {bounded}");
        assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);

        // The write failed before it ran: nothing was written, so the body runs again.
        let db = failing(INSERT, Message::CannotResolve, Timing::BeforeExecution);
        assert_eq!(run(db.clone()).await.unwrap(), 1, "bounded: {bounded}");
        assert_eq!(calls_with(&db, INSERT), 2, "bounded: {bounded}");
    }
}

#[tokio::test(start_paused = true)]
async fn nested_reads_and_vouched_writes_still_run_again() {
    let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
    assert_eq!(count_twice(&db).await.unwrap(), 0);
    assert_eq!(calls_with(&db, READ), 3);

    let db = failing(READ, Message::CannotResolve, Timing::BeforeExecution);
    assert_eq!(touch_then_count_idempotent(&db).await.unwrap(), 2);
    assert_eq!(calls_with(&db, INSERT), 2);
}

/// The shapes in which a `read_only` body runs a statement it did not make in sight.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// A parameter: `stmt.run().await`.
    Passed,
    /// A field of the repository: `self.statement.run().await`.
    Field,
    /// A helper's statement, a value: `made(db)?.run().await`.
    Helper,
    /// Picked from a list, a place behind an index: `statements[0].run().await`.
    Indexed,
    /// Its future made first and awaited later: `let pending = stmt.run(); pending.await`.
    Stored,
    /// In an `async` block awaited in the body.
    InBlock,
    /// Each statement of a list, in a loop.
    Looped,
    /// Beside a read, in `tokio::join!`.
    Joined,
    /// A helper's statement awaited itself beside a read, in `tokio::join!`.
    JoinedHelper,
    /// The same, chosen by `if` beside a copy: `join!(if .. { copy } else { made(..)? }, ..)`.
    JoinedChosen,
    /// An element of an array of futures.
    Element,
    /// In an `async move` block that owns all it holds, as a task's future must.
    Owning,
    /// Through a closure made into a `fn` pointer, which can capture nothing.
    FnPointer,
    /// In an `async move` block a closure returns.
    Closure,
    /// Awaited itself (a statement is `IntoFuture`), as a clone, since awaiting takes it:
    /// `self.statement.clone().await`.
    Awaited,
    /// A helper's statement, awaited itself: `made(db)?.await`.
    AwaitedHelper,
    /// Its execution called by its path: `D1PreparedStatement::run(&self.statement)`.
    ByPath,
    /// Its execution's path handed on as a function:
    /// `join_all(statements.iter().map(D1PreparedStatement::run))`.
    PathMapped,
    /// Awaited itself as a block's value: `{ let kept = ..; kept.clone() }.await`.
    AwaitedBlock,
    /// Awaited itself as a macro's: `statement_of!(self).await`.
    AwaitedMacro,
    /// Bound, and handed to a function of the user's that awaits what it is given:
    /// `awaited(self.statement.clone().bind(&[])?)`.
    HandedBound,
    /// The same, handed as a block's value: `awaited({ let kept = ..; kept.clone() })`.
    HandedBlock,
    /// The same, a copy chosen by `if`: `awaited(if .. { a.clone() } else { .. })`.
    HandedIf,
    /// The same, the other branch a panic: `awaited(if .. { unreachable!() } else {
    /// a.clone() })` (with time limits, `unreachable!();`, a statement).
    HandedIfPanicking,
    /// The same, a copy chosen by `match`.
    HandedMatch,
    /// The same, a copy bound to a name first: `let copy = ..clone(); awaited(copy)`.
    HandedName,
    /// The same, bound and unwrapped: `.bind(&[]).unwrap()`, `.expect(..)`, `.map_err(..)?`.
    HandedUnwrapped,
    /// The same, a block giving a name bound in it to a copy.
    HandedBlockName,
    /// A labelled block giving a copy by `break` or as its value, awaited itself.
    AwaitedLabelled,
    /// The same labelled block as the value of a block awaited itself, the copy given by
    /// its `break`: `{ 'kept: { .. break 'kept copy; .. } }.await`.
    AwaitedLabelledInBlock,
    /// The same labelled block, handed on.
    HandedLabelled,
    /// A copy chosen by `if`, awaited itself (each branch observed in place, with no
    /// warning at its braces).
    AwaitedIf,
    /// A copy chosen by `match`, its other arms leaving the function, handed on.
    HandedDiverging,
    /// A copy a loop gives by a `break` in a `match` arm, handed on.
    HandedLoopMatch,
    /// A copy taken by `.cloned()` from a list's element, handed on.
    HandedCloned,
    /// A copy taken out of an array of copies by `into_iter().next()`, handed on.
    HandedTakenOut,
    /// A copy taken out of a variant written out by `let Some(s) = Some(..) else ..`,
    /// handed on.
    HandedLetSome,
    /// A block giving a name bound in it to a copy, a std macro naming it in between,
    /// handed on.
    HandedBlockAsserted,
    /// A part of a copy bound by `let Some(s) = kept.clone() else ..`, handed on.
    HandedLetElse,
    /// Each element of a list's copy, bound by `for`, handed on.
    HandedForEach,
    /// A copy bound by `if let Some(s) = list.first().cloned()`, handed on.
    HandedIfLet,
    /// A copy bound by a `match` arm: `match stmt.clone().bind(&[]) { Ok(s) => .. }`.
    HandedMatchArm,
    /// Each element of an array of copies, bound to a name, then by `for`, handed on.
    HandedArray,
    /// A copy bound by a tuple's pattern: `let (s, n) = (stmt.clone(), 1)`, handed on.
    HandedTuple,
    /// A tuple's field of a name bound to a tuple of a copy and a literal: `awaited(pair.0)`.
    HandedTupleField,
    /// A struct's field of a name bound to a struct of a copy: `awaited(holder.statement)`.
    HandedStructField,
    /// A copy in a variant, bound again by `if let`: `let kept = Some(stmt.clone())`.
    HandedVariant,
    /// A copy handed on in an `else`, its name bound to something else in the `if let`
    /// before it.
    HandedElse,
    /// A name bound to a block giving a copy: `let s = { ..; kept.clone() }`.
    HandedBoundBlock,
    /// A name bound to an `if` giving a copy in each branch.
    HandedBoundIf,
    /// A copy in a tuple written out as the argument: `run_pair((stmt.clone(), 1))`.
    HandedTupleLiteral,
    /// A copy taken apart from a `&mut` where the tuple is built: `let (s, sink) =
    /// (stmt.clone(), &mut out)`, handed on.
    HandedTakenApart,
    /// The same, the pattern typed: `let (s, sink): (D1PreparedStatement, _) = ..`.
    HandedTakenApartTyped,
    /// The same from an array beside a helper's statement: `let [s, _] = [stmt.clone(),
    /// made(..)?]`.
    HandedTakenApartArray,
    /// The same from a struct beside a constant: `let Holder { statement, note } =
    /// Holder { statement: stmt.clone(), note: NOTE }`.
    HandedTakenApartStruct,
    /// The same from a tuple struct beside a `&mut`: `let Pair(s, sink) =
    /// Pair(stmt.clone(), &mut out)`.
    HandedTakenApartPair,
    /// A copy in a struct written out as the argument: `run_held(Holder { statement:
    /// stmt.clone(), .. })`.
    HandedStructLiteral,
}

/// Runs the statement of the pair it is handed, as a helper of the user's would.
async fn run_pair(pair: (D1PreparedStatement, usize)) -> Result<D1Result, Error> {
    assert_eq!(pair.1, 1);
    pair.0.run().await
}

/// A note a [`Holder`] may keep, named rather than written out.
const NOTE: &str = "kept";

/// A value of the user's holding a statement's copy.
struct Holder {
    statement: D1PreparedStatement,
    note: &'static str,
}

/// A statement's copy beside a sink of the caller's.
struct Pair<'a>(D1PreparedStatement, &'a mut Vec<u8>);

/// Runs the statement of the value it is handed, as a helper of the user's would.
async fn run_held(holder: Holder) -> Result<D1Result, Error> {
    assert_eq!(holder.note, "kept");
    holder.statement.run().await
}

const SHAPES: [Shape; 57] = [
    Shape::Passed,
    Shape::Field,
    Shape::Helper,
    Shape::Indexed,
    Shape::Stored,
    Shape::InBlock,
    Shape::Looped,
    Shape::Joined,
    Shape::JoinedHelper,
    Shape::JoinedChosen,
    Shape::Element,
    Shape::Owning,
    Shape::FnPointer,
    Shape::Closure,
    Shape::Awaited,
    Shape::AwaitedHelper,
    Shape::ByPath,
    Shape::PathMapped,
    Shape::AwaitedBlock,
    Shape::AwaitedMacro,
    Shape::HandedBound,
    Shape::HandedBlock,
    Shape::HandedIf,
    Shape::HandedIfPanicking,
    Shape::HandedMatch,
    Shape::HandedName,
    Shape::HandedUnwrapped,
    Shape::HandedBlockName,
    Shape::AwaitedLabelled,
    Shape::AwaitedLabelledInBlock,
    Shape::HandedLabelled,
    Shape::AwaitedIf,
    Shape::HandedDiverging,
    Shape::HandedLoopMatch,
    Shape::HandedCloned,
    Shape::HandedTakenOut,
    Shape::HandedLetSome,
    Shape::HandedBlockAsserted,
    Shape::HandedLetElse,
    Shape::HandedForEach,
    Shape::HandedIfLet,
    Shape::HandedMatchArm,
    Shape::HandedArray,
    Shape::HandedTuple,
    Shape::HandedTupleField,
    Shape::HandedStructField,
    Shape::HandedVariant,
    Shape::HandedElse,
    Shape::HandedBoundBlock,
    Shape::HandedBoundIf,
    Shape::HandedTupleLiteral,
    Shape::HandedTakenApart,
    Shape::HandedTakenApartTyped,
    Shape::HandedTakenApartArray,
    Shape::HandedTakenApartStruct,
    Shape::HandedTakenApartPair,
    Shape::HandedStructLiteral,
];

/// An error of the caller's, for `map_err`.
fn converted(error: Error) -> Error {
    error
}

/// A statement the macro's caller keeps: what the attribute sees is the macro's call.
macro_rules! statement_of {
    ($kept:expr) => {
        $kept.statement.clone()
    };
}

/// Awaits what it is handed, as `tokio::time::timeout` or a metrics wrapper of the user's
/// would: a statement handed to it runs there.
async fn awaited<F: IntoFuture>(future: F) -> F::Output {
    future.await
}

/// What a statement's `run` returns, boxed, for a `fn` pointer to name.
type Running<'s> = Pin<Box<dyn Future<Output = Result<D1Result, Error>> + 's>>;

/// A repository that keeps a prepared statement, as a Worker that prepares once may.
struct Kept {
    db: D1Database,
    statement: D1PreparedStatement,
}

/// A helper that makes a statement out of the function's sight.
fn made(db: &D1Database, sql: &str) -> Result<D1PreparedStatement, Error> {
    db.prepare(sql).bind(&[])
}

impl Kept {
    /// Declared `read_only`; runs `self.statement` (a write or a read, as the test made
    /// it), in `shape`, before the nested read `orders`.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn run_then_count(&self, shape: Shape, sql: &str) -> Result<i64, Error> {
        let stmt = &self.statement;
        match shape {
            Shape::Passed => {
                stmt.run().await?;
            }
            Shape::Field => {
                self.statement.run().await?;
            }
            Shape::Helper => {
                made(&self.db, sql)?.run().await?;
            }
            Shape::Indexed => {
                let statements = [self.statement.clone()];
                statements[0].run().await?;
            }
            Shape::Stored => {
                let pending = stmt.run();
                pending.await?;
            }
            Shape::InBlock => {
                async { stmt.run().await }.await?;
            }
            Shape::Looped => {
                for statement in [&self.statement] {
                    statement.run().await?;
                }
            }
            Shape::Joined => {
                let read = self.db.prepare("SELECT 2");
                let (ran, _) = tokio::join!(stmt.run(), read.run());
                ran?;
            }
            Shape::JoinedHelper => {
                let read = self.db.prepare("SELECT 2");
                let (ran, _) = tokio::join!(made(&self.db, sql)?, read.run());
                ran?;
            }
            Shape::JoinedChosen => {
                let read = self.db.prepare("SELECT 2");
                let (ran, _) = tokio::join!(
                    if sql.is_empty() {
                        self.statement.clone()
                    } else {
                        made(&self.db, sql)?
                    },
                    read.run()
                );
                ran?;
            }
            Shape::Element => {
                let [pending] = [stmt.run()];
                pending.await?;
            }
            Shape::Owning => {
                let owned = stmt.clone();
                owning(async move { owned.run().await }).await?;
            }
            Shape::FnPointer => {
                let run: for<'s> fn(&'s D1PreparedStatement) -> Running<'s> =
                    |statement| Box::pin(statement.run());
                run(stmt).await?;
            }
            Shape::Closure => {
                let run = |statement: D1PreparedStatement| async move { statement.run().await };
                run(stmt.clone()).await?;
            }
            Shape::Awaited => {
                self.statement.clone().await?;
            }
            Shape::AwaitedHelper => {
                made(&self.db, sql)?.await?;
            }
            Shape::ByPath => {
                D1PreparedStatement::run(&self.statement).await?;
            }
            Shape::PathMapped => {
                let statements = [self.statement.clone()];
                for ran in join_all(statements.iter().map(D1PreparedStatement::run)).await {
                    ran?;
                }
            }
            Shape::AwaitedBlock => {
                {
                    let kept = &self.statement;
                    kept.clone()
                }
                .await?;
            }
            Shape::AwaitedMacro => {
                statement_of!(self).await?;
            }
            Shape::HandedBound => {
                awaited(self.statement.clone().bind(&[])?).await?;
            }
            Shape::HandedIf => {
                awaited(if sql.is_empty() {
                    self.statement.to_owned()
                } else {
                    self.statement.clone()
                })
                .await?;
            }
            Shape::HandedIfPanicking => {
                awaited(if sql.is_empty() {
                    unreachable!("the test hands the function its SQL")
                } else {
                    self.statement.clone()
                })
                .await?;
            }
            Shape::HandedMatch => {
                awaited(match shape {
                    Shape::HandedMatch => self.statement.clone(),
                    _ => Clone::clone(&self.statement),
                })
                .await?;
            }
            Shape::HandedName => {
                let copy = self.statement.clone();
                awaited(copy).await?;
            }
            Shape::HandedUnwrapped => {
                match sql.len() % 3 {
                    0 => awaited(self.statement.clone().bind(&[]).unwrap()).await?,
                    1 => awaited(self.statement.clone().bind(&[]).expect("bound")).await?,
                    _ => awaited(self.statement.clone().bind(&[]).map_err(converted)?).await?,
                };
            }
            Shape::HandedBlockName => {
                awaited({
                    let bound = self.statement.clone().bind(&[])?;
                    let _ = sql.len();
                    bound
                })
                .await?;
            }
            Shape::AwaitedLabelled => {
                ('kept: {
                    if sql.is_empty() {
                        break 'kept self.statement.to_owned();
                    }
                    self.statement.clone()
                })
                .await?;
            }
            Shape::AwaitedLabelledInBlock => {
                {
                    'kept: {
                        if !sql.is_empty() {
                            break 'kept self.statement.to_owned();
                        }
                        self.statement.clone()
                    }
                }
                .await?;
            }
            Shape::HandedLabelled => {
                awaited('kept: {
                    if !sql.is_empty() {
                        break 'kept self.statement.to_owned();
                    }
                    self.statement.clone()
                })
                .await?;
            }
            Shape::HandedLoopMatch => {
                awaited(loop {
                    match sql.len() {
                        0 => continue,
                        _ => break self.statement.clone(),
                    }
                })
                .await?;
            }
            Shape::HandedTakenOut => {
                let taken = [self.statement.clone()].into_iter().next();
                awaited(taken.expect("one copy")).await?;
            }
            Shape::HandedLetSome => {
                let Some(wrapped) = Some(self.statement.clone()) else {
                    return Ok(-1);
                };
                awaited(wrapped).await?;
            }
            Shape::HandedBlockAsserted => {
                awaited({
                    let copy = self.statement.clone();
                    assert!(core::mem::size_of_val(&copy) > 0);
                    copy
                })
                .await?;
            }
            Shape::HandedDiverging => {
                awaited(match sql.len() {
                    0 => return Ok(-1),
                    1 => Err(Error::from("no SQL"))?,
                    _ => self.statement.clone(),
                })
                .await?;
            }
            Shape::HandedCloned => {
                let statements = [self.statement.clone()];
                awaited(statements.first().cloned().unwrap()).await?;
            }
            Shape::HandedLetElse => {
                let kept: Option<D1PreparedStatement> = self.statement.clone().into();
                let Some(found) = kept.clone() else {
                    return Ok(-1);
                };
                awaited(found).await?;
            }
            Shape::HandedForEach => {
                let statements = [self.statement.clone()];
                for each in statements.clone() {
                    awaited(each).await?;
                }
            }
            Shape::HandedIfLet => {
                let statements = [self.statement.clone()];
                if let Some(first) = statements.first().cloned() {
                    awaited(first).await?;
                }
            }
            Shape::HandedElse => {
                let copy = self.statement.clone();
                if let Some(copy) = sql.strip_prefix("never") {
                    assert!(copy.is_empty());
                } else {
                    awaited(copy).await?;
                }
            }
            Shape::HandedBoundBlock => {
                let bound = {
                    let kept = &self.statement;
                    kept.clone()
                };
                awaited(bound).await?;
            }
            Shape::HandedBoundIf => {
                let bound = if sql.is_empty() {
                    self.statement.to_owned()
                } else {
                    self.statement.clone()
                };
                awaited(bound).await?;
            }
            Shape::HandedTupleLiteral => {
                run_pair((self.statement.clone(), 1)).await?;
            }
            Shape::HandedTakenApart => {
                let mut out = Vec::new();
                let (copy, sink) = (self.statement.clone(), &mut out);
                push_to(sink);
                awaited(copy).await?;
                assert_eq!(out, [1]);
            }
            Shape::HandedTakenApartTyped => {
                let mut out = Vec::new();
                let (copy, sink): (D1PreparedStatement, &mut Vec<u8>) =
                    (self.statement.clone(), &mut out);
                push_to(sink);
                awaited(copy).await?;
                assert_eq!(out, [1]);
            }
            Shape::HandedTakenApartArray => {
                let [copy, other] = [self.statement.clone(), made(&self.db, "SELECT 3")?];
                awaited(copy).await?;
                drop(other);
            }
            Shape::HandedTakenApartStruct => {
                let Holder { statement, note } = Holder {
                    statement: self.statement.clone(),
                    note: NOTE,
                };
                awaited(statement).await?;
                assert_eq!(note, NOTE);
            }
            Shape::HandedTakenApartPair => {
                let mut out = Vec::new();
                let Pair(statement, sink) = Pair(self.statement.clone(), &mut out);
                push_to(sink);
                awaited(statement).await?;
                assert_eq!(out, [1]);
            }
            Shape::HandedStructLiteral => {
                run_held(Holder {
                    statement: self.statement.clone(),
                    note: "kept",
                })
                .await?;
            }
            Shape::HandedMatchArm => match self.statement.clone().bind(&[]) {
                Ok(bound) => {
                    awaited(bound).await?;
                }
                Err(error) => return Err(error),
            },
            Shape::HandedArray => {
                let statements = [self.statement.clone()];
                for each in statements {
                    awaited(each).await?;
                }
            }
            Shape::HandedTuple => {
                let (copy, n) = (self.statement.clone(), 1);
                awaited(copy).await?;
                assert_eq!(n, 1);
            }
            Shape::HandedTupleField => {
                let pair = (self.statement.clone(), "kept");
                awaited(pair.0).await?;
                assert_eq!(pair.1, "kept");
            }
            Shape::HandedStructField => {
                let holder = Holder {
                    statement: self.statement.clone(),
                    note: "kept",
                };
                awaited(holder.statement).await?;
                assert_eq!(holder.note, "kept");
            }
            Shape::HandedVariant => {
                let kept = Some(self.statement.clone());
                if let Some(found) = kept {
                    awaited(found).await?;
                }
            }
            Shape::AwaitedIf => {
                (if sql.is_empty() {
                    self.statement.to_owned()
                } else {
                    self.statement.clone().bind(&[])?
                })
                .await?;
            }
            Shape::HandedBlock => {
                awaited({
                    let kept = &self.statement;
                    kept.clone()
                })
                .await?;
            }
        }
        orders(&self.db).await
    }

    /// The same under time limits.
    #[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn run_then_count_bounded(&self, shape: Shape, sql: &str) -> Result<i64, Error> {
        match shape {
            Shape::Passed
            | Shape::Stored
            | Shape::InBlock
            | Shape::Looped
            | Shape::Joined
            | Shape::Element => {
                let stmt = &self.statement;
                stmt.run().await?;
            }
            Shape::Owning | Shape::Closure => {
                let owned = self.statement.clone();
                owning(async move { owned.run().await }).await?;
            }
            Shape::FnPointer => {
                let run: for<'s> fn(&'s D1PreparedStatement) -> Running<'s> =
                    |statement| Box::pin(statement.run());
                run(&self.statement).await?;
            }
            Shape::Field | Shape::Indexed => {
                self.statement.run().await?;
            }
            Shape::Helper => {
                made(&self.db, sql)?.run().await?;
            }
            Shape::Awaited => {
                let stmt = &self.statement;
                stmt.clone().await?;
            }
            Shape::AwaitedHelper => {
                made(&self.db, sql)?.await?;
            }
            Shape::JoinedHelper => {
                let read = self.db.prepare("SELECT 2");
                let (ran, _) = tokio::join!(made(&self.db, sql)?, read.run());
                ran?;
            }
            Shape::JoinedChosen => {
                let read = self.db.prepare("SELECT 2");
                let (ran, _) = tokio::join!(
                    if sql.is_empty() {
                        self.statement.clone()
                    } else {
                        made(&self.db, sql)?
                    },
                    read.run()
                );
                ran?;
            }
            Shape::ByPath => {
                <D1PreparedStatement>::run(&self.statement).await?;
            }
            Shape::PathMapped => {
                let statements = [self.statement.clone()];
                let run = D1PreparedStatement::run;
                for ran in join_all(statements.iter().map(run)).await {
                    ran?;
                }
            }
            Shape::AwaitedBlock => {
                {
                    let kept = &self.statement;
                    kept.clone()
                }
                .await?;
            }
            Shape::HandedBlock => {
                awaited({
                    let kept = &self.statement;
                    kept.clone()
                })
                .await?;
            }
            Shape::AwaitedMacro => {
                statement_of!(self).await?;
            }
            Shape::HandedName | Shape::HandedBlockName => {
                let copy = self.statement.to_owned();
                awaited(copy).await?;
            }
            Shape::HandedLetElse => {
                let kept: Option<D1PreparedStatement> = self.statement.clone().into();
                let Some(found) = kept.clone() else {
                    return Ok(-1);
                };
                awaited(found).await?;
            }
            Shape::HandedForEach => {
                let statements = [self.statement.clone()];
                for each in statements.clone() {
                    awaited(each).await?;
                }
            }
            Shape::HandedIfLet => {
                let statements = [self.statement.clone()];
                if let Some(first) = statements.first().cloned() {
                    awaited(first).await?;
                }
            }
            Shape::HandedElse => {
                let copy = self.statement.clone();
                if let Some(copy) = sql.strip_prefix("never") {
                    assert!(copy.is_empty());
                } else {
                    awaited(copy).await?;
                }
            }
            Shape::HandedBoundBlock => {
                let bound = {
                    let kept = &self.statement;
                    kept.clone()
                };
                awaited(bound).await?;
            }
            Shape::HandedBoundIf => {
                let bound = if sql.is_empty() {
                    self.statement.to_owned()
                } else {
                    self.statement.clone()
                };
                awaited(bound).await?;
            }
            Shape::HandedTupleLiteral => {
                run_pair((self.statement.clone(), 1)).await?;
            }
            Shape::HandedTakenApart => {
                let mut out = Vec::new();
                let (copy, sink) = (self.statement.clone(), &mut out);
                push_to(sink);
                awaited(copy).await?;
                assert_eq!(out, [1]);
            }
            Shape::HandedTakenApartTyped => {
                let mut out = Vec::new();
                let (copy, sink): (D1PreparedStatement, &mut Vec<u8>) =
                    (self.statement.clone(), &mut out);
                push_to(sink);
                awaited(copy).await?;
                assert_eq!(out, [1]);
            }
            Shape::HandedTakenApartArray => {
                let [copy, other] = [self.statement.clone(), made(&self.db, "SELECT 3")?];
                awaited(copy).await?;
                drop(other);
            }
            Shape::HandedTakenApartStruct => {
                let Holder { statement, note } = Holder {
                    statement: self.statement.clone(),
                    note: NOTE,
                };
                awaited(statement).await?;
                assert_eq!(note, NOTE);
            }
            Shape::HandedTakenApartPair => {
                let mut out = Vec::new();
                let Pair(statement, sink) = Pair(self.statement.clone(), &mut out);
                push_to(sink);
                awaited(statement).await?;
                assert_eq!(out, [1]);
            }
            Shape::HandedStructLiteral => {
                run_held(Holder {
                    statement: self.statement.clone(),
                    note: "kept",
                })
                .await?;
            }
            Shape::HandedMatchArm => match self.statement.clone().bind(&[]) {
                Ok(bound) => {
                    awaited(bound).await?;
                }
                Err(error) => return Err(error),
            },
            Shape::HandedArray => {
                let statements = [self.statement.clone()];
                for each in statements {
                    awaited(each).await?;
                }
            }
            Shape::HandedTuple => {
                let (copy, n) = (self.statement.clone(), 1);
                awaited(copy).await?;
                assert_eq!(n, 1);
            }
            Shape::HandedTupleField => {
                let pair = (self.statement.clone(), "kept");
                awaited(pair.0).await?;
                assert_eq!(pair.1, "kept");
            }
            Shape::HandedStructField => {
                let holder = Holder {
                    statement: self.statement.clone(),
                    note: "kept",
                };
                awaited(holder.statement).await?;
                assert_eq!(holder.note, "kept");
            }
            Shape::HandedVariant => {
                let kept = Some(self.statement.clone());
                if let Some(found) = kept {
                    awaited(found).await?;
                }
            }
            Shape::HandedUnwrapped => {
                awaited(self.statement.clone().bind(&[]).unwrap()).await?;
            }
            Shape::AwaitedLabelled
            | Shape::AwaitedLabelledInBlock
            | Shape::HandedLabelled
            | Shape::AwaitedIf
            | Shape::HandedDiverging
            | Shape::HandedLoopMatch
            | Shape::HandedCloned
            | Shape::HandedTakenOut
            | Shape::HandedLetSome
            | Shape::HandedBlockAsserted => {
                awaited('kept: {
                    if !sql.is_empty() {
                        break 'kept self.statement.to_owned();
                    }
                    self.statement.clone()
                })
                .await?;
            }
            Shape::HandedIfPanicking => {
                awaited(if sql.is_empty() {
                    unreachable!("the test hands the function its SQL");
                } else {
                    self.statement.clone()
                })
                .await?;
            }
            Shape::HandedBound | Shape::HandedIf | Shape::HandedMatch => {
                let kept = &self.statement;
                awaited(if sql.is_empty() {
                    kept.to_owned()
                } else {
                    kept.clone().bind(&[])?
                })
                .await?;
            }
        }
        orders(&self.db).await
    }
}

fn kept(db: &D1Database, sql: &str) -> Kept {
    Kept {
        db: db.clone(),
        statement: db.prepare(sql),
    }
}

#[tokio::test(start_paused = true)]
async fn a_write_made_out_of_sight_stops_a_read_only_body_from_running_again() {
    const WRITE: &str = "INSERT INTO orders (item) VALUES ('kept')";
    for bounded in [false, true] {
        for shape in SHAPES {
            let run = |kept: Kept| async move {
                if bounded {
                    kept.run_then_count_bounded(shape, WRITE).await
                } else {
                    kept.run_then_count(shape, WRITE).await
                }
            };
            // The write completed, then the read failed after it ran: the body would run
            // the write again. It is not, and the read is retried on its own.
            let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
            let (logs, guard) = Logs::capture();
            assert!(
                run(kept(&db, WRITE)).await.is_ok(),
                "{shape:?}, bounded: {bounded}"
            );
            drop(guard);
            assert_eq!(calls_with(&db, INSERT), 1, "{shape:?}, bounded: {bounded}");
            assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);
            // Wherever the statement ran (in the body, a block, a closure), the misuse is
            // logged at error level under the function's name.
            let function = if bounded {
                "Kept::run_then_count_bounded"
            } else {
                "Kept::run_then_count"
            };
            assert!(
                logs.lines().iter().any(|line| line.contains("ERROR")
                    && line.contains(&format!("d1.operation={function} "))
                    && line.contains("ran SQL that may write")
                    && line.contains("SQL out of sight")),
                "{shape:?}, bounded: {bounded}:\n{}",
                logs.text()
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_read_made_out_of_sight_keeps_a_read_only_body_retried() {
    const OTHER_READ: &str = "SELECT 1 AS n";
    for bounded in [false, true] {
        for shape in SHAPES {
            let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
            let kept = kept(&db, OTHER_READ);
            let counted = if bounded {
                kept.run_then_count_bounded(shape, OTHER_READ).await
            } else {
                kept.run_then_count(shape, OTHER_READ).await
            };
            assert_eq!(counted.unwrap(), 0, "{shape:?}, bounded: {bounded}");
            assert_eq!(calls_with(&db, READ), 2, "{shape:?}, bounded: {bounded}");
            assert_eq!(
                calls_with(&db, OTHER_READ),
                2,
                "{shape:?}, bounded: {bounded}"
            );
        }
    }
}

/// A generic repository's way to run its statements.
trait Runs {
    async fn run(&self) -> Result<(), Error>;
}

impl Runs for D1PreparedStatement {
    async fn run(&self) -> Result<(), Error> {
        D1PreparedStatement::run(self).await.map(drop)
    }
}

/// A generic repository's `read_only` method: its statement's type is a parameter, so
/// only the bound tells that it is D1's; the SQL it holds is read all the same.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn generic_run_then_count<S: d1_retry::D1Receiver + Runs>(
    db: &D1Database,
    stmt: &S,
) -> Result<i64, Error> {
    stmt.run().await?;
    orders(db).await
}

#[tokio::test(start_paused = true)]
async fn a_generic_statement_is_read_as_what_it_holds() {
    let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
    let write = db.prepare("INSERT INTO orders (item) VALUES ('generic')");
    // Not run again; the read after the write is retried on its own.
    assert!(generic_run_then_count(&db, &write).await.is_ok());
    assert_eq!(calls_with(&db, INSERT), 1);

    let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
    let read = db.prepare("SELECT 3");
    assert_eq!(generic_run_then_count(&db, &read).await.unwrap(), 0);
    assert_eq!(calls_with(&db, READ), 2);
    assert_eq!(calls_with(&db, "SELECT 3"), 2);
}

/// Hands back a future that must own all it holds, as a spawned task must.
fn owning<F: Future + 'static>(future: F) -> F {
    future
}

/// A `read_only` body that reads in an `async move` block which must be `'static` (a task
/// it would spawn): the block cannot borrow the attempt, so it counts what it runs on the
/// thread, and the function compiles as written; a read keeps the body retried.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn count_in_an_owning_block(held: &D1PreparedStatement) -> Result<i64, Error> {
    let stmt = held.clone();
    let row = owning(async move { stmt.first::<Count>(None).await }).await?;
    Ok(row.map_or(0, |row| row.n))
}

#[tokio::test(start_paused = true)]
async fn a_block_that_must_own_what_it_holds_still_compiles_and_runs() {
    let db = failing(READ, Message::CannotResolve, Timing::BeforeExecution);
    let held = db.prepare("SELECT count(*) AS n FROM orders");
    assert_eq!(count_in_an_owning_block(&held).await.unwrap(), 0);
    assert_eq!(calls_with(&db, READ), 2);
}

/// A `read_only` body that runs a batch of `sql` whose list it did not write out: collected
/// by an iterator, or passed in (and run by the method, or by its path).
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn batch_then_count(
    db: &D1Database,
    passed: Option<&[D1PreparedStatement]>,
    sql: &str,
    by_path: bool,
) -> Result<i64, Error> {
    match passed {
        Some(list) if by_path => D1Database::batch(db, list.to_vec()).await?,
        Some(list) => db.batch(list.to_vec()).await?,
        None => {
            db.batch(
                ["a", "b"]
                    .iter()
                    .map(|item| db.prepare(sql).bind(&[(*item).into()]))
                    .collect::<Result<Vec<_>, _>>()?,
            )
            .await?
        }
    };
    orders(db).await
}

#[tokio::test(start_paused = true)]
async fn a_batch_out_of_sight_is_read_as_what_its_statements_hold() {
    const BATCH_INSERT: &str = "INSERT INTO orders (item) VALUES (?1)";
    const BATCH_READ: &str = "SELECT ?1 AS n";
    for (passed, by_path) in [(false, false), (true, false), (true, true)] {
        let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
        let list = [db.prepare("INSERT INTO orders (item) VALUES ('passed')")];
        let list = passed.then_some(&list[..]);
        // Not run again; the read after the write is retried on its own.
        assert!(
            batch_then_count(&db, list, BATCH_INSERT, by_path)
                .await
                .is_ok()
        );
        assert_eq!(
            calls_with(&db, INSERT),
            1,
            "passed: {passed}, path: {by_path}"
        );

        let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
        let list = [db.prepare("SELECT 4")];
        let list = passed.then_some(&list[..]);
        assert_eq!(
            batch_then_count(&db, list, BATCH_READ, by_path)
                .await
                .unwrap(),
            0
        );
        assert_eq!(
            calls_with(&db, READ),
            2,
            "passed: {passed}, path: {by_path}"
        );
    }
}

/// A `read_only` body that runs a batch of a list it was handed in an `async move` block
/// that owns all it holds, as a task's future must.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn batch_in_an_owning_block(
    db: &D1Database,
    list: &[D1PreparedStatement],
) -> Result<i64, Error> {
    let (owned, list) = (db.clone(), list.to_vec());
    owning(async move { owned.batch(list).await }).await?;
    orders(db).await
}

#[tokio::test(start_paused = true)]
async fn a_batch_in_an_owning_block_is_read_as_what_its_statements_hold() {
    let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
    let list = [db.prepare("INSERT INTO orders (item) VALUES ('owned')")];
    // Not run again; the read after the write is retried on its own.
    assert!(batch_in_an_owning_block(&db, &list).await.is_ok());
    assert_eq!(calls_with(&db, INSERT), 1);
    assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);

    let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
    let list = [db.prepare("SELECT 5")];
    assert_eq!(batch_in_an_owning_block(&db, &list).await.unwrap(), 0);
    assert_eq!(calls_with(&db, READ), 2);
    assert_eq!(calls_with(&db, "SELECT 5"), 2);
}

/// What a closure made into a `fn` pointer hands back for `exec`.
type Executing = Pin<Box<dyn Future<Output = Result<(), Error>>>>;

/// A `read_only` body that runs dynamic SQL where it cannot borrow its attempt: handed to
/// `prepare` in an `async move` block that owns all it holds, or to `exec` through a
/// closure made into a `fn` pointer.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn dynamic_beyond_the_attempt(db: &D1Database, sql: &str, exec: bool) -> Result<i64, Error> {
    if exec {
        let run: fn(&D1Database, &str) -> Executing = |db, sql| {
            let (db, sql) = (db.clone(), sql.to_owned());
            Box::pin(async move { db.exec(&sql).await.map(drop) })
        };
        run(db, sql).await?;
    } else {
        let (owned, sql) = (db.clone(), sql.to_owned());
        owning(async move { owned.prepare(&sql).run().await }).await?;
    }
    orders(db).await
}

#[tokio::test(start_paused = true)]
async fn dynamic_sql_beyond_the_attempt_is_judged_as_it_runs() {
    for exec in [false, true] {
        let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
        let write = "INSERT INTO orders (item) VALUES ('dynamic')";
        let (logs, guard) = Logs::capture();
        // Not run again; the read after the write is retried on its own.
        assert!(dynamic_beyond_the_attempt(&db, write, exec).await.is_ok());
        drop(guard);
        // Logged as the attempt's record logs it: the function's name and the SQL.
        assert!(
            logs.lines().iter().any(|line| line.contains("ERROR")
                && line.contains("d1.operation=dynamic_beyond_the_attempt ")
                && line.contains(write)),
            "exec: {exec}:\n{}",
            logs.text()
        );
        assert_eq!(calls_with(&db, INSERT), 1, "exec: {exec}");
        assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);

        let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
        let read = "SELECT 6";
        assert_eq!(
            dynamic_beyond_the_attempt(&db, read, exec).await.unwrap(),
            0
        );
        assert_eq!(calls_with(&db, read), 2, "exec: {exec}");
    }
}

/// A repository with a statement builder of its own next to D1's database.
struct Archiving {
    db: D1Database,
    archive: Archive,
}

impl Archiving {
    /// Declared `read_only`; runs a statement made by `prepare` from a text that reads:
    /// D1's own (`archive == false`), or the builder's, which makes it an `INSERT` that
    /// archives what the text selects. Then the nested read `orders`.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn select_then_count(&self, archive: bool, bound: bool) -> Result<i64, Error> {
        if archive && bound {
            let statement = self.archive.prepare("SELECT item FROM orders");
            statement.run().await?;
        } else if archive {
            self.archive
                .prepare("SELECT item FROM orders")
                .run()
                .await?;
        } else {
            self.db.prepare("SELECT item FROM orders").run().await?;
        }
        orders(&self.db).await
    }

    /// The same under time limits, the builder reached as a value (`self.archive()`).
    #[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn select_then_count_bounded(&self, archive: bool, bound: bool) -> Result<i64, Error> {
        if archive && bound {
            let statement = self.archive().prepare("SELECT item FROM orders");
            statement.run().await?;
        } else if archive {
            self.archive()
                .prepare("SELECT item FROM orders")
                .run()
                .await?;
        } else {
            self.db.prepare("SELECT item FROM orders").run().await?;
        }
        orders(&self.db).await
    }

    fn archive(&self) -> Archive {
        self.archive.clone()
    }
}

#[tokio::test(start_paused = true)]
async fn a_prepare_that_is_not_d1_s_stops_a_read_only_body_from_running_again() {
    for (bounded, bound) in [(false, false), (false, true), (true, false), (true, true)] {
        let db = orders_with_archive();
        fail_once(
            &db,
            READ,
            Message::NetworkConnectionLost,
            Timing::AfterExecution,
        );
        let repo = Archiving {
            db: db.clone(),
            archive: Archive { db: db.clone() },
        };
        let (logs, guard) = Logs::capture();
        let archived = if bounded {
            repo.select_then_count_bounded(true, bound).await
        } else {
            repo.select_then_count(true, bound).await
        };
        drop(guard);
        // The builder's `INSERT` ran, then the read failed after it ran: running the body
        // again would archive the orders twice. It is not, and the read is retried on its
        // own.
        assert!(archived.is_ok(), "bounded: {bounded}, bound: {bound}");
        assert_eq!(
            count(&db, "SELECT count(*) FROM archive"),
            1,
            "bounded: {bounded}, bound: {bound}"
        );
        assert!(
            logs.lines()
                .iter()
                .any(|line| line.contains("ERROR") && line.contains("ran SQL that may write")),
            "bounded: {bounded}, bound: {bound}:\n{}",
            logs.text()
        );

        // D1's own `prepare` of the same text reads: the body is run again.
        let db = orders_with_archive();
        fail_once(
            &db,
            READ,
            Message::NetworkConnectionLost,
            Timing::AfterExecution,
        );
        let repo = Archiving {
            db: db.clone(),
            archive: Archive { db: db.clone() },
        };
        let counted = if bounded {
            repo.select_then_count_bounded(false, bound).await
        } else {
            repo.select_then_count(false, bound).await
        };
        assert_eq!(counted.unwrap(), 1, "bounded: {bounded}, bound: {bound}");
        assert_eq!(
            calls_with(&db, READ),
            2,
            "bounded: {bounded}, bound: {bound}"
        );
    }
}

/// A query builder of the user's whose `bind` returns `&mut Self`, bound to a name and
/// handed to a function twice: the name is a `&mut` each call reborrows, not a statement's
/// copy, and the body still compiles (E0382 when it was moved through an observation).
struct Builder {
    args: Vec<i64>,
}

impl Builder {
    fn bind(&mut self, value: i64) -> &mut Self {
        self.args.push(value);
        self
    }
}

fn arg_count(builder: &mut Builder) -> usize {
    builder.args.len()
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn bound_twice_then_count(db: &D1Database, builder: &mut Builder) -> Result<i64, Error> {
    let bound = builder.bind(3);
    let first = arg_count(bound);
    let again = arg_count(bound);
    Ok(orders(db).await? + (first + again) as i64)
}

#[tokio::test(start_paused = true)]
async fn a_builder_s_mut_bind_bound_to_a_name_is_reborrowed() {
    let db = failing(READ, Message::CannotResolve, Timing::BeforeExecution);
    let mut builder = Builder { args: Vec::new() };
    assert_eq!(bound_twice_then_count(&db, &mut builder).await.unwrap(), 4);
    assert_eq!(builder.args, [3, 3], "the body ran again");
}

/// A query builder of the user's whose one-argument `bind` is generic in its output, which
/// the call it is handed to decides: not a statement bound (no `?`), and it compiles.
struct Query;

impl Query {
    fn bind<T: From<u8>>(&self, value: u8) -> T {
        T::from(value)
    }
}

fn takes_u32(value: u32) -> i64 {
    i64::from(value)
}

fn takes_display(value: Box<dyn core::fmt::Display>) -> i64 {
    value.to_string().len() as i64
}

/// A labelled block whose `break` and value have two types that the argument coerces to
/// one (`Box<dyn Display>`): observed where each is given, the coercion still applies.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn coerced_then_count(db: &D1Database, query: &Query, wide: bool) -> Result<i64, Error> {
    let number = Box::new(7_i32);
    let text = Box::new(String::from("seven"));
    let shown = takes_display('shown: {
        if wide {
            break 'shown number.clone();
        }
        text.clone()
    });
    Ok(orders(db).await? + takes_u32(query.bind(3)) + shown)
}

/// A copy in one branch beside a value of another type that the argument coerces to one
/// (`Box<dyn Display>`): only the copy is observed, where its branch gives it, and the other
/// branch keeps the argument's type.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn copy_beside_a_coerced_branch_then_count(
    db: &D1Database,
    query: &Query,
    wide: bool,
) -> Result<i64, Error> {
    let number = Box::new(7_i32);
    let shown = takes_display(if wide {
        number.clone()
    } else {
        Box::new(String::from("seven"))
    }) + takes_display(match wide {
        true => number.clone(),
        false => Box::new(5_u8),
    }) + takes_display('shown: {
        if wide {
            break 'shown number.clone();
        }
        Box::new("seven")
    });
    Ok(orders(db).await? + takes_u32(query.bind(3)) + shown)
}

/// A count of the user's, which `Default` makes.
#[derive(Default)]
struct Tally(u8);

fn takes_tally(value: &Tally) -> i64 {
    i64::from(value.0)
}

/// A parameter's name bound again to a value whose type the call it is lent to decides:
/// no longer the parameter, so not observed as one lent (which would need its type first).
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn parameter_bound_again_then_count(db: &D1Database, query: &Query) -> Result<i64, Error> {
    let from_query: u32 = query.bind(2);
    let query = Default::default();
    Ok(orders(db).await? + takes_tally(&query) + i64::from(from_query))
}

#[tokio::test(start_paused = true)]
async fn values_whose_type_the_call_decides_still_compile_and_run() {
    let db = failing(READ, Message::CannotResolve, Timing::BeforeExecution);
    assert_eq!(
        parameter_bound_again_then_count(&db, &Query).await.unwrap(),
        2
    );
    let db = failing(READ, Message::CannotResolve, Timing::BeforeExecution);
    assert_eq!(coerced_then_count(&db, &Query, true).await.unwrap(), 4);
    assert_eq!(coerced_then_count(&db, &Query, false).await.unwrap(), 8);
    let db = failing(READ, Message::CannotResolve, Timing::BeforeExecution);
    // No orders and 3; then "7" three times, or "seven", "5", "seven".
    assert_eq!(
        copy_beside_a_coerced_branch_then_count(&db, &Query, true)
            .await
            .unwrap(),
        6
    );
    assert_eq!(
        copy_beside_a_coerced_branch_then_count(&db, &Query, false)
            .await
            .unwrap(),
        14
    );
}

/// A type of the user's with an `exec` and a `batch` of its own, which archive the orders
/// whatever text or statements they are handed: D1-shaped calls that write.
struct Archiver {
    db: D1Database,
}

impl Archiver {
    async fn exec(&self, select: &str) -> Result<(), Error> {
        self.db
            .prepare(format!("INSERT INTO archive (item) {select}"))
            .run()
            .await
            .map(drop)
    }

    async fn batch(&self, statements: Vec<D1PreparedStatement>) -> Result<(), Error> {
        assert_eq!(statements.len(), 1);
        self.exec("SELECT item FROM orders").await
    }
}

/// A repository holding archivers, reached where the attribute cannot probe the receiver's
/// type without evaluating it: an index that is not a literal, a macro, a place reached
/// through a call.
struct Archivers {
    db: D1Database,
    archivers: Vec<Archiver>,
}

macro_rules! archiver_of {
    ($repo:expr) => {
        $repo.archivers[0]
    };
}

impl Archivers {
    fn itself(&self) -> &Archivers {
        self
    }

    /// Declared `read_only`; archives by `exec` or `batch` in the shape `how` picks, then
    /// the nested read `orders`.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn archive_then_count(&self, how: usize, at: usize) -> Result<i64, Error> {
        match how {
            0 => self.archivers[at].exec("SELECT item FROM orders").await?,
            1 => archiver_of!(self).exec("SELECT item FROM orders").await?,
            2 => {
                self.itself().archivers[0]
                    .exec("SELECT item FROM orders")
                    .await?
            }
            3 => {
                let archiver = &self.archivers[at];
                archiver
                    .batch(vec![self.db.prepare("SELECT item FROM orders")])
                    .await?;
            }
            _ => {
                self.archivers[at]
                    .batch(vec![self.db.prepare("SELECT item FROM orders")])
                    .await?
            }
        }
        orders(&self.db).await
    }

    /// The same under time limits.
    #[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000, deadline_ms = 10_000)]
    async fn archive_then_count_bounded(&self, how: usize, at: usize) -> Result<i64, Error> {
        match how {
            0 => self.archivers[at].exec("SELECT item FROM orders").await?,
            1 => archiver_of!(self).exec("SELECT item FROM orders").await?,
            2 => {
                self.itself().archivers[0]
                    .exec("SELECT item FROM orders")
                    .await?
            }
            3 => {
                let archiver = &self.archivers[at];
                archiver
                    .batch(vec![self.db.prepare("SELECT item FROM orders")])
                    .await?;
            }
            _ => {
                self.archivers[at]
                    .batch(vec![self.db.prepare("SELECT item FROM orders")])
                    .await?
            }
        }
        orders(&self.db).await
    }
}

#[tokio::test(start_paused = true)]
async fn an_exec_or_a_batch_that_is_not_d1_s_stops_a_read_only_body_from_running_again() {
    for bounded in [false, true] {
        for how in 0..7 {
            let db = orders_with_archive();
            fail_once(
                &db,
                READ,
                Message::NetworkConnectionLost,
                Timing::AfterExecution,
            );
            let repo = Archivers {
                db: db.clone(),
                archivers: vec![Archiver { db: db.clone() }],
            };
            let counted = if bounded {
                repo.archive_then_count_bounded(how, 0).await
            } else {
                repo.archive_then_count(how, 0).await
            };
            // The archiver's `INSERT` ran, then the read failed after it ran: running the
            // body again would archive the orders twice. It is not.
            assert!(counted.is_ok(), "how: {how}, bounded: {bounded}");
            assert_eq!(
                count(&db, "SELECT count(*) FROM archive"),
                1,
                "how: {how}, bounded: {bounded}"
            );
        }
    }
}

/// A macro of the caller's that binds the name it is handed.
macro_rules! lend {
    ($name:ident = $value:expr) => {
        let $name = $value;
    };
    (($name:ident) = $value:expr) => {
        let $name = $value;
    };
}

/// A macro of the caller's, called as a statement: it could bind names out of sight.
macro_rules! note {
    () => {
        let _ = 0;
    };
}

impl Kept {
    /// Declared `read_only`, in a body that calls a macro of its own as a statement: a
    /// statement's copy bound to a name and handed on (`how == 0`), or run by
    /// `tokio::select!`, which is not rewritten: awaited as a branch's future (1), handed to
    /// a function there (2), or in a branch's handler (3); or handed on after a `select!`
    /// of a future bound to a name, which it may not be (4); or bound in a handler and
    /// handed on there (5); or a name a macro of the caller's bound again to a copy, awaited
    /// as a branch's future (6); or awaited itself in a handler (7), or handed to a method
    /// there (8).
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn run_beside_macros(&self, how: u8) -> Result<i64, Error> {
        note!();
        match how {
            0 => {
                let copy = self.statement.clone();
                awaited(copy).await?;
            }
            // Each `select!` in a block of its own: what it may run is told as the
            // statement it stands in begins (the whole `match`, were it an arm's value).
            1 => {
                tokio::select! {
                    ran = self.statement.clone() => {
                        ran?;
                    }
                }
            }
            2 => {
                tokio::select! {
                    ran = awaited(self.statement.clone()) => {
                        ran?;
                    }
                }
            }
            3 => {
                tokio::select! {
                    () = core::future::ready(()) => {
                        awaited(self.statement.clone()).await?;
                    }
                }
            }
            // A copy bound in a handler, then handed on there.
            5 => {
                tokio::select! {
                    () = core::future::ready(()) => {
                        let copy = self.statement.clone();
                        awaited(copy).await?;
                    }
                }
            }
            // A name bound to another function's value, then to a copy by a macro of the
            // caller's, awaited by `select!`.
            6 => {
                let next = core::future::ready(());
                next.await;
                lend!(next = self.statement.clone());
                tokio::select! {
                    ran = next => {
                        ran?;
                    }
                }
            }
            7 => {
                tokio::select! {
                    () = core::future::ready(()) => {
                        self.statement.clone().await?;
                    }
                }
            }
            8 => {
                tokio::select! {
                    () = core::future::ready(()) => {
                        self.run_handed(self.statement.clone()).await?;
                    }
                }
            }
            // A future of another function's, bound to a name first: no statement.
            _ => {
                let nap = core::future::ready(());
                tokio::select! {
                    () = nap => {}
                }
                awaited(self.statement.clone()).await?;
            }
        }
        orders(&self.db).await
    }
}

impl Kept {
    /// Runs the statement it is handed, as a method of the user's would.
    async fn run_handed(&self, statement: D1PreparedStatement) -> Result<D1Result, Error> {
        statement.run().await
    }
}

#[tokio::test(start_paused = true)]
async fn a_copy_run_beside_macros_stops_a_read_only_body_from_running_again() {
    // Each shape of `run_beside_macros`, and how often a read it makes runs when the read
    // after it fails once after it ran (below). One list for both loops: a shape added to
    // the function and to one loop only is checked with a read or a write alone.
    let shapes = [
        (0, 2),
        (1, 1),
        (2, 1),
        (3, 1),
        (4, 2),
        (5, 1),
        (6, 1),
        (7, 1),
        (8, 1),
    ];
    const WRITE: &str = "INSERT INTO orders (item) VALUES ('kept')";
    for (how, _) in shapes {
        let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
        assert!(
            kept(&db, WRITE).run_beside_macros(how).await.is_ok(),
            "how: {how}"
        );
        assert_eq!(calls_with(&db, INSERT), 1, "how: {how}");
    }
    // The named copy that reads is read as it is handed on, and the body is run again;
    // what `select!` awaits cannot be, and counts as a write: the body is not run again,
    // and the nested read is retried on its own.
    const OTHER_READ: &str = "SELECT 1 AS n";
    for (how, reads) in shapes {
        let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
        let counted = kept(&db, OTHER_READ).run_beside_macros(how).await;
        assert_eq!(counted.unwrap(), 0, "how: {how}");
        assert_eq!(calls_with(&db, READ), 2, "how: {how}");
        assert_eq!(calls_with(&db, OTHER_READ), reads, "how: {how}");
    }
}

/// A size of the caller's type made of a statement, as a function of the user's may make
/// one.
fn sized<T: From<u8>>(_: D1PreparedStatement) -> T {
    T::from(1)
}

/// Twice the size it is handed.
fn doubled(size: u32) -> u32 {
    size * 2
}

/// Where the caller's sink goes.
fn push_to(sink: &mut Vec<u8>) {
    sink.push(1);
}

impl Kept {
    /// Declared `read_only`: a statement's copy built into one value with a `&mut` the body
    /// hands on twice (reborrowed each time). Taken apart where it is built, the copy is
    /// followed and the `&mut` is not; a value built of both is not followed (its `&mut`
    /// would be moved, README), and the body still compiles.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn run_beside_a_borrow(&self, taken_apart: bool) -> Result<i64, Error> {
        let mut out = Vec::new();
        // A copy's name bound again by a macro, to a `&mut` handed on twice.
        let sink = self.statement.clone();
        drop(sink);
        let mut spare = Vec::new();
        lend!(sink = &mut spare);
        push_to(sink);
        push_to(sink);
        // The same, the name in parentheses of the macro's own.
        let within = self.statement.clone();
        drop(within);
        let mut other = Vec::new();
        lend!((within) = &mut other);
        push_to(within);
        push_to(within);
        // A `&mut` taken out of a list by `remove`: no copy of a statement's.
        let mut sinks = vec![&mut other];
        let taken = sinks.remove(0);
        push_to(taken);
        push_to(taken);
        // A value a function of the user's makes of a copy, its type decided where it is
        // handed on: no copy.
        let made = sized(self.statement.clone());
        let twice = doubled(made);
        assert_eq!(twice, 2);
        // An `if let`'s copy, not bound in its `else`, where the name is a `&mut`.
        let spare = &mut spare;
        if let Ok(spare) = self.statement.clone().bind(&[]) {
            drop(spare);
        } else {
            push_to(spare);
            push_to(spare);
        }
        if taken_apart {
            let (copy, sink) = (self.statement.clone(), &mut out);
            push_to(sink);
            push_to(sink);
            awaited(copy).await?;
        } else {
            let pair = (self.statement.clone(), &mut out);
            push_to(pair.1);
            push_to(pair.1);
            let Holder { statement, note } = Holder {
                statement: self.statement.clone(),
                note: "kept",
            };
            awaited(statement).await?;
            assert_eq!(note, "kept");
        }
        assert_eq!(out, [1, 1]);
        orders(&self.db).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_copy_beside_a_borrow_compiles_and_stops_a_read_only_body_from_running_again() {
    const WRITE: &str = "INSERT INTO orders (item) VALUES ('kept')";
    for taken_apart in [true, false] {
        let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
        assert!(
            kept(&db, WRITE)
                .run_beside_a_borrow(taken_apart)
                .await
                .is_ok(),
            "taken apart: {taken_apart}"
        );
        assert_eq!(calls_with(&db, INSERT), 1, "taken apart: {taken_apart}");
    }
}

impl Kept {
    /// Declared `read_only`: a copy's name bound again in a `match` arm, an `if let` and a
    /// block (by a macro of the caller's) to a `&mut` that the value of each gives and the
    /// body hands on twice. The name is the branch's own there, so the value is no copy,
    /// and the body compiles as it does without the attribute.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn rebound_in_branches(&self) -> Result<i64, Error> {
        let (mut out, mut spare, mut third) = (Vec::new(), Vec::new(), Vec::new());
        let s = self.statement.clone();
        drop(s);
        let mut maybe = Some(&mut out);
        let t = match maybe.take() {
            Some(s) => s,
            None => return Ok(-1),
        };
        push_to(t);
        push_to(t);
        let mut other = Some(&mut spare);
        let u = if let Some(s) = other.take() {
            s
        } else {
            return Ok(-1);
        };
        push_to(u);
        push_to(u);
        let v = {
            let s = self.statement.clone();
            drop(s);
            lend!(s = &mut third);
            s
        };
        push_to(v);
        push_to(v);
        assert_eq!((out.len(), spare.len(), third.len()), (2, 2, 2));
        orders(&self.db).await
    }
}

#[tokio::test(start_paused = true)]
async fn names_a_branch_binds_are_its_own_and_the_body_compiles() {
    let db = failing(READ, Message::CannotResolve, Timing::BeforeExecution);
    assert_eq!(
        kept(&db, "SELECT 1 AS n")
            .rebound_in_branches()
            .await
            .unwrap(),
        0
    );
    // The body ran again: nothing in it counted as a write.
    assert_eq!(calls_with(&db, READ), 2);
}

impl Kept {
    /// Declared `read_only`; copies its statement (`clone`, `to_owned`, a clone bound, and
    /// parts of a tuple, a typed tuple and a struct, each taken apart where it is built) and
    /// keeps them to the end of the body, never running them nor handing them on. `runs`
    /// counts the body's runs.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn copies_kept_then_count(&self, runs: &AtomicU32) -> Result<i64, Error> {
        runs.fetch_add(1, Ordering::Relaxed);
        let cloned = self.statement.clone();
        let _ = self.statement.clone();
        let owned = self.statement.to_owned();
        let bound = self.statement.clone().bind(&[])?;
        let (paired, note) = (self.statement.clone(), NOTE);
        let (typed, _): (D1PreparedStatement, &str) = (self.statement.clone(), NOTE);
        let Holder {
            statement: held,
            note: held_note,
        } = Holder {
            statement: self.statement.clone(),
            note: NOTE,
        };
        let copies =
            [cloned, owned, bound, paired, typed, held].len() + note.len() + held_note.len();
        Ok(orders(&self.db).await? + copies as i64 - 14)
    }
}

#[tokio::test(start_paused = true)]
async fn copies_of_a_kept_write_that_never_run_keep_a_read_only_body_retried() {
    // Copying a statement runs nothing: only what a copy is handed to may. The body's
    // read failed after it ran, and the body runs again, its write never sent.
    const WRITE: &str = "INSERT INTO orders (item) VALUES ('kept')";
    let db = failing(READ, Message::NetworkConnectionLost, Timing::AfterExecution);
    let runs = AtomicU32::new(0);
    let counted = kept(&db, WRITE).copies_kept_then_count(&runs).await;
    assert_eq!(counted.unwrap(), 0);
    assert_eq!(runs.load(Ordering::Relaxed), 2);
    assert_eq!(calls_with(&db, READ), 2);
    assert_eq!(calls_with(&db, INSERT), 0);
}
