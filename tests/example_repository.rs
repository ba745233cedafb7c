//! The example Worker's repository, `examples/worker/src/shop.rs`, compiled unchanged
//! against the local D1 of `d1_retry::testing` and driven through every documented D1
//! failure, on every method, before and after the statement runs.
//!
//! The file is the one `scripts/e2e.sh` builds for wasm32 and serves from a real workerd;
//! here it is included as is, so what these tests check is what the Worker runs. Each case
//! starts from a fresh database made from the example's own migration, injects one
//! failure into the method's D1 call, and checks four things that each depend on the
//! retry decision: the value or error the caller got, the calls in the journal, the
//! virtual time waited (tokio's paused clock), and what the database holds afterwards.
//!
//! The expectations of the one-call methods are written per D1 call, so they hold whether
//! `#[d1_retry]` retries a whole body or each call in it. `place_items` makes several
//! calls (a read, one insert per item, a read) and shows each retried on its own: the
//! failed call alone is made again, a completed one never, and the calls share 4 retries.
//! The bounded methods (`find_user_bounded`, `place_order_bounded`) meet the kit's stalling
//! faults: a stalled attempt is cut by the attempt timeout, a read retried, a write handed
//! back as a timeout and in the database at most once, and the deadline ends the call.

#[path = "../examples/worker/src/shop.rs"]
mod shop;

/// What `shop.rs` takes from its crate: the retry schedule. The Worker's `policy.rs`
/// switches on a `fast-retries` feature this crate does not have, so the schedule is
/// restated: the default one (waits cost nothing on a paused clock), without the retry
/// budget, because a budget shared by the whole test process would make one case's
/// failures change another's retries. `count_users` keeps the default budget, as on the
/// Worker; its test refills the pool before each case.
mod policy {
    pub const POLICY: d1_retry::RetryPolicy = d1_retry::RetryPolicy::DEFAULT.without_budget();
}

use core::fmt::Debug;
use core::time::Duration;

use d1_retry::testing::{Call, D1Database, Fault, Message, Operation, Timing};
use d1_retry::{FailureClass, RetryBudget};
use test_support::Logs;
use tokio::time::Instant;

use shop::{NewOrder, Shop, User};

const MIGRATION: &str = include_str!("../examples/worker/migrations/0001_users_and_orders.sql");

/// Two users, and two orders of the first: what every case starts from.
const SEED: &str = "
    INSERT INTO users (id, email, name) VALUES (1, 'ada@x', 'Ada'), (2, 'grace@x', 'Grace');
    INSERT INTO orders (id, user_id, item, quantity) VALUES (1, 1, 'book', 1), (2, 1, 'lamp', 2);
";

/// The first retry waits 200 ms, jittered to 80-120 %.
const FIRST_WAIT: core::ops::RangeInclusive<Duration> =
    Duration::from_millis(160)..=Duration::from_millis(240);

/// Five attempts: four waits of 200, 400, 800 and 1600 ms, each jittered to 80-120 %.
const FOUR_WAITS: core::ops::RangeInclusive<Duration> =
    Duration::from_millis(2400)..=Duration::from_millis(3600);

type Users = Vec<(i64, String, String)>;
type Orders = Vec<(i64, i64, String, i64)>;

fn database() -> D1Database {
    let db = D1Database::open_in_memory().unwrap();
    db.with_connection(|c| c.execute_batch(MIGRATION))
        .expect("the example's migration applies");
    db.with_connection(|c| c.execute_batch(SEED)).unwrap();
    db
}

/// Every row, read behind the kit's back.
fn contents(db: &D1Database) -> (Users, Orders) {
    db.with_connection(|c| {
        let users = c
            .prepare("SELECT id, email, name FROM users ORDER BY id")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        let orders = c
            .prepare("SELECT id, user_id, item, quantity FROM orders ORDER BY id")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<Result<_, _>>()?;
        Ok::<_, rusqlite::Error>((users, orders))
    })
    .unwrap()
}

fn seeded() -> (Users, Orders) {
    contents(&database())
}

/// How a method's one D1 call may be repeated, from `shop.rs`'s SQL and attributes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Access {
    /// Only reads.
    Read,
    /// May write, so runs at most once unless D1 says it never ran.
    Write,
    /// Declared `idempotent`: running it twice leaves what running it once leaves.
    Idempotent,
    /// May write, through `first` or `raw`, which decode the rows in the same call: its
    /// error may be a row's own text, whatever it says, so it runs once.
    DecodedWrite,
}

/// The rule under test, stated independently of d1-retry's code: failures that never
/// reached D1 are retried for every call; failures that may have run, only for calls that
/// can run twice safely; permanent failures never.
fn retried(message: Message, access: Access) -> bool {
    if access == Access::DecodedWrite {
        return false;
    }
    match message.documented_class() {
        Some(FailureClass::NotExecuted) => true,
        Some(FailureClass::MaybeExecuted) => access != Access::Write,
        Some(FailureClass::Permanent) => false,
        other => panic!("{message:?} has no documented class: {other:?}"),
    }
}

/// One injected failure: a documented message, before or after the statement runs.
#[derive(Clone, Copy, Debug)]
struct Case {
    message: Message,
    timing: Timing,
}

/// Every documented message, in all three classes, before and after execution.
///
/// A *not executed* message after execution is D1 breaking its own contract (it says the
/// statement never ran, and it did). It is included so that the tests state what d1-retry
/// does then: it trusts the documentation and retries, even a write, which therefore runs
/// twice. Those expectations are marked `contract broken`.
fn cases() -> Vec<Case> {
    let cases: Vec<Case> = Message::DOCUMENTED
        .into_iter()
        .flat_map(|message| {
            [Timing::BeforeExecution, Timing::AfterExecution].map(|timing| Case { message, timing })
        })
        .collect();
    assert_eq!(cases.len(), 26);
    for class in [
        FailureClass::NotExecuted,
        FailureClass::MaybeExecuted,
        FailureClass::Permanent,
    ] {
        assert!(
            cases
                .iter()
                .any(|case| case.message.documented_class() == Some(class))
        );
    }
    cases
}

