//! Statements held and chosen: kept in an `Option` field and taken, prepared once and bound
//! in loops with `continue`, early `return` and labelled `break`, picked by labelled blocks
//! (by a `break` in their value too), `loop`s, deferred `let`s and an assignment over a
//! read, destructured from tuples (names swapped), bound by `if let` over an outer name and
//! by a typed `let`, kept in struct
//! fields, `Vec`s, a `Mutex` queue, a `RefCell` and a `HashMap`, shadowed in inner blocks,
//! prepared under one name from dynamic SQL, and awaited themselves.

use core::sync::atomic::{AtomicU32, Ordering};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, Error};

use crate::harness::{Count, Effects, INSERT_ITEM, NO_BUDGET, READ_N, n, sweep};

/// A repository that queues a write to flush later, as a unit of work does.
struct Queued {
    db: D1Database,
    pending: Option<D1PreparedStatement>,
    read: D1PreparedStatement,
    effects: Arc<Effects>,
}

impl Queued {
    #[d1_retry(policy = NO_BUDGET)]
    async fn flush(&self) -> Result<i64, Error> {
        let stmt = self.db.prepare(READ_N);
        let before = stmt.first::<Count>(None).await?;
        if let Some(stmt) = &self.pending {
            stmt.run().await?;
            self.effects.push("flushed");
        }
        let held = self.read.first::<Count>(None).await?;
        self.effects.push("held read");
        Ok(n(before) * 100 + n(held))
    }

    /// Takes the queued write out of the field with `let else`, shadowing the read's name.
    #[d1_retry(policy = NO_BUDGET)]
    async fn flush_taken(&mut self) -> Result<i64, Error> {
        let stmt = self.db.prepare(READ_N);
        stmt.first::<Count>(None).await?;
        let Some(stmt) = self.pending.take() else {
            return Ok(-5);
        };
        self.effects.push("taken");
        let r = stmt.run().await?;
        Ok(r.meta()
            .ok()
            .flatten()
            .map_or(0, |m| m.changes.unwrap_or(0) as i64))
    }
}

/// A write queued in an `Option` field is judged by the SQL it holds, even under the name
/// of a read: it lands once, the reads around it are retried.
#[tokio::test(start_paused = true)]
async fn a_write_queued_in_an_option_field_lands_once_whatever_fails() {
    sweep("option field", |db, effects| async move {
        Queued {
            pending: Some(db.prepare("INSERT INTO orders (item) VALUES ('queued')")),
            read: db.prepare("SELECT count(*) AS n FROM audit"),
            db,
            effects,
        }
        .flush()
        .await
    })
    .await;
    sweep("option take and let-else", |db, effects| async move {
        let mut queued = Queued {
            pending: Some(db.prepare("INSERT INTO orders (item) VALUES ('taken')")),
            read: db.prepare("SELECT 1"),
            db,
            effects,
        };
        queued.flush_taken().await
    })
    .await;
}

struct Looper {
    db: D1Database,
    effects: Arc<Effects>,
}

