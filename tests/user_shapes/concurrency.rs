//! Futures combined: `tokio::join!`, `tokio::try_join!`, `join_all` over `async move`
//! blocks, `tokio::select!`, a boxed future, a plain helper returning `impl Future`, and
//! closures that build or run statements.

use core::future::Future;
use core::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, Error};

use crate::harness::{Count, Effects, INSERT_ITEM, NO_BUDGET, READ_N, n, sweep, sweep_leaving};

struct Concurrent {
    db: D1Database,
    effects: Arc<Effects>,
}

impl Concurrent {
    /// Two writes and a read at once. (A temporary `db.prepare(..).run()` as a `join!`
    /// argument does not compile in plain Rust either: E0716.)
    #[d1_retry(policy = NO_BUDGET)]
    async fn joined(&self) -> Result<i64, Error> {
        let w1 = self.db.prepare("INSERT INTO orders (item) VALUES ('j1')");
        let r = self.db.prepare(READ_N);
        let w2 = self.db.prepare("INSERT INTO audit (what) VALUES ('j2')");
        let (a, b, c) = tokio::join!(w1.run(), r.first::<Count>(None), w2.run());
        a?;
        self.effects.push("a");
        let b = b?;
        c?;
        self.effects.push("c");
        // The count depends on the order the calls ran in: only its presence is compared.
        Ok(n(b).min(0))
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn try_joined(&self) -> Result<i64, Error> {
        let s1 = self.db.prepare("INSERT INTO orders (item) VALUES ('tj1')");
        let s2 = self.db.prepare("SELECT count(*) AS n FROM audit");
        let s3 = self.db.prepare("INSERT INTO audit (what) VALUES ('tj2')");
        let (_, b, _) = tokio::try_join!(s1.run(), s2.first::<Count>(None), s3.run())?;
        self.effects.push("joined");
        Ok(n(b).min(0))
    }

    /// A write, then reads made where they stand and awaited inside the function's last
    /// expression, through a timeout of the user's and `join_all`: consumed there, not
    /// returned, so each is retried on its own, as it is in a `let` before the tail.
    #[d1_retry(policy = NO_BUDGET)]
    async fn awaited_in_the_tail(&self) -> Result<i64, Error> {
        self.db
            .prepare("INSERT INTO orders (item) VALUES ('tail')")
            .run()
            .await?;
        self.effects.push("wrote");
        let read = self.db.prepare(READ_N);
        let reads = [self.db.prepare(READ_N)];
        Ok(n(
            tokio::time::timeout(Duration::from_secs(60), read.first::<Count>(None))
                .await
                .map_err(|_| Error::from("timed out"))??,
        ) + test_support::join_all(reads.iter().map(|s| s.first::<Count>(None)))
            .await
            .into_iter()
            .map(|row| row.map(n))
            .sum::<Result<i64, Error>>()?)
    }

    /// One `async move` block per item, each binding a clone of one prepared insert.
    #[d1_retry(policy = NO_BUDGET)]
    async fn join_all_blocks(&self, items: &[&str]) -> Result<i64, Error> {
        let insert = self.db.prepare(INSERT_ITEM);
        let effects = &self.effects;
        let futures = items.iter().map(|item| {
            let insert = insert.clone();
            async move {
                let bound = insert.bind(&[(*item).into()])?;
                bound.run().await?;
                effects.push(format!("joined {item}"));
                Ok::<_, Error>(1i64)
            }
        });
        let mut total = 0;
        for r in test_support::join_all(futures).await {
            total += r?;
        }
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        Ok(total * 100 + n(c))
    }

    /// A write raced against a long sleep with `select!`: the write wins.
    #[d1_retry(policy = NO_BUDGET)]
    async fn selected(&self) -> Result<i64, Error> {
        let w = self.db.prepare("INSERT INTO orders (item) VALUES ('sel')");
        let out = tokio::select! {
            r = w.run() => { r?; 1 }
            _ = tokio::time::sleep(Duration::from_secs(3600)) => 2,
        };
        self.effects.push("selected");
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        Ok(out * 100 + n(c))
    }

    /// A future boxed as `Pin<Box<dyn Future>>` in the body and awaited later.
    #[d1_retry(policy = NO_BUDGET)]
    async fn boxed_future(&self) -> Result<i64, Error> {
        let stmt = self
            .db
            .prepare("INSERT INTO orders (item) VALUES ('boxed')");
        let fut: Pin<Box<dyn Future<Output = Result<i64, Error>> + '_>> = Box::pin(async move {
            stmt.run().await?;
            self.effects.push("boxed ran");
            let c = self.db.prepare(READ_N).first::<Count>(None).await?;
            Ok(n(c))
        });
        self.effects.push("boxed made");
        fut.await
    }

    /// A plain helper (not annotated) returning `impl Future`.
    #[allow(
        clippy::manual_async_fn,
        reason = "the shape: a helper returning `impl Future`"
    )]
    fn insert_later(&self, item: String) -> impl Future<Output = Result<(), Error>> + '_ {
        async move {
            self.db
                .prepare(INSERT_ITEM)
                .bind(&[item.into()])?
                .run()
                .await?;
            Ok(())
        }
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn impl_future_helper(&self) -> Result<i64, Error> {
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        self.effects.push("read");
        self.insert_later("later".to_owned()).await?;
        self.effects.push("helper");
        Ok(n(c))
    }

    /// `?` inside a closure that builds a statement, an `async` block awaited in place, and
    /// a closure returning an `async move` block that runs the statement it is given.
    #[d1_retry(policy = NO_BUDGET)]
    async fn closures(&self, item: &str) -> Result<i64, Error> {
        let make = |item: &str| -> Result<D1PreparedStatement, Error> {
            self.db.prepare(INSERT_ITEM).bind(&[item.into()])
        };
        make(item)?.run().await?;
        self.effects.push("closure stmt");
        let n2 = async {
            self.db
                .prepare("INSERT INTO audit (what) VALUES (?1)")
                .bind(&[item.into()])?
                .run()
                .await?;
            self.effects.push("async block");
            let c = self.db.prepare(READ_N).first::<Count>(None).await?;
            Ok::<_, Error>(n(c))
        }
        .await?;
        let run = |s: D1PreparedStatement| async move { s.run().await };
        let extra = self
            .db
            .prepare("INSERT INTO archive (item) VALUES ('via fn')");
        run(extra).await?;
        self.effects.push("closure run");
        Ok(n2)
    }

    /// Closures made into `fn` pointers, which can capture nothing: each awaits its call in
    /// an `async move` block, which has a schedule of its own (one without it borrows the
    /// function's, and does not compile).
    #[d1_retry(policy = NO_BUDGET)]
    async fn fn_pointers(&self, write: bool) -> Result<i64, Error> {
        type Counting<'s> = Pin<Box<dyn Future<Output = Result<i64, Error>> + 's>>;
        let run: for<'s> fn(&'s D1PreparedStatement) -> Counting<'s> = if write {
            |s| Box::pin(async move { s.run().await.map(|_| 0) })
        } else {
            |s| Box::pin(async move { Ok(n(s.first::<Count>(None).await?)) })
        };
        let statement = if write {
            self.db.prepare("INSERT INTO orders (item) VALUES ('fn')")
        } else {
            self.db.prepare(READ_N)
        };
        let counted = run(&statement).await?;
        self.effects.push("ran");
        Ok(counted)
    }

    /// A closure whose parameter shadows a read-named local, running the write it is given.
    #[d1_retry(policy = NO_BUDGET)]
    async fn closure_shadow(&self) -> Result<i64, Error> {
        let stmt = self.db.prepare(READ_N);
        let a = stmt.first::<Count>(None).await?;
        let go = |stmt: D1PreparedStatement| async move { stmt.run().await };
        let w = self
            .db
            .prepare("INSERT INTO orders (item) VALUES ('closure shadow')");
        go(w).await?;
        self.effects.push("went");
        Ok(n(a))
    }
}