/// What one call of a method did.
struct Run<T> {
    result: shop::Result<T>,
    calls: Vec<Call>,
    waited: Duration,
    db: D1Database,
}

/// Runs `method` once on a fresh database whose plan fails the method's first D1 call
/// with `fault` (if any).
async fn drive<T>(fault: Option<Fault>, method: impl AsyncFn(&Shop) -> shop::Result<T>) -> Run<T> {
    let db = database();
    if let Some(fault) = fault {
        db.add_fault(fault);
    }
    let shop = Shop::new(db.clone());
    let start = Instant::now();
    let result = method(&shop).await;
    Run {
        result,
        calls: db.calls(),
        waited: start.elapsed(),
        db,
    }
}

/// Runs `method` with `case` injected once into its `operation`, and checks the attempts:
/// one call without a retry, two with one (the first failed by the fault, the second
/// clean), every call the method's own statement, and the wait between them. Returns the
/// run and whether it was retried.
async fn run_case<T>(
    case: Case,
    operation: Operation,
    access: Access,
    sql: &str,
    method: impl AsyncFn(&Shop) -> shop::Result<T>,
) -> (Run<T>, bool) {
    let fault = Fault::new(case.message)
        .timing(case.timing)
        .on(operation)
        .times(1);
    let run = drive(Some(fault), method).await;
    let retried = retried(case.message, access);
    let attempts = if retried { 2 } else { 1 };
    assert_eq!(run.calls.len(), attempts, "{case:?}: {:#?}", run.calls);
    for call in &run.calls {
        assert_eq!(call.operation, operation, "{case:?}");
        assert!(
            call.statements.iter().all(|(text, _)| text.contains(sql)),
            "{case:?}: {:?}",
            call.statements
        );
    }
    assert_eq!(
        run.calls[0].injected,
        Some((case.message, case.timing)),
        "{case:?}"
    );
    if retried {
        assert_eq!(run.calls[1].injected, None, "{case:?}");
        assert!(
            FIRST_WAIT.contains(&run.waited),
            "{case:?}: {:?}",
            run.waited
        );
    } else {
        assert_eq!(run.waited, Duration::ZERO, "{case:?}");
    }
    (run, retried)
}

/// The caller got the injected failure itself, unchanged.
fn assert_injected<T: Debug>(result: &shop::Result<T>, case: Case) {
    let error = result.as_ref().expect_err("the injected failure");
    let expected = format!("D1_ERROR: {}", case.message.text());
    assert!(
        error.to_string().starts_with(&expected),
        "{case:?}: {error}"
    );
    assert_eq!(error.injected(), Some(case.timing), "{case:?}");
}

/// A transient failure on every attempt: five calls, four waits, then the last error.
async fn assert_gives_up<T: Debug>(
    message: Message,
    operation: Operation,
    method: impl AsyncFn(&Shop) -> shop::Result<T>,
) -> Run<T> {
    let run = drive(Some(Fault::new(message).on(operation)), method).await;
    assert_eq!(run.calls.len(), 5, "{message:?}");
    assert!(run.calls.iter().all(|call| call.injected.is_some()));
    assert!(FOUR_WAITS.contains(&run.waited), "{:?}", run.waited);
    assert_injected(
        &run.result,
        Case {
            message,
            timing: Timing::BeforeExecution,
        },
    );
    run
}

fn ada() -> (i64, String, String) {
    (1, "ada@x".into(), "Ada".into())
}

fn assert_is_ada(user: Option<&User>) {
    let user = user.expect("user 1 exists");
    assert_eq!((user.id, user.email.clone(), user.name.clone()), ada());
}

#[tokio::test(start_paused = true)]
async fn find_user_reads_through_every_transient_failure() {
    let sql = "FROM users WHERE id = ?1";
    let clean = drive(None, async |shop| shop.find_user(1).await).await;
    assert_is_ada(clean.result.unwrap().as_ref());
    assert_eq!((clean.calls.len(), clean.waited), (1, Duration::ZERO));
    // The id is bound as a JS number, as on a Worker.
    assert_eq!(
        clean.calls[0].statements[0].1,
        [d1_retry::testing::Value::Real(1.0)]
    );

    for case in cases() {
        let (run, retried) = run_case(case, Operation::First, Access::Read, sql, async |shop| {
            shop.find_user(1).await
        })
        .await;
        if retried {
            assert_is_ada(run.result.as_ref().unwrap().as_ref());
        } else {
            assert_injected(&run.result, case);
        }
        assert_eq!(contents(&run.db), seeded(), "{case:?}");
    }
    assert_gives_up(
        Message::NetworkConnectionLost,
        Operation::First,
        async |shop| shop.find_user(1).await,
    )
    .await;
}