impl Looper {
    /// Places the items not yet ordered: one statement prepared per kind, bound per item,
    /// leaving the loop by `continue`, `return`, `let else` and a labelled `break`.
    #[allow(
        clippy::never_loop,
        reason = "the loop is there for its labelled `break` with a value"
    )]
    #[d1_retry(policy = NO_BUDGET)]
    async fn place_missing(&self, items: &[&str]) -> Result<i64, Error> {
        let find = self
            .db
            .prepare("SELECT count(*) AS n FROM orders WHERE item = ?1");
        let insert = self.db.prepare(INSERT_ITEM);
        let total = 'outer: loop {
            for item in items {
                let Some(found) = find
                    .clone()
                    .bind(&[(*item).into()])?
                    .first::<Count>(None)
                    .await?
                else {
                    break 'outer -1;
                };
                if found.n > 0 {
                    continue;
                }
                insert.clone().bind(&[(*item).into()])?.run().await?;
                self.effects.push(format!("placed {item}"));
                if *item == "stop" {
                    return Ok(99);
                }
            }
            break 'outer items.len() as i64;
        };
        Ok(total)
    }

    /// The statement chosen by `break 'label value` out of a labelled block.
    #[d1_retry(policy = NO_BUDGET)]
    async fn chosen_by_break(&self, write: bool) -> Result<i64, Error> {
        let stmt = 'pick: {
            if write {
                break 'pick self.db.prepare("INSERT INTO orders (item) VALUES ('brk')");
            }
            self.db.prepare(READ_N)
        };
        let r = stmt.all().await?;
        self.effects.push("ran");
        Ok(r.rows().len() as i64)
    }

    /// A `match` whose arm is a labelled block that breaks with a write.
    #[d1_retry(policy = NO_BUDGET)]
    async fn chosen_by_arm_break(&self, write: bool) -> Result<i64, Error> {
        let stmt = match write {
            true => 'b: {
                break 'b self
                    .db
                    .prepare("INSERT INTO orders (item) VALUES ('armbrk')");
            }
            false => self.db.prepare(READ_N),
        };
        let r = stmt.all().await?;
        self.effects.push("ran");
        Ok(r.rows().len() as i64)
    }

    /// `loop { break <statement> }`.
    #[allow(
        clippy::never_loop,
        reason = "the shape: a statement chosen by `break`"
    )]
    #[d1_retry(policy = NO_BUDGET)]
    async fn chosen_by_loop(&self, write: bool) -> Result<i64, Error> {
        let stmt = loop {
            if write {
                break self
                    .db
                    .prepare("INSERT INTO orders (item) VALUES ('loopbrk')");
            }
            break self.db.prepare(READ_N);
        };
        let r = stmt.all().await?;
        self.effects.push("ran");
        Ok(r.rows().len() as i64)
    }

    /// Deferred initialisation: `let stmt;` assigned in the branches of an `if`.
    #[allow(clippy::needless_late_init, reason = "the shape: a deferred `let`")]
    #[d1_retry(policy = NO_BUDGET)]
    async fn deferred(&self, write: bool) -> Result<i64, Error> {
        let stmt;
        if write {
            stmt = self
                .db
                .prepare("INSERT INTO orders (item) VALUES ('deferred')");
        } else {
            stmt = self.db.prepare(READ_N);
        }
        let r = stmt.all().await?;
        self.effects.push("ran");
        Ok(r.rows().len() as i64)
    }

    /// A labelled block whose value is an `if` that breaks out of the block with a write:
    /// the `break` chooses the statement, it does not leave the `let`. Unformatted: rustfmt
    /// puts a `;` after the `break`, which makes the branch a block with a statement.
    #[rustfmt::skip]
    #[d1_retry(policy = NO_BUDGET)]
    async fn chosen_by_break_in_the_value(&self, write: bool) -> Result<i64, Error> {
        let stmt = 'pick: {
            if write {
                break 'pick self.db.prepare("INSERT INTO orders (item) VALUES ('tailbrk')")
            } else {
                self.db.prepare(READ_N)
            }
        };
        let r = stmt.all().await?;
        self.effects.push("ran");
        Ok(r.rows().len() as i64)
    }

    /// A statement bound again to a labelled block whose `if` either breaks out with a
    /// write or keeps the read it held (unformatted, as above).
    #[rustfmt::skip]
    #[d1_retry(policy = NO_BUDGET)]
    async fn rebound_by_break(&self, write: bool) -> Result<i64, Error> {
        let stmt = self.db.prepare(READ_N);
        let stmt = 'pick: {
            if write {
                break 'pick self.db.prepare("INSERT INTO orders (item) VALUES ('rebrk')")
            } else {
                stmt.clone()
            }
        };
        let r = stmt.all().await?;
        self.effects.push("ran");
        Ok(r.rows().len() as i64)
    }

    /// A statement assigned over: the name holds a read from its `let`, then a write.
    #[d1_retry(policy = NO_BUDGET)]
    async fn assigned_over(&self, write: bool) -> Result<i64, Error> {
        let mut stmt = self.db.prepare(READ_N);
        if write {
            stmt = self
                .db
                .prepare("INSERT INTO orders (item) VALUES ('assigned')");
        }
        let r = stmt.all().await?;
        self.effects.push("ran");
        Ok(r.rows().len() as i64)
    }

    /// A read and a write destructured from a tuple, then the names swapped by another.
    #[d1_retry(policy = NO_BUDGET)]
    async fn tuple(&self) -> Result<i64, Error> {
        let (read, write) = (
            self.db.prepare(READ_N),
            self.db
                .prepare("INSERT INTO orders (item) VALUES ('tuple')"),
        );
        let c = read.first::<Count>(None).await?;
        self.effects.push("read");
        write.run().await?;
        self.effects.push("wrote");
        let (write, read) = (read, write);
        let d = write.first::<Count>(None).await?;
        self.effects.push("read again");
        drop(read);
        Ok(n(c) * 10 + n(d))
    }

    /// Names swapped by a tuple: `read` now holds the insert.
    #[d1_retry(policy = NO_BUDGET)]
    async fn swapped_names(&self) -> Result<i64, Error> {
        let read = self.db.prepare(READ_N);
        let write = self
            .db
            .prepare("INSERT INTO orders (item) VALUES ('swapped')");
        let (read, write) = (write, read);
        read.run().await?;
        self.effects.push("ran read (an insert)");
        let c = write.first::<Count>(None).await?;
        Ok(n(c))
    }

    /// A struct literal holding statements, one field named like a local that reads.
    #[d1_retry(policy = NO_BUDGET)]
    async fn struct_fields(&self) -> Result<i64, Error> {
        struct Pair {
            stmt: D1PreparedStatement,
            read: D1PreparedStatement,
        }
        let stmt = self.db.prepare(READ_N);
        let pair = Pair {
            stmt: self
                .db
                .prepare("INSERT INTO orders (item) VALUES ('field')"),
            read: self.db.prepare(READ_N),
        };
        let a = stmt.first::<Count>(None).await?;
        self.effects.push("a");
        pair.stmt.run().await?;
        self.effects.push("b");
        let b = pair.read.first::<Count>(None).await?;
        self.effects.push("c");
        Ok(n(a) * 10 + n(b))
    }

    /// `for stmt in [...]` over writes, beside an outer read named `stmt`.
    #[d1_retry(policy = NO_BUDGET)]
    async fn for_shadow(&self) -> Result<i64, Error> {
        let stmt = self.db.prepare(READ_N);
        let a = stmt.first::<Count>(None).await?;
        for stmt in [
            self.db.prepare("INSERT INTO orders (item) VALUES ('for1')"),
            self.db.prepare("INSERT INTO orders (item) VALUES ('for2')"),
        ] {
            stmt.run().await?;
            self.effects.push(format!("{:?}", stmt.sql()));
        }
        Ok(n(a))
    }

    /// `if let Some(stmt)` over a write handed in, beside an outer read named `stmt`, and a
    /// typed `let` of a write.
    #[d1_retry(policy = NO_BUDGET)]
    async fn if_let_shadow(&self, pending: Option<D1PreparedStatement>) -> Result<i64, Error> {
        let stmt = self.db.prepare(READ_N);
        let a = stmt.first::<Count>(None).await?;
        if let Some(stmt) = pending {
            stmt.run().await?;
            self.effects.push("pending");
        }
        let typed: D1PreparedStatement = self
            .db
            .prepare("INSERT INTO orders (item) VALUES ('typed')");
        typed.run().await?;
        Ok(n(a))
    }

    /// A `Vec` of reads and writes run in turn.
    #[allow(clippy::useless_vec, reason = "the shape: a `Vec` of statements")]
    #[d1_retry(policy = NO_BUDGET)]
    async fn vec_for(&self) -> Result<i64, Error> {
        let stmts = vec![
            self.db.prepare(READ_N),
            self.db.prepare("INSERT INTO orders (item) VALUES ('v1')"),
            self.db.prepare("SELECT count(*) AS n FROM audit"),
            self.db.prepare("INSERT INTO audit (what) VALUES ('v2')"),
        ];
        let mut seen = 0;
        for (i, s) in stmts.iter().enumerate() {
            let r = s.all().await?;
            seen += r.rows().len() as i64;
            self.effects.push(format!("stmt {i}"));
        }
        Ok(seen)
    }
}