/// The futures in `join!` and `try_join!` are executions on variables: each is retried on
/// its own, the writes land once, the read is retried.
#[tokio::test(start_paused = true)]
async fn writes_joined_with_a_read_land_once_whatever_fails() {
    sweep("tokio::join!", |db, effects| async move {
        Concurrent { db, effects }.joined().await
    })
    .await;
    sweep("tokio::try_join!", |db, effects| async move {
        Concurrent { db, effects }.try_joined().await
    })
    .await;
}

/// Inserts fanned out over `async move` blocks and joined: a failure of one item's insert
/// neither repeats the others nor its own when it may have run.
#[tokio::test(start_paused = true)]
async fn inserts_fanned_out_in_async_blocks_land_once_whatever_fails() {
    sweep("join_all of async move blocks", |db, effects| async move {
        Concurrent { db, effects }
            .join_all_blocks(&["x", "y", "z"])
            .await
    })
    .await;
}

/// `select!` is not one of the expression macros the attribute sees into, so the write
/// raced in it runs as written: never retried, never repeated; the read after it is.
#[tokio::test(start_paused = true)]
async fn a_write_raced_in_select_runs_as_written_and_never_twice() {
    sweep_leaving("tokio::select!", &["('sel')"], |db, effects| async move {
        Concurrent { db, effects }.selected().await
    })
    .await;
}