/// `user_orders` chooses its statement by `match`: both arms read, so whichever ran is
/// made again after any transient failure, the one over several lines with a comment
/// across two included.
#[tokio::test(start_paused = true)]
async fn user_orders_reads_through_every_transient_failure() {
    // Each arm: the item filter, a fragment of its SQL, the rows it reads.
    type Row = (i64, i64, &'static str, i64);
    let arms: [(Option<&str>, &str, &[Row]); 2] = [
        (
            None,
            "FROM orders /* a user's orders, in the order\n",
            &[(1, 1, "book", 1), (2, 1, "lamp", 2)],
        ),
        (Some("lamp"), "AND item = ?2", &[(2, 1, "lamp", 2)]),
    ];
    for (item, sql, expected) in arms {
        let check = |orders: &[shop::Order]| {
            let rows: Vec<(i64, i64, &str, i64)> = orders
                .iter()
                .map(|o| (o.id, o.user_id, o.item.as_str(), o.quantity))
                .collect();
            assert_eq!(rows, expected, "{item:?}");
        };
        let clean = drive(None, async |shop| shop.user_orders(1, item).await).await;
        check(&clean.result.unwrap());
        assert_eq!(clean.calls.len(), 1);

        for case in cases() {
            let (run, retried) = run_case(case, Operation::All, Access::Read, sql, async |shop| {
                shop.user_orders(1, item).await
            })
            .await;
            if retried {
                check(run.result.as_ref().unwrap());
            } else {
                assert_injected(&run.result, case);
            }
            assert_eq!(contents(&run.db), seeded(), "{item:?} {case:?}");
        }
        assert_gives_up(Message::InternalError, Operation::All, async |shop| {
            shop.user_orders(1, item).await
        })
        .await;
    }
}

/// `count_users` has the default schedule and the default, process-wide retry budget.
/// Only this test uses that budget; it refills it before each case so that no case runs
/// with a budget drained by the ones before.
#[tokio::test(start_paused = true)]
async fn count_users_reads_through_every_transient_failure() {
    let sql = "SELECT COUNT(*) AS n FROM users";
    RetryBudget::DEFAULT.refill();
    let clean = drive(None, async |shop| shop.count_users().await).await;
    assert_eq!(clean.result.unwrap(), 2);
    assert_eq!(clean.calls.len(), 1);

    for case in cases() {
        RetryBudget::DEFAULT.refill();
        let (run, retried) = run_case(case, Operation::First, Access::Read, sql, async |shop| {
            shop.count_users().await
        })
        .await;
        if retried {
            assert_eq!(*run.result.as_ref().unwrap(), 2, "{case:?}");
        } else {
            assert_injected(&run.result, case);
        }
        assert_eq!(contents(&run.db), seeded(), "{case:?}");
    }
    RetryBudget::DEFAULT.refill();
    assert_gives_up(Message::CannotResolve, Operation::First, async |shop| {
        shop.count_users().await
    })
    .await;
}

/// `order_count`'s statement is made by a helper, out of the attribute's sight: the SQL it
/// holds is read when the call begins, a read, so it is made again after every transient
/// failure, as a read whose SQL is in sight.
#[tokio::test(start_paused = true)]
async fn order_count_of_a_helper_s_statement_reads_through_every_transient_failure() {
    let sql = "SELECT COUNT(*) AS n FROM orders WHERE user_id = ?1";
    let orders_of_1 = seeded().1.iter().filter(|order| order.1 == 1).count() as i64;
    let clean = drive(None, async |shop| shop.order_count(1).await).await;
    assert_eq!(clean.result.unwrap(), orders_of_1);
    for case in cases() {
        let (run, retried) = run_case(case, Operation::First, Access::Read, sql, async |shop| {
            shop.order_count(1).await
        })
        .await;
        if retried {
            assert_eq!(*run.result.as_ref().unwrap(), orders_of_1, "{case:?}");
        } else {
            assert_injected(&run.result, case);
        }
        assert_eq!(contents(&run.db), seeded(), "{case:?}");
    }
}

/// `place_prepared_order`'s insert is made by a helper too: read when the call begins, it
/// is a write, applied once after a failure that may have run it.
#[tokio::test(start_paused = true)]
async fn place_prepared_order_of_a_helper_s_statement_runs_once_whatever_fails() {
    let sql = "INSERT INTO orders (user_id, item, quantity)";
    let kettle = NewOrder {
        item: "kettle".into(),
        quantity: 1,
    };
    let kettles = |run: &Run<i64>| {
        let (_, orders) = contents(&run.db);
        orders.iter().filter(|order| order.2 == "kettle").count()
    };
    for case in cases() {
        let (run, retried) = run_case(case, Operation::Run, Access::Write, sql, async |shop| {
            shop.place_prepared_order(2, &kettle).await
        })
        .await;
        if !retried {
            assert_injected(&run.result, case);
        }
        let after = case.timing == Timing::AfterExecution;
        let expected = usize::from(after) + usize::from(retried);
        assert_eq!(kettles(&run), expected, "{case:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn create_user_runs_once_whatever_fails() {
    let sql = "INSERT INTO users (email, name)";
    let created = |run: &Run<i64>| {
        contents(&run.db)
            .0
            .iter()
            .filter(|user| user.1 == "new@x")
            .count()
    };
    let clean = drive(None, async |shop| shop.create_user("new@x", "New").await).await;
    assert_eq!(*clean.result.as_ref().unwrap(), 3);
    assert_eq!((clean.calls.len(), created(&clean)), (1, 1));

    for case in cases() {
        let (run, retried) = run_case(case, Operation::Run, Access::Write, sql, async |shop| {
            shop.create_user("new@x", "New").await
        })
        .await;
        match (retried, case.timing) {
            // Never reached D1: retried, created once, and the caller gets the new id.
            (true, Timing::BeforeExecution) => {
                assert_eq!(*run.result.as_ref().unwrap(), 3, "{case:?}");
            }
            // Contract broken: the first attempt ran, the retry hits the unique email.
            (true, Timing::AfterExecution) => {
                let error = run.result.as_ref().unwrap_err().to_string();
                assert!(
                    error.contains("UNIQUE constraint failed: users.email"),
                    "{error}"
                );
            }
            // May have run (or permanent): not retried; the caller gets the failure.
            (false, _) => assert_injected(&run.result, case),
        }
        let expected = usize::from(case.timing == Timing::AfterExecution || retried);
        assert_eq!(created(&run), expected, "{case:?}");
        let (mut users, orders) = contents(&run.db);
        users.retain(|user| user.1 != "new@x");
        assert_eq!((users, orders), seeded(), "{case:?}");
    }

    // The database's own refusal is permanent: one call, nothing written.
    let duplicate = drive(None, async |shop| {
        shop.create_user("ada@x", "Ada again").await
    })
    .await;
    let error = duplicate.result.unwrap_err().to_string();
    assert!(error.contains("UNIQUE constraint failed"), "{error}");
    assert_eq!(
        (duplicate.calls.len(), duplicate.waited),
        (1, Duration::ZERO)
    );
    assert_eq!(contents(&duplicate.db), seeded());

    let gave_up = assert_gives_up(
        Message::TooManyRequestsQueued,
        Operation::Run,
        async |shop| shop.create_user("new@x", "New").await,
    )
    .await;
    assert_eq!(created(&gave_up), 0);
}

#[tokio::test(start_paused = true)]
async fn save_user_is_idempotent_so_it_is_retried_like_a_read() {
    let sql = "ON CONFLICT (id) DO UPDATE";
    let grace = User {
        id: 2,
        email: "grace@y".into(),
        name: "Grace Hopper".into(),
    };
    let saved = || {
        let (mut users, orders) = seeded();
        users[1] = (2, "grace@y".into(), "Grace Hopper".into());
        (users, orders)
    };
    let clean = drive(None, async |shop| shop.save_user(&grace).await).await;
    clean.result.unwrap();
    assert_eq!(contents(&clean.db), saved());
    assert_eq!(clean.calls.len(), 1);

    for case in cases() {
        let (run, retried) = run_case(
            case,
            Operation::Run,
            Access::Idempotent,
            sql,
            async |shop| shop.save_user(&grace).await,
        )
        .await;
        if retried {
            run.result.as_ref().unwrap();
        } else {
            assert_injected(&run.result, case);
        }
        // The upsert ran once per attempt that reached the database, and the rows are
        // those of one run however many ran.
        let ran = run.calls.iter().filter(|call| call.executed).count();
        let expected_runs =
            usize::from(case.timing == Timing::AfterExecution) + usize::from(retried);
        assert_eq!(ran, expected_runs, "{case:?}");
        let expected = if ran > 0 { saved() } else { seeded() };
        assert_eq!(contents(&run.db), expected, "{case:?}");
    }
    assert_gives_up(Message::ReplicaDisconnected, Operation::Run, async |shop| {
        shop.save_user(&grace).await
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn place_order_runs_once_whatever_fails() {
    let sql = "INSERT INTO orders (user_id, item, quantity)";
    let pen = NewOrder {
        item: "pen".into(),
        quantity: 3,
    };
    let pens = |run: &Run<i64>| {
        let (users, orders) = contents(&run.db);
        assert_eq!(users, seeded().0);
        let (placed, others): (Vec<_>, Vec<_>) =
            orders.into_iter().partition(|order| order.2 == "pen");
        assert_eq!(others, seeded().1);
        assert!(placed.iter().all(|order| (order.1, order.3) == (2, 3)));
        placed.len()
    };
    let clean = drive(None, async |shop| shop.place_order(2, &pen).await).await;
    assert_eq!(*clean.result.as_ref().unwrap(), 3);
    assert_eq!((clean.calls.len(), pens(&clean)), (1, 1));

    for case in cases() {
        let (run, retried) = run_case(case, Operation::Run, Access::Write, sql, async |shop| {
            shop.place_order(2, &pen).await
        })
        .await;
        let after = case.timing == Timing::AfterExecution;
        if retried {
            // The id of the row the successful attempt inserted.
            let id = if after { 4 } else { 3 };
            assert_eq!(*run.result.as_ref().unwrap(), id, "{case:?}");
        } else {
            assert_injected(&run.result, case);
        }
        // Applied exactly once after a failure that may have run; twice only when D1
        // breaks its contract (a not-executed failure after it ran).
        let expected = usize::from(after) + usize::from(retried);
        assert_eq!(pens(&run), expected, "{case:?}");
    }

    // A CHECK constraint is permanent: one call, nothing written.
    let none = NewOrder {
        item: "pen".into(),
        quantity: 0,
    };
    let refused = drive(None, async |shop| shop.place_order(2, &none).await).await;
    let error = refused.result.as_ref().unwrap_err().to_string();
    assert!(error.contains("CHECK constraint failed"), "{error}");
    assert_eq!((refused.calls.len(), pens(&refused)), (1, 0));

    let gave_up = assert_gives_up(Message::StartupReset, Operation::Run, async |shop| {
        shop.place_order(2, &pen).await
    })
    .await;
    assert_eq!(pens(&gave_up), 0);
}

#[tokio::test(start_paused = true)]
async fn place_orders_batch_runs_once_whatever_fails() {
    let sql = "INSERT INTO orders (user_id, item, quantity)";
    let orders = [
        NewOrder {
            item: "ink".into(),
            quantity: 1,
        },
        NewOrder {
            item: "pad".into(),
            quantity: 2,
        },
    ];
    // How many times the whole batch was applied; a batch is never half applied.
    let applied = |run: &Run<usize>| {
        let (users, rows) = contents(&run.db);
        assert_eq!(users, seeded().0);
        let inks = rows.iter().filter(|order| order.2 == "ink").count();
        let pads = rows.iter().filter(|order| order.2 == "pad").count();
        assert_eq!(inks, pads, "half a batch");
        assert_eq!(rows.len(), seeded().1.len() + inks + pads);
        inks
    };
    let clean = drive(None, async |shop| shop.place_orders(2, &orders).await).await;
    assert_eq!(*clean.result.as_ref().unwrap(), 2);
    assert_eq!((clean.calls.len(), applied(&clean)), (1, 1));
    assert_eq!(clean.calls[0].statements.len(), 2);

    for case in cases() {
        let (run, retried) = run_case(case, Operation::Batch, Access::Write, sql, async |shop| {
            shop.place_orders(2, &orders).await
        })
        .await;
        if retried {
            assert_eq!(*run.result.as_ref().unwrap(), 2, "{case:?}");
        } else {
            assert_injected(&run.result, case);
        }
        let expected = usize::from(case.timing == Timing::AfterExecution) + usize::from(retried);
        assert_eq!(applied(&run), expected, "{case:?}");
    }

    // One bad order fails the whole batch, permanently: nothing of it is written.
    let bad = [
        NewOrder {
            item: "ink".into(),
            quantity: 1,
        },
        NewOrder {
            item: "pad".into(),
            quantity: -1,
        },
    ];
    let refused = drive(None, async |shop| shop.place_orders(2, &bad).await).await;
    assert!(refused.result.is_err());
    assert_eq!((refused.calls.len(), applied(&refused)), (1, 0));

    let gave_up = assert_gives_up(Message::CannotResolve, Operation::Batch, async |shop| {
        shop.place_orders(2, &orders).await
    })
    .await;
    assert_eq!(applied(&gave_up), 0);
}

#[tokio::test(start_paused = true)]
async fn stats_batch_of_reads_reads_through_every_transient_failure() {
    let sql = "SELECT COUNT(*) AS n FROM";
    let clean = drive(None, async |shop| shop.stats().await).await;
    let stats = clean.result.unwrap();
    assert_eq!((stats.users, stats.orders), (2, 2));
    assert_eq!(clean.calls.len(), 1);

    for case in cases() {
        let (run, retried) = run_case(case, Operation::Batch, Access::Read, sql, async |shop| {
            shop.stats().await
        })
        .await;
        if retried {
            let stats = run.result.as_ref().unwrap();
            assert_eq!((stats.users, stats.orders), (2, 2), "{case:?}");
        } else {
            assert_injected(&run.result, case);
        }
        assert_eq!(contents(&run.db), seeded(), "{case:?}");
    }
    assert_gives_up(Message::CodeUpdated, Operation::Batch, async |shop| {
        shop.stats().await
    })
    .await;
}

/// A method whose statement fails on its own: transient failures are retried as its
/// access allows, and then the caller gets the statement's own permanent error, once.
async fn fails_on_its_own<T: Debug>(
    operation: Operation,
    access: Access,
    sql: &str,
    own_error: &str,
    method: impl AsyncFn(&Shop) -> shop::Result<T> + Copy,
) {
    let clean = drive(None, method).await;
    assert_eq!(clean.result.unwrap_err().to_string(), own_error);
    assert_eq!((clean.calls.len(), clean.waited), (1, Duration::ZERO));

    for case in cases() {
        let (run, retried) = run_case(case, operation, access, sql, method).await;
        if retried {
            let error = run.result.as_ref().unwrap_err();
            assert_eq!(error.to_string(), own_error, "{case:?}");
            assert_eq!(error.injected(), None, "{case:?}");
            assert_eq!(run.calls[1].error.as_deref(), Some(own_error));
        } else {
            assert_injected(&run.result, case);
        }
        assert_eq!(contents(&run.db), seeded(), "{case:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn broken_syntax_is_permanent_and_not_retried() {
    // `SELEC` is no keyword the read-only scanner knows, so it cannot vouch that the
    // statement only reads: d1-retry treats it as a possible write, and since `first`
    // decodes the rows in the same call (its error may be a row's text), does not retry it
    // at all.
    fails_on_its_own(
        Operation::First,
        Access::DecodedWrite,
        "SELEC 1",
        "D1_ERROR: near \"SELEC\": syntax error at offset 0: SQLITE_ERROR",
        async |shop| shop.broken_syntax().await,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn missing_table_is_permanent_and_not_retried() {
    fails_on_its_own(
        Operation::All,
        Access::Read,
        "FROM no_such_table",
        "D1_ERROR: no such table: no_such_table: SQLITE_ERROR",
        async |shop| shop.missing_table().await,
    )
    .await;
}

/// One step of `place_items`: the user read, an insert (named by its item), or the count.
fn step(call: &Call) -> String {
    let (sql, params) = &call.statements[0];
    if call.operation == Operation::Run {
        assert!(sql.contains("INSERT INTO orders"), "{sql}");
        match &params[1] {
            d1_retry::testing::Value::Text(item) => item.clone(),
            other => panic!("an item is text: {other:?}"),
        }
    } else if sql.contains("COUNT(*)") {
        "count".into()
    } else {
        assert!(sql.contains("FROM users WHERE id = ?1"), "{sql}");
        "user".into()
    }
}

/// Every call `place_items` made, in order, with whether a failure was injected into it.
fn steps(calls: &[Call]) -> Vec<(String, bool)> {
    calls
        .iter()
        .map(|call| (step(call), call.injected.is_some()))
        .collect()
}

/// How many orders of user 2 each item has, every other row unchanged.
fn placed(db: &D1Database, items: &[String]) -> Vec<usize> {
    let (users, orders) = contents(db);
    assert_eq!(users, seeded().0);
    let (mine, others): (Vec<_>, Vec<_>) = orders.into_iter().partition(|order| order.1 == 2);
    assert_eq!(others, seeded().1);
    assert!(mine.iter().all(|order| order.3 == 1));
    items
        .iter()
        .map(|item| mine.iter().filter(|order| &order.2 == item).count())
        .collect()
}

fn owned(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

/// Where in `place_items` a failure is injected.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// The first read, of the user.
    User,
    /// The insert of the item at this index (the rule's n-th `INSERT`, from 0).
    Insert(u64),
    /// The last read, of the count.
    Count,
}

/// `place_items` makes five D1 calls: a read, three inserts, a read. Each documented
/// failure, before and after the statement, is injected into each of them in turn; the
/// failed call alone is made again when its access allows, and no completed one ever is.
#[tokio::test(start_paused = true)]
async fn place_items_retries_each_call_on_its_own() {
    let items = owned(&["pen", "ink", "pad"]);
    let plan = ["user", "pen", "ink", "pad", "count"];

    let clean = drive(None, async |shop| shop.place_items(2, &items).await).await;
    assert_eq!(*clean.result.as_ref().unwrap(), 3);
    assert_eq!(
        steps(&clean.calls),
        plan.map(|step| (step.to_owned(), false))
    );
    assert_eq!(clean.waited, Duration::ZERO);
    assert_eq!(placed(&clean.db, &items), [1, 1, 1]);

    let unknown = drive(None, async |shop| shop.place_items(9, &items).await).await;
    assert_eq!(unknown.result.unwrap_err().to_string(), "no such user");
    assert_eq!(steps(&unknown.calls), [("user".to_owned(), false)]);
    assert_eq!(placed(&unknown.db, &items), [0, 0, 0]);

    for target in [
        Target::User,
        Target::Insert(0),
        Target::Insert(1),
        Target::Insert(2),
        Target::Count,
    ] {
        let (at, access) = match target {
            Target::User => (0, Access::Read),
            Target::Insert(n) => (1 + n as usize, Access::Write),
            Target::Count => (4, Access::Read),
        };
        for case in cases() {
            let fault = Fault::new(case.message).timing(case.timing);
            let fault = match target {
                Target::User => fault
                    .on(Operation::First)
                    .when_sql_contains("FROM users")
                    .times(1),
                Target::Insert(n) => fault
                    .on(Operation::Run)
                    .when_sql_contains("INSERT INTO orders")
                    .on_calls(n..n + 1),
                Target::Count => fault
                    .on(Operation::First)
                    .when_sql_contains("COUNT(*)")
                    .times(1),
            };
            let (logs, _guard) = Logs::capture();
            let run = drive(Some(fault), async |shop| shop.place_items(2, &items).await).await;
            let lines: Vec<String> = logs
                .lines()
                .into_iter()
                .filter(|line| line.contains("d1.operation=Shop::place_items"))
                .collect();
            let retried = retried(case.message, access);
            let after = case.timing == Timing::AfterExecution;
            let label = format!("{target:?}, {case:?}");

            // The calls: those before the target once, the target failed, then (only if
            // retried) the target again and the rest.
            let mut expected: Vec<(String, bool)> = plan[..=at]
                .iter()
                .map(|step| ((*step).to_owned(), false))
                .collect();
            expected[at].1 = true;
            if retried {
                expected.extend(plan[at..].iter().map(|step| ((*step).to_owned(), false)));
            }
            assert_eq!(steps(&run.calls), expected, "{label}");

            // Each item: once when the call reached it, twice only when D1 broke its
            // contract (a not-executed failure after the insert ran, retried).
            let rows: Vec<usize> = (1..=3)
                .map(|k| match k.cmp(&at) {
                    core::cmp::Ordering::Less => 1,
                    core::cmp::Ordering::Equal => usize::from(after) + usize::from(retried),
                    core::cmp::Ordering::Greater => usize::from(retried),
                })
                .collect();
            assert_eq!(placed(&run.db, &items), rows, "{label}");

            let read_only = format!("d1.read_only={}", access == Access::Read);
            if retried {
                let count = 3 + i64::from(after && access == Access::Write);
                assert_eq!(*run.result.as_ref().unwrap(), count, "{label}");
                assert!(
                    FIRST_WAIT.contains(&run.waited),
                    "{label}: {:?}",
                    run.waited
                );
                let [line] = lines.as_slice() else {
                    panic!("{label}: {lines:#?}")
                };
                assert!(line.contains("D1 transient failure, retrying"), "{line}");
                assert!(line.contains(&read_only), "{line}");
                assert!(line.contains("d1.attempt=1 "), "{line}");
            } else {
                assert_injected(&run.result, case);
                assert_eq!(run.waited, Duration::ZERO, "{label}");
                let withheld = match case.message.documented_class() {
                    Some(FailureClass::Permanent) => "permanent",
                    _ => "maybe_executed_write",
                };
                let [line] = lines.as_slice() else {
                    panic!("{label}: {lines:#?}")
                };
                assert!(line.contains("D1 failure, not retried"), "{line}");
                assert!(
                    line.contains(&format!("d1.withheld=\"{withheld}\"")),
                    "{label}: {line}"
                );
                assert!(line.contains(&read_only), "{line}");
            }
        }
    }
}

/// The calls of one `place_items` share the policy's 4 retries: when every insert fails
/// once before reaching D1, the first four items are retried and placed, and the fifth
/// item's failure reaches the caller, with the sixth never tried.
#[tokio::test(start_paused = true)]
async fn place_items_shares_four_retries_across_its_inserts() {
    let items = owned(&["a", "b", "c", "d", "e", "f"]);
    let fault = Fault::new(Message::TooManyRequestsQueued)
        .on(Operation::Run)
        .when_sql_contains("INSERT INTO orders")
        .when({
            // Counts only the inserts: the first attempt of each (1st, 3rd, ...) fails.
            let mut inserts = 0u64;
            move |_| {
                inserts += 1;
                inserts % 2 == 1
            }
        });
    let (logs, _guard) = Logs::capture();
    let run = drive(Some(fault), async |shop| shop.place_items(2, &items).await).await;
    assert_injected(
        &run.result,
        Case {
            message: Message::TooManyRequestsQueued,
            timing: Timing::BeforeExecution,
        },
    );
    let expected: Vec<(String, bool)> = [
        ("user", false),
        ("a", true),
        ("a", false),
        ("b", true),
        ("b", false),
        ("c", true),
        ("c", false),
        ("d", true),
        ("d", false),
        ("e", true),
    ]
    .map(|(step, failed)| (step.to_owned(), failed))
    .into();
    assert_eq!(steps(&run.calls), expected);
    assert_eq!(placed(&run.db, &items), [1, 1, 1, 1, 0, 0]);
    // The n-th retry of the call waits the schedule's n-th delay, whichever insert it is.
    assert!(FOUR_WAITS.contains(&run.waited), "{:?}", run.waited);
    let text = logs.text();
    assert_eq!(
        text.matches("D1 transient failure, retrying").count(),
        4,
        "{text}"
    );
    assert_eq!(text.matches("d1.attempt=1 ").count(), 5, "{text}");
    assert!(text.contains("d1.withheld=\"exhausted\""), "{text}");

    // Every insert failing every time: the first one takes all four retries.
    let run = drive(
        Some(
            Fault::new(Message::CannotResolve)
                .on(Operation::Run)
                .when_sql_contains("INSERT INTO orders"),
        ),
        async |shop| shop.place_items(2, &items).await,
    )
    .await;
    assert!(run.result.is_err());
    let mut expected = vec![("user".to_owned(), false)];
    expected.extend(core::iter::repeat_n(("a".to_owned(), true), 5));
    assert_eq!(steps(&run.calls), expected);
    assert_eq!(placed(&run.db, &items), [0; 6]);
    assert!(FOUR_WAITS.contains(&run.waited), "{:?}", run.waited);
}

// ---------------------------------------------------------------------------------------
// Stalls (issue 12): `find_user_bounded` and `place_order_bounded` carry
// `attempt_timeout_ms = 1000, deadline_ms = 4000`. The kit's stalling faults hang a call on
// tokio's paused clock, so the limits hold to the millisecond. One difference from a
// Worker: the kit cancels a call dropped during a stall before execution (it never runs),
// where D1 may still run it later; either way a timed-out write is in the database at most
// once, because d1-retry never runs it again. (The end-to-end tests show the late landing
// on the real D1.)

const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(1000);
const DEADLINE: Duration = Duration::from_millis(4000);
const STALL: Duration = Duration::from_secs(30);

fn timed_out(operation: &str, limit: &str, ms: u64) -> String {
    format!("D1 call timed out: Shop::{operation} passed its {limit} of {ms} ms")
}

/// The `d1_retry_runtime::log` lines of one operation.
fn lines_of(logs: &Logs, operation: &str) -> Vec<String> {
    let field = format!("d1.operation=Shop::{operation}");
    logs.lines()
        .into_iter()
        .filter(|line| line.contains(&field))
        .collect()
}

fn pen() -> NewOrder {
    NewOrder {
        item: "pen".into(),
        quantity: 3,
    }
}

/// How many `pen` orders the database holds, every other row unchanged.
fn pens(db: &D1Database) -> usize {
    let (users, orders) = contents(db);
    assert_eq!(users, seeded().0);
    let (placed, others): (Vec<_>, Vec<_>) = orders.into_iter().partition(|order| order.2 == "pen");
    assert_eq!(others, seeded().1);
    placed.len()
}

#[tokio::test(start_paused = true)]
async fn find_user_bounded_cuts_a_stalled_attempt_and_retries() {
    let clean = drive(None, async |shop| shop.find_user_bounded(1).await).await;
    assert_is_ada(clean.result.unwrap().as_ref());
    assert_eq!((clean.calls.len(), clean.waited), (1, Duration::ZERO));

    // A stall under the attempt timeout is waited out: one call, no log line.
    let (logs, guard) = Logs::capture();
    let short = Duration::from_millis(300);
    let run = drive(
        Some(Fault::stall(short).on(Operation::First).times(1)),
        async |shop| shop.find_user_bounded(1).await,
    )
    .await;
    assert_is_ada(run.result.unwrap().as_ref());
    assert_eq!((run.calls.len(), run.waited), (1, short));
    assert_eq!(run.calls[0].stalled, Some(short));
    assert!(!run.calls[0].dropped);
    assert_eq!(lines_of(&logs, "find_user_bounded"), Vec::<String>::new());
    drop(guard);

    // The first attempt hangs (before it runs, after it ran, or before a failure): it is
    // cut at exactly 1 s and the retry, 160-240 ms later, answers.
    let stalls = [
        ("stalled before it ran", Fault::stall(STALL), STALL, false),
        (
            "ran, then stalled",
            Fault::stall(STALL).after_execution(),
            STALL,
            true,
        ),
        (
            "stalled, then would fail",
            Fault::new(Message::StorageReset).stalling(Duration::from_secs(3)),
            Duration::from_secs(3),
            false,
        ),
    ];
    for (label, fault, stall, executed) in stalls {
        let (logs, _guard) = Logs::capture();
        let run = drive(Some(fault.on(Operation::First).times(1)), async |shop| {
            shop.find_user_bounded(1).await
        })
        .await;
        assert_is_ada(run.result.as_ref().unwrap().as_ref());
        assert_eq!(run.calls.len(), 2, "{label}: {:#?}", run.calls);
        let (first, second) = (&run.calls[0], &run.calls[1]);
        assert_eq!(first.stalled, Some(stall), "{label}");
        assert!(first.dropped, "{label}: cut during its stall");
        assert_eq!(first.executed, executed, "{label}");
        assert_eq!((second.stalled, second.injected), (None, None), "{label}");
        let waited = run.waited.checked_sub(ATTEMPT_TIMEOUT).unwrap();
        assert!(FIRST_WAIT.contains(&waited), "{label}: {:?}", run.waited);
        let lines = lines_of(&logs, "find_user_bounded");
        let [line] = lines.as_slice() else {
            panic!("{label}: {lines:#?}")
        };
        assert!(line.contains("D1 transient failure, retrying"), "{line}");
        assert!(
            line.contains("d1.failure_class=\"maybe_executed\""),
            "{line}"
        );
        assert!(line.contains("d1.read_only=true"), "{line}");
        assert!(
            line.contains(&timed_out("find_user_bounded", "attempt timeout", 1000)),
            "{line}"
        );
        assert_eq!(contents(&run.db), seeded(), "{label}");
    }
}

#[tokio::test(start_paused = true)]
async fn place_order_bounded_returns_the_timeout_and_writes_at_most_once() {
    let clean = drive(None, async |shop| shop.place_order_bounded(2, &pen()).await).await;
    assert_eq!(*clean.result.as_ref().unwrap(), 3);
    assert_eq!((clean.calls.len(), pens(&clean.db)), (1, 1));

    // (fault, whether the insert ran, rows afterwards)
    let stalls = [
        ("stalled before it ran", Fault::stall(STALL), false),
        (
            "stalled, then would fail",
            Fault::new(Message::StorageReset).stalling(Duration::from_secs(3)),
            false,
        ),
        (
            "ran, then stalled",
            Fault::stall(STALL).after_execution(),
            true,
        ),
        (
            "ran, stalled, then would fail",
            Fault::new(Message::NetworkConnectionLost)
                .after_execution()
                .stalling(STALL),
            true,
        ),
    ];
    for (label, fault, executed) in stalls {
        let (logs, _guard) = Logs::capture();
        let run = drive(Some(fault.on(Operation::Run).times(1)), async |shop| {
            shop.place_order_bounded(2, &pen()).await
        })
        .await;
        // The caller has the timeout at 1 s sharp, and no retry.
        let error = run.result.as_ref().unwrap_err();
        assert_eq!(
            error.to_string(),
            timed_out("place_order_bounded", "attempt timeout", 1000),
            "{label}"
        );
        assert_eq!(d1_retry::classify(error), FailureClass::MaybeExecuted);
        assert_eq!(run.waited, ATTEMPT_TIMEOUT, "{label}");
        assert_eq!(run.calls.len(), 1, "{label}: {:#?}", run.calls);
        assert!(run.calls[0].dropped, "{label}");
        assert_eq!(run.calls[0].executed, executed, "{label}");
        let lines = lines_of(&logs, "place_order_bounded");
        let [line] = lines.as_slice() else {
            panic!("{label}: {lines:#?}")
        };
        assert!(line.contains("D1 failure, not retried"), "{line}");
        assert!(
            line.contains("d1.withheld=\"maybe_executed_write\""),
            "{line}"
        );
        assert!(
            line.contains("d1.failure_class=\"maybe_executed\""),
            "{line}"
        );
        assert!(
            line.contains("passed its attempt timeout of 1000 ms"),
            "{line}"
        );
        // At most once: once if it ran before the hang, and still so when the stall is over.
        assert_eq!(pens(&run.db), usize::from(executed), "{label}");
        tokio::time::sleep(STALL).await;
        assert_eq!(
            pens(&run.db),
            usize::from(executed),
            "{label}, after the stall"
        );
        assert_eq!(run.db.calls().len(), 1, "{label}: nothing ran again");
    }
}

#[tokio::test(start_paused = true)]
async fn find_user_bounded_stalled_every_time_ends_by_its_deadline() {
    // Every attempt hangs. With the default waits (200, 400, 800 ms), attempts start at 0,
    // about 1.2 and 2.5 s, each cut at 1 s; the third wait would end after 4 s, so no
    // fourth attempt starts and the caller has the third timeout before the deadline.
    let (logs, guard) = Logs::capture();
    let run = drive(
        Some(Fault::stall(STALL).on(Operation::First)),
        async |shop| shop.find_user_bounded(1).await,
    )
    .await;
    let error = run.result.as_ref().unwrap_err();
    assert_eq!(
        error.to_string(),
        timed_out("find_user_bounded", "attempt timeout", 1000)
    );
    assert_eq!(run.calls.len(), 3, "{:#?}", run.calls);
    assert!(run.calls.iter().all(|call| call.dropped));
    let waits = Duration::from_millis(480)..=Duration::from_millis(720);
    let waited = run.waited.checked_sub(3 * ATTEMPT_TIMEOUT).unwrap();
    assert!(waits.contains(&waited), "{:?}", run.waited);
    assert!(run.waited < DEADLINE);
    let lines = lines_of(&logs, "find_user_bounded");
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(
        lines[..2]
            .iter()
            .all(|l| l.contains("D1 transient failure, retrying"))
    );
    assert!(
        lines[2].contains("d1.withheld=\"deadline\""),
        "{}",
        lines[2]
    );
    assert!(lines[2].contains("d1.attempt=3 "), "{}", lines[2]);
    drop(guard);

    // A quick failure, then hangs: the fourth attempt starts 3.1-3.7 s in and is cut by
    // what is left of the deadline, at 4 s sharp, with the deadline's error.
    let (logs, _guard) = Logs::capture();
    let db = database();
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .on(Operation::First)
            .times(1),
    );
    db.add_fault(Fault::stall(STALL).on(Operation::First));
    let shop = Shop::new(db.clone());
    let start = Instant::now();
    let error = shop.find_user_bounded(1).await.unwrap_err();
    assert_eq!(start.elapsed(), DEADLINE);
    assert_eq!(
        error.to_string(),
        timed_out("find_user_bounded", "deadline", 4000)
    );
    assert_eq!(d1_retry::classify(&error), FailureClass::MaybeExecuted);
    let calls = db.calls();
    assert_eq!(calls.len(), 4, "{calls:#?}");
    assert!(calls[0].injected.is_some() && !calls[0].dropped);
    assert!(
        calls[1..]
            .iter()
            .all(|call| call.dropped && call.stalled == Some(STALL))
    );
    let lines = lines_of(&logs, "find_user_bounded");
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert!(
        lines[..3]
            .iter()
            .all(|l| l.contains("D1 transient failure, retrying"))
    );
    assert!(
        lines[1].contains("passed its attempt timeout of 1000 ms"),
        "{}",
        lines[1]
    );
    assert!(lines[3].contains("D1 failure, not retried"), "{}", lines[3]);
    assert!(
        lines[3].contains("d1.withheld=\"deadline\""),
        "{}",
        lines[3]
    );
    assert!(
        lines[3].contains("passed its deadline of 4000 ms"),
        "{}",
        lines[3]
    );
    assert_eq!(contents(&db), seeded());
}