/// A find-then-insert loop over items: a failure of the third item's insert does not
/// place the first two again, whether the loop ends normally or by an early `return`.
#[tokio::test(start_paused = true)]
async fn a_find_then_insert_loop_places_each_item_once_whatever_fails() {
    sweep("loop find and insert", |db, effects| async move {
        Looper { db, effects }.place_missing(&["a", "b", "c"]).await
    })
    .await;
    sweep("loop with early return", |db, effects| async move {
        Looper { db, effects }
            .place_missing(&["a", "stop", "c"])
            .await
    })
    .await;
}

/// A statement chosen by a labelled block (also by a `break` in its value, and bound again
/// so), a `match` arm's labelled block, `loop`'s `break`, a deferred `let` or an
/// assignment over a read's `let`: a write lands once, a read is retried.
#[tokio::test(start_paused = true)]
async fn a_write_chosen_in_a_labelled_block_lands_once_whatever_fails() {
    for write in [false, true] {
        sweep(
            &format!("labelled break, write {write}"),
            |db, effects| async move { Looper { db, effects }.chosen_by_break(write).await },
        )
        .await;
        sweep(
            &format!("match arm break, write {write}"),
            |db, effects| async move { Looper { db, effects }.chosen_by_arm_break(write).await },
        )
        .await;
        sweep(
            &format!("loop break, write {write}"),
            |db, effects| async move { Looper { db, effects }.chosen_by_loop(write).await },
        )
        .await;
        sweep(
            &format!("deferred let, write {write}"),
            |db, effects| async move { Looper { db, effects }.deferred(write).await },
        )
        .await;
        sweep(
            &format!("break in a labelled block's value, write {write}"),
            |db, effects| async move {
                Looper { db, effects }
                    .chosen_by_break_in_the_value(write)
                    .await
            },
        )
        .await;
        sweep(
            &format!("bound again by a break, write {write}"),
            |db, effects| async move { Looper { db, effects }.rebound_by_break(write).await },
        )
        .await;
        sweep(
            &format!("assigned over, write {write}"),
            |db, effects| async move { Looper { db, effects }.assigned_over(write).await },
        )
        .await;
    }
}