/// Closures made into `fn` pointers, each awaiting its call in an `async move` block:
/// they compile, the write lands once and the read is retried.
#[tokio::test(start_paused = true)]
async fn calls_in_fn_pointers_of_async_blocks_are_retried() {
    for write in [false, true] {
        sweep("fn pointers", |db, effects| async move {
            Concurrent { db, effects }.fn_pointers(write).await
        })
        .await;
    }
}

/// Reads awaited inside the function's last expression (a timeout of the user's,
/// `join_all`) are retried on their own; the write before them lands once.
#[tokio::test(start_paused = true)]
async fn reads_awaited_in_the_last_expression_are_retried() {
    sweep("awaited in the tail", |db, effects| async move {
        Concurrent { db, effects }.awaited_in_the_tail().await
    })
    .await;
}

/// A future boxed in the body and awaited later keeps its calls retried and its side
/// effects single.
#[tokio::test(start_paused = true)]
async fn a_boxed_future_awaited_later_lands_its_write_once() {
    sweep("Pin<Box<dyn Future>>", |db, effects| async move {
        Concurrent { db, effects }.boxed_future().await
    })
    .await;
}

/// A plain helper's write is made once and not retried (the README: annotate the helper
/// to have it retried); the read before it still is.
#[tokio::test(start_paused = true)]
async fn a_plain_helper_s_write_runs_as_written_and_never_twice() {
    sweep_leaving(
        "impl Future helper",
        &["INSERT INTO orders"],
        |db, effects| async move { Concurrent { db, effects }.impl_future_helper().await },
    )
    .await;
}

/// Statements built by closures, in an `async` block, and run by a closure's `async move`
/// block (also one whose parameter shadows a read's name): each write lands once.
#[tokio::test(start_paused = true)]
async fn statements_built_or_run_by_closures_land_once_whatever_fails() {
    sweep("closures", |db, effects| async move {
        Concurrent { db, effects }.closures("cl").await
    })
    .await;
    sweep("closure shadowing a read", |db, effects| async move {
        Concurrent { db, effects }.closure_shadow().await
    })
    .await;
}

/// Futures of executions made at two sites that must have one type: chosen by `if` or
/// `match`, or pushed into one `Vec`. Without the attribute each is D1's future of that
/// method, one type; the runtime's future of a retried call has a type of its own per
/// site, so these are left as written: made once, never retried, and it compiles.
#[d1_retry(policy = NO_BUDGET)]
// The `Vec` filled by `push` is the shape under test.
#[allow(clippy::vec_init_then_push)]
async fn one_type_across_sites(db: &D1Database, dry: bool) -> Result<i64, Error> {
    let check = db.prepare(READ_N);
    let apply = db.prepare("INSERT INTO orders (item) VALUES ('one-type')");
    let chosen = if dry { check.run() } else { apply.run() };
    chosen.await?;
    let mut pending = Vec::new();
    pending.push(check.first::<Count>(None));
    pending.push(apply.first::<Count>(None));
    let mut last = None;
    for each in pending {
        last = each.await?;
    }
    let picked = match dry {
        true => check.all(),
        false => apply.all(),
    };
    picked.await?;
    Ok(n(last).min(0))
}