/// Names rebound by tuple patterns must not carry a read's verdict to a write: the insert
/// bound to `read` lands once.
#[tokio::test(start_paused = true)]
async fn statements_destructured_from_tuples_are_judged_by_what_they_hold() {
    sweep("tuple", |db, effects| async move {
        Looper { db, effects }.tuple().await
    })
    .await;
    sweep("swapped names", |db, effects| async move {
        Looper { db, effects }.swapped_names().await
    })
    .await;
}

/// Statements in a struct's fields, in a `for` over an array shadowing a read, in a `Vec`
/// iterated: each write lands once.
#[tokio::test(start_paused = true)]
async fn writes_in_struct_fields_and_for_loops_land_once_whatever_fails() {
    sweep("struct fields", |db, effects| async move {
        Looper { db, effects }.struct_fields().await
    })
    .await;
    sweep("for shadowing a read", |db, effects| async move {
        Looper { db, effects }.for_shadow().await
    })
    .await;
    sweep("vec for", |db, effects| async move {
        Looper { db, effects }.vec_for().await
    })
    .await;
    sweep("if let shadowing a read", |db, effects| async move {
        let pending = db.prepare("INSERT INTO orders (item) VALUES ('iflet')");
        Looper { db, effects }.if_let_shadow(Some(pending)).await
    })
    .await;
}

/// A repository whose statements come from containers and from receivers and arguments
/// that have side effects of their own.
struct Sources {
    db: D1Database,
    effects: Arc<Effects>,
    queue: Mutex<Vec<D1PreparedStatement>>,
    cell: RefCell<Option<D1PreparedStatement>>,
    cache: HashMap<&'static str, D1PreparedStatement>,
    taken: AtomicU32,
}

impl Sources {
    /// Pops the next statement from a work queue: evaluating it twice would skip one.
    fn next_statement(&self) -> D1PreparedStatement {
        let k = self.taken.fetch_add(1, Ordering::Relaxed);
        self.effects.push(format!("took {k}"));
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(0)
    }