#[tokio::test(start_paused = true)]
async fn futures_of_two_sites_with_one_type_compile_and_run_as_written() {
    sweep_leaving(
        "one type across sites",
        &[READ_N, "('one-type')"],
        |db, effects| async move {
            effects.push("one");
            one_type_across_sites(&db, false).await
        },
    )
    .await;
}

/// More values that must have one type: an arm in parentheses, in a block, in a labelled
/// block, wrapped in `Some(..)` or a tuple, boxed before it is pushed, and assigned to a
/// slot. Each is left as written, as above.
#[d1_retry(policy = NO_BUDGET)]
// The `Vec` filled by `push`, and the slot assigned twice, are the shapes under test.
#[allow(
    clippy::vec_init_then_push,
    unused_assignments,
    unused_parens,
    unused_braces,
    unused_labels
)]
async fn one_type_wrapped(db: &D1Database, dry: bool) -> Result<i64, Error> {
    let check = db.prepare(READ_N);
    let w = [
        db.prepare("INSERT INTO orders (item) VALUES ('ow1')"),
        db.prepare("INSERT INTO orders (item) VALUES ('ow2')"),
        db.prepare("INSERT INTO orders (item) VALUES ('ow3')"),
        db.prepare("INSERT INTO orders (item) VALUES ('ow4')"),
        db.prepare("INSERT INTO orders (item) VALUES ('ow5')"),
        db.prepare("INSERT INTO orders (item) VALUES ('ow6')"),
        db.prepare("INSERT INTO orders (item) VALUES ('ow7')"),
    ];
    let [w1, w2, w3, w4, w5, w6, w7] = &w;
    let chosen = if dry { (check.run()) } else { (w1.run()) };
    chosen.await?;
    let chosen = if dry { { check.run() } } else { w2.run() };
    chosen.await?;
    let chosen = match dry {
        true => 'arm: {
            check.run()
        }
        false => w3.run(),
    };
    chosen.await?;
    let chosen = match dry {
        true => Some(check.run()),
        false => Some(w4.run()),
    };
    if let Some(chosen) = chosen {
        chosen.await?;
    }
    let (chosen, _) = if dry { (check.run(), 1) } else { (w5.run(), 2) };
    chosen.await?;
    let mut boxed = Vec::new();
    boxed.push(Box::pin(w6.run()));
    boxed.push(Box::pin(check.run()));
    if let Some(each) = boxed.into_iter().next() {
        each.await?;
    }
    let mut slot = None;
    slot = Some(check.run());
    slot = Some(w7.run());
    if let Some(each) = slot.take() {
        each.await?;
    }
    Ok(0)
}

#[tokio::test(start_paused = true)]
async fn futures_wrapped_with_one_type_compile_and_run_as_written() {
    sweep_leaving("one type, wrapped", &["('ow"], |db, effects| async move {
        effects.push("wrapped");
        one_type_wrapped(&db, false).await
    })
    .await;
}

/// Futures bound by `let`s of their own that meet later where Rust needs one type: the
/// elements of a `vec!` for a `join_all` and of an array, the arms of an `if`, a `Vec`
/// they are pushed into, a `let` assigned another site's future. They did not compile
/// (E0308: each `let` held a future of a type of its own); each is now left as written, as
/// one written at the meeting place is, and the reads around them are still retried. A `let`
/// with a type (`let fj: _ = ..`) meets as one without.
#[d1_retry(policy = NO_BUDGET)]
#[allow(
    unused_assignments,
    clippy::vec_init_then_push,
    clippy::let_and_return,
    clippy::let_with_type_underscore
)]
async fn lets_that_meet(db: &D1Database, dry: bool) -> Result<i64, Error> {
    let before = db.prepare(READ_N).first::<Count>(None).await?;
    let w = [
        db.prepare("INSERT INTO orders (item) VALUES ('meet-1')"),
        db.prepare("INSERT INTO audit (what) VALUES ('meet-2')"),
        db.prepare("INSERT INTO archive (item) VALUES ('meet-3')"),
        db.prepare("INSERT INTO orders (item) VALUES ('meet-4')"),
        db.prepare("INSERT INTO orders (item) VALUES ('meet-5')"),
        db.prepare("INSERT INTO orders (item) VALUES ('meet-6')"),
        db.prepare("INSERT INTO orders (item) VALUES ('meet-7')"),
        db.prepare("INSERT INTO orders (item) VALUES ('meet-8')"),
    ];
    let [w1, w2, w3, w4, w5, w6, w7, w8] = &w;
    // A read of its own, never run here (the write is chosen each time).
    let r = db.prepare("SELECT count(*) AS meet FROM audit");
    let fa = w1.run();
    let fb = w2.run();
    for ran in test_support::join_all(vec![fa, fb]).await {
        ran?;
    }
    let fc = w3.run();
    let fd = r.run();
    let [first, _] = [fc, fd];
    first.await?;
    let fe = w4.run();
    let ff = r.run();
    let chosen = if dry { ff } else { fe };
    chosen.await?;
    let mut pushed = Vec::new();
    let fg = w5.run();
    pushed.push(fg);
    let fh = r.run();
    pushed.push(fh);
    if let Some(each) = pushed.into_iter().next() {
        each.await?;
    }
    let mut slot = r.run();
    slot = w6.run();
    slot.await?;
    let last = match dry {
        true => r.run(),
        false => {
            let fi = w7.run();
            fi
        }
    };
    last.await?;
    // A `let` with a type, `_` here: its name meets as an untyped one does.
    let fj: _ = w8.run();
    let fk = r.run();
    let chosen = if dry { fk } else { fj };
    chosen.await?;
    let after = db.prepare(READ_N).first::<Count>(None).await?;
    Ok(n(after) - n(before))
}

#[tokio::test(start_paused = true)]
async fn futures_bound_by_lets_that_meet_compile_and_run_as_written() {
    sweep_leaving("lets that meet", &["('meet-"], |db, effects| async move {
        effects.push("met");
        lets_that_meet(&db, false).await
    })
    .await;
}

/// Futures made where nothing needs them to have one type with another site: a block's
/// value, a tuple's element, an `Option` made of a block. Each is retried on its own, and
/// the code around it (the block's side effect) runs once. Only the one-type positions
/// (an `if`'s arms, a `match`'s, what meets in a `vec!`) leave a future as written.
#[d1_retry(policy = NO_BUDGET)]
#[allow(unused_braces)]
async fn kept_in_values(db: &D1Database, effects: &Effects) -> Result<i64, Error> {
    let insert = db.prepare("INSERT INTO orders (item) VALUES ('valued')");
    let ran = {
        effects.push("made");
        insert.run()
    };
    ran.await?;
    let count = db.prepare(READ_N);
    let (counted, _table) = (count.first::<Count>(None), "orders");
    let orders = n(counted.await?);
    let audit = db.prepare("INSERT INTO audit (what) VALUES ('valued')");
    let logged = Some({ audit.run() });
    if let Some(logged) = logged {
        logged.await?;
    }
    Ok(orders)
}

#[tokio::test(start_paused = true)]
async fn futures_kept_in_a_block_value_or_a_tuple_are_retried_on_their_own() {
    sweep("kept in values", |db, effects| async move {
        kept_in_values(&db, &effects).await
    })
    .await;
}