    fn column(&self) -> &'static str {
        self.effects.push("column evaluated");
        "n"
    }

    fn list(&self) -> Vec<D1PreparedStatement> {
        self.effects.push("list built");
        vec![
            self.db.prepare("SELECT count(*) AS n FROM audit"),
            self.db
                .prepare("INSERT INTO audit (what) VALUES ('listed')"),
        ]
    }

    #[allow(
        clippy::await_holding_refcell_ref,
        reason = "the shape: a statement read through a `RefCell` guard, on one thread"
    )]
    #[d1_retry(policy = NO_BUDGET)]
    async fn effects_in_receivers(&self) -> Result<i64, Error> {
        // A read, then a write, then a read, popped from the queue.
        self.next_statement().run().await?;
        self.next_statement().run().await?;
        let a = self
            .next_statement()
            .first::<i64>(Some(self.column()))
            .await?;
        self.db.batch(self.list()).await?;
        self.effects.push("batched");
        let b = self
            .cell
            .borrow()
            .as_ref()
            .expect("the cell holds a statement")
            .first::<Count>(None)
            .await?;
        self.effects.push("cell read");
        self.cache["w"].run().await?;
        self.effects.push("cache write");
        self.cache
            .get("r")
            .expect("the cache holds a read")
            .first::<Count>(None)
            .await?;
        self.effects.push("cache read");
        let all = [self.db.prepare(READ_N), self.db.prepare(READ_N)];
        all.first()
            .expect("the array has a first")
            .first::<Count>(None)
            .await?;
        self.effects.push("slice first");
        Ok(a.unwrap_or(-1) * 10 + n(b))
    }

    /// A write bound to `stmt`, a read of the same name in an inner block and a match arm's
    /// binding of that name, then the outer write runs.
    #[d1_retry(policy = NO_BUDGET)]
    async fn block_shadow(&self, pick: Option<&str>) -> Result<i64, Error> {
        let stmt = self
            .db
            .prepare("INSERT INTO orders (item) VALUES ('outer')");
        let a = {
            let stmt = self.db.prepare(READ_N);
            stmt.first::<Count>(None).await?
        };
        self.effects.push("inner read");
        let b = match pick {
            Some(stmt) => {
                self.db
                    .prepare(READ_N)
                    .bind(&[])?
                    .first::<i64>(Some(stmt))
                    .await?
            }
            None => None,
        };
        self.effects.push("arm read");
        stmt.run().await?;
        self.effects.push("outer write");
        Ok(n(a) * 10 + b.unwrap_or(-1))
    }
}

fn sources(db: D1Database, effects: Arc<Effects>) -> Sources {
    let mut cache = HashMap::new();
    cache.insert(
        "w",
        db.prepare("INSERT INTO archive (item) VALUES ('cached')"),
    );
    cache.insert("r", db.prepare("SELECT count(*) AS n FROM archive"));
    Sources {
        queue: Mutex::new(vec![
            db.prepare(READ_N),
            db.prepare("INSERT INTO orders (item) VALUES ('queued')"),
            db.prepare("SELECT count(*) AS n FROM orders"),
        ]),
        cell: RefCell::new(Some(db.prepare("SELECT count(*) AS n FROM audit"))),
        cache,
        taken: AtomicU32::new(0),
        db,
        effects,
    }
}

/// A retry gets a clone of the receiver and the arguments, evaluated once: the queue is
/// popped once per call, the column and the batch's list built once, and the statements
/// behind a `RefCell`, a `HashMap` index and a slice are judged by the SQL they hold.
#[tokio::test(start_paused = true)]
async fn receivers_with_side_effects_are_evaluated_once_whatever_fails() {
    sweep("receivers and containers", |db, effects| async move {
        sources(db, effects).effects_in_receivers().await
    })
    .await;
}