/// The same `let`s meeting inside what is made of them: `Some(..)` and tuples in arms,
/// `Some(..)` and `Box::pin(..)` in a `vec!`, a struct in an array, and a `let` of an
/// `Option` assigned another, futures sent on one channel, and futures pushed by the
/// method's path (`Vec::push(&mut v, ..)`, written at the call or bound first). Each was
/// still E0308 once bare names were followed (the last until the method's path was read).
#[d1_retry(policy = NO_BUDGET)]
#[allow(unused_assignments, clippy::vec_init_then_push)]
async fn lets_that_meet_wrapped(db: &D1Database, dry: bool) -> Result<i64, Error> {
    struct Pending<F> {
        f: F,
    }
    let w = [
        db.prepare("INSERT INTO orders (item) VALUES ('wrap-1')"),
        db.prepare("INSERT INTO orders (item) VALUES ('wrap-2')"),
        db.prepare("INSERT INTO orders (item) VALUES ('wrap-3')"),
        db.prepare("INSERT INTO orders (item) VALUES ('wrap-4')"),
        db.prepare("INSERT INTO orders (item) VALUES ('wrap-5')"),
        db.prepare("INSERT INTO orders (item) VALUES ('wrap-6')"),
        db.prepare("INSERT INTO orders (item) VALUES ('wrap-7')"),
        db.prepare("INSERT INTO orders (item) VALUES ('wrap-8')"),
    ];
    let [w1, w2, w3, w4, w5, w6, w7, w8] = &w;
    let r = db.prepare("SELECT count(*) AS wrap FROM audit");
    let fa = w1.run();
    let fb = r.run();
    if let Some(f) = if dry { Some(fb) } else { Some(fa) } {
        f.await?;
    }
    let fc = w2.run();
    let fd = r.run();
    let (f, _) = if dry { (fd, 1) } else { (fc, 2) };
    f.await?;
    let fe = w3.run();
    let ff = r.run();
    if let Some(Some(f)) = vec![Some(fe), Some(ff)].into_iter().next() {
        f.await?;
    }
    let fg = w4.run();
    let fh = r.run();
    if let Some(f) = vec![Box::pin(fg), Box::pin(fh)].into_iter().next() {
        f.await?;
    }
    let fi = w5.run();
    let fj = r.run();
    let [first, _] = [Pending { f: fi }, Pending { f: fj }];
    first.f.await?;
    let fk = r.run();
    let fl = w6.run();
    let mut slot = Some(fk);
    slot = Some(fl);
    if let Some(f) = slot {
        f.await?;
    }
    let fm = r.run();
    let fn_ = w6.run();
    let (tx, rx) = std::sync::mpsc::channel();
    tx.send(fm).unwrap_or_default();
    tx.send(fn_).unwrap_or_default();
    drop(tx);
    let _ = rx.try_iter().count();
    let mut pushed = Vec::new();
    Vec::push(&mut pushed, w7.run());
    Vec::push(&mut pushed, r.run());
    let fo = w8.run();
    let fp = r.run();
    Vec::push(&mut pushed, fo);
    <Vec<_>>::push(&mut pushed, fp);
    for (i, f) in pushed.into_iter().enumerate() {
        if i % 2 == 0 {
            f.await?;
        }
    }
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}

#[tokio::test(start_paused = true)]
async fn futures_bound_by_lets_that_meet_inside_values_compile_and_run_as_written() {
    sweep_leaving(
        "lets that meet, wrapped",
        &["('wrap-"],
        |db, effects| async move {
            effects.push("wrapped");
            lets_that_meet_wrapped(&db, false).await
        },
    )
    .await;
}

/// Places that hold a future and take another's by a storing call: `mem::replace` of a
/// slot, `Option::replace` by its path and as a method, `Vec::push` by its path through a
/// `&mut` binding. Each was E0308 (the slot's own future was rewritten, the one handed
/// over left as written); both are now left as written.
#[d1_retry(policy = NO_BUDGET)]
#[allow(clippy::vec_init_then_push)]
async fn places_that_meet(db: &D1Database) -> Result<i64, Error> {
    let w = [
        db.prepare("INSERT INTO orders (item) VALUES ('place-1')"),
        db.prepare("INSERT INTO orders (item) VALUES ('place-2')"),
        db.prepare("INSERT INTO orders (item) VALUES ('place-3')"),
        db.prepare("INSERT INTO orders (item) VALUES ('place-4')"),
    ];
    let [w1, w2, w3, w4] = &w;
    let r = db.prepare("SELECT count(*) AS place FROM audit");
    let mut current = r.run();
    let before = std::mem::replace(&mut current, w1.run());
    drop(before);
    current.await?;
    let mut slot = Some(r.run());
    Option::replace(&mut slot, w2.run());
    if let Some(f) = slot {
        f.await?;
    }
    let mut other = Some(r.run());
    other.replace(w3.run());
    if let Some(f) = other {
        f.await?;
    }
    let mut pushed = Vec::new();
    let list = &mut pushed;
    Vec::push(list, w4.run());
    Vec::push(list, r.run());
    if let Some(f) = pushed.into_iter().next() {
        f.await?;
    }
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}