/// A read shadowing a write's name in an inner block or a match arm does not make the
/// outer write a read.
#[tokio::test(start_paused = true)]
async fn a_read_shadowing_a_write_in_an_inner_block_leaves_the_write_once() {
    for pick in [None, Some("n")] {
        sweep(
            &format!("block shadow {pick:?}"),
            |db, effects| async move { sources(db, effects).block_shadow(pick).await },
        )
        .await;
    }
}

/// A runner of SQL chosen at run time, as a migration or admin endpoint has.
struct Dynamic {
    db: D1Database,
    effects: Arc<Effects>,
}

impl Dynamic {
    /// Each text prepared under the same name in a loop.
    #[d1_retry(policy = NO_BUDGET)]
    async fn each(&self, sqls: &[String]) -> Result<i64, Error> {
        let mut total = 0;
        for (i, sql) in sqls.iter().enumerate() {
            let stmt = self.db.prepare(sql.as_str());
            let r = stmt.all().await?;
            total += r.rows().len() as i64;
            self.effects.push(format!("ran {i}"));
        }
        Ok(total)
    }

    /// Prepared in the loop, executed in `async move` blocks collected and awaited later.
    #[d1_retry(policy = NO_BUDGET)]
    async fn each_deferred(&self, sqls: &[String]) -> Result<i64, Error> {
        let mut pending = Vec::new();
        for sql in sqls {
            let stmt = self.db.prepare(sql.as_str());
            pending.push(async move { stmt.all().await.map(|r| r.rows().len() as i64) });
        }
        let mut total = 0;
        for (i, p) in pending.into_iter().enumerate() {
            total += p.await?;
            self.effects.push(format!("deferred {i}"));
        }
        Ok(total)
    }
}

/// Dynamic SQL under one name, alternating reads and writes in both orders: each
/// execution is judged by the text it runs, not by the first one the name held.
#[tokio::test(start_paused = true)]
async fn dynamic_sql_prepared_under_one_name_is_judged_per_execution() {
    let pool = [
        "SELECT count(*) AS n FROM orders",
        "INSERT INTO orders (item) VALUES ('dyn-a')",
        "SELECT count(*) AS n FROM audit",
        "UPDATE counters SET n = n + 1 WHERE name = 'hits'",
    ];
    for order in [[0usize, 1, 2, 3], [1, 0, 3, 2]] {
        let sqls: Vec<String> = order.iter().map(|&i| pool[i].to_owned()).collect();
        sweep(&format!("dynamic loop {order:?}"), |db, effects| {
            let sqls = sqls.clone();
            async move { Dynamic { db, effects }.each(&sqls).await }
        })
        .await;
        sweep(&format!("dynamic deferred {order:?}"), |db, effects| {
            let sqls = sqls.clone();
            async move { Dynamic { db, effects }.each_deferred(&sqls).await }
        })
        .await;
    }
}

/// A statement awaited itself (it is `IntoFuture`), as a clone beside another call.
#[d1_retry(policy = NO_BUDGET)]
async fn await_clone(db: &D1Database) -> Result<usize, Error> {
    let s = db.prepare(READ_N);
    let n = s.clone().await?.rows().len();
    db.prepare("SELECT 1").all().await?;
    Ok(n)
}

/// The only D1 call of the body: a local statement awaited by value.
#[d1_retry(policy = NO_BUDGET)]
async fn await_by_value(db: &D1Database) -> Result<usize, Error> {
    let s = db.prepare(READ_N);
    Ok(s.await?.rows().len())
}

/// The only D1 call of the body: a bound chain awaited where it is built.
#[d1_retry(policy = NO_BUDGET)]
async fn await_bound(db: &D1Database) -> Result<usize, Error> {
    Ok(db.prepare(READ_N).bind(&[])?.await?.rows().len())
}

/// `.await` on a statement is a D1 execution like `all()`: it is retried, alone in a body
/// or beside another call.
#[tokio::test(start_paused = true)]
async fn a_statement_awaited_itself_is_retried_like_any_read() {
    sweep(
        "awaited clone",
        |db, _| async move { await_clone(&db).await },
    )
    .await;
    sweep("awaited by value", |db, _| async move {
        await_by_value(&db).await
    })
    .await;
    sweep("awaited bound chain", |db, _| async move {
        await_bound(&db).await
    })
    .await;
}