#[tokio::test(start_paused = true)]
async fn places_that_take_another_future_compile_and_run_as_written() {
    sweep_leaving(
        "places that meet",
        &["('place-"],
        |db, effects| async move {
            effects.push("placed");
            places_that_meet(&db).await
        },
    )
    .await;
}

/// Functions of a module, of `Self` or of a type by its name that take a `&mut` and only
/// run the future they are handed are no storing methods: the reads handed to them stay retried (a first version
/// of the rule for methods called by their path left them as written, and they lost their
/// retries).
mod metrics {
    pub async fn timed<F: core::future::Future>(calls: &mut u32, run: F) -> F::Output {
        *calls += 1;
        run.await
    }
}

struct Timing {
    db: D1Database,
    calls: u32,
}

impl Timing {
    async fn time<F: Future>(calls: &mut u32, run: F) -> F::Output {
        *calls += 1;
        run.await
    }

    async fn drive<F: Future + Unpin>(run: &mut F, calls: &mut u32) -> F::Output {
        *calls += 1;
        run.await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn reads(&mut self) -> Result<i64, Error> {
        let stmt = self.db.prepare(READ_N);
        let a = metrics::timed(&mut self.calls, stmt.first::<Count>(None)).await?;
        let stored = stmt.first::<Count>(None);
        let b = Self::time(&mut self.calls, stored).await?;
        let c = Self::time(&mut self.calls, stmt.first::<Count>(None)).await?;
        // By the type's name, and a future handed over by its own `&mut` (a function of the
        // type that borrows a place is no storing method: helper-44 found these left as
        // written by a rule that took any `Type::f(&mut x, ..)` for one).
        let d = Timing::time(&mut self.calls, stmt.first::<Count>(None)).await?;
        let e = <Self>::time(&mut self.calls, stmt.first::<Count>(None)).await?;
        let mut read = Box::pin(stmt.first::<Count>(None));
        let f = Timing::drive(&mut read, &mut self.calls).await?;
        Ok(n(a) + n(b) + n(c) + n(d) + n(e) + n(f) + i64::from(self.calls))
    }
}

#[tokio::test(start_paused = true)]
async fn reads_handed_to_functions_taking_mut_stay_retried() {
    sweep("functions taking &mut", |db, effects| async move {
        effects.push("timed");
        Timing { db, calls: 0 }.reads().await
    })
    .await;
}

/// Stored futures whose names are bound again, or used for other values, where a value
/// must have one type: the name that meets is not the future's, which stays retried.
/// Names are matched without scopes, so a future is left as written only when its name is
/// bound by one pattern in the whole body. (A first version of the rule left each of these
/// reads and the insert as written, and they lost their retries.)
#[d1_retry(policy = NO_BUDGET)]
#[allow(clippy::let_and_return)]
async fn names_reused(db: &D1Database, out: &mut Vec<i64>) -> Result<i64, Error> {
    let stmt = db.prepare(READ_N);
    // Shadowed by its result, which is pushed.
    let row = stmt.first::<Count>(None);
    let row = n(row.await?);
    out.push(row);
    // Reused for another value, which is pushed.
    let insert = db.prepare("INSERT INTO orders (item) VALUES ('reused')");
    let r = insert.run();
    r.await?;
    let r = 5;
    out.push(r);
    // The same name as a loop's variable and a closure's parameter.
    let each = stmt.first::<Count>(None);
    let counted = n(each.await?);
    for each in [1, 2] {
        out.push(each);
    }
    [3, 4].into_iter().for_each(|each| out.push(each));
    // An arm's value of the same name.
    let v = stmt.first::<Count>(None);
    let v = n(v.await?);
    let chosen = match counted {
        0 => v,
        _ => 7,
    };
    Ok(row + chosen)
}

#[tokio::test(start_paused = true)]
async fn stored_futures_whose_names_meet_as_other_values_stay_retried() {
    sweep("names reused", |db, _effects| async move {
        let mut out = Vec::new();
        let n = names_reused(&db, &mut out).await?;
        Ok::<_, Error>((n, out))
    })
    .await;
}
