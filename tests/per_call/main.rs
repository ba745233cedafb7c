//! Each D1 execution is retried on its own: the shapes of `repo.rs`, on the testing kit's
//! SQLite, with a failure injected before and after execution at every statement.
//!
//! The rows prove that no write ran twice; the journal's call counts prove that the safe
//! retries still happen.

mod repo;

use core::sync::atomic::Ordering;

use d1_retry::testing::{D1Database, Fault, Message, Operation, Timing};
use repo::{Audit, Repo};
use test_support::{calls_with, count, lose_once_after_running, orders_and_audit};

fn database() -> D1Database {
    orders_and_audit()
}

fn repo(db: &D1Database) -> Repo {
    Repo {
        db: db.clone(),
        effects: Default::default(),
    }
}

/// The largest number of times any one order item is in the table.
fn most_copies(db: &D1Database) -> i64 {
    count(
        db,
        "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM orders GROUP BY item)",
    )
}

/// A database whose first call with `fragment` in its SQL fails as maybe executed, after
/// it ran.
fn lost_once_after_running(fragment: &str) -> D1Database {
    let db = database();
    lose_once_after_running(&db, fragment);
    db
}

const INSERT: &str = "INSERT INTO orders";
const READ: &str = "SELECT count(*)";

/// One of each class, as D1 words it.
const MESSAGES: [Message; 3] = [
    Message::CannotResolve,
    Message::NetworkConnectionLost,
    Message::StorageTimeout,
];

#[tokio::test(start_paused = true)]
async fn a_read_then_a_helper_that_writes() {
    for message in MESSAGES {
        for timing in [Timing::BeforeExecution, Timing::AfterExecution] {
            let db = database();
            db.add_fault(
                Fault::new(message)
                    .timing(timing)
                    .when_sql_contains(READ)
                    .times(1),
            );
            let result = repo(&db).read_then_helper("a").await;
            // A read is retried after any transient failure; the write runs once, after it.
            let transient = message != Message::StorageTimeout;
            assert_eq!(result.is_ok(), transient, "{message:?} {timing:?}");
            assert_eq!(calls_with(&db, READ), if transient { 2 } else { 1 });
            assert_eq!(
                count(&db, "SELECT count(*) FROM orders"),
                i64::from(transient)
            );
        }
    }
}

/// The failures D1 can really give: "not executed" before a statement runs, the others
/// before or after.
fn realistic() -> Vec<(Message, Timing)> {
    let mut cases = Vec::new();
    for message in MESSAGES {
        cases.push((message, Timing::BeforeExecution));
        if message != Message::CannotResolve {
            cases.push((message, Timing::AfterExecution));
        }
    }
    cases
}

#[tokio::test(start_paused = true)]
async fn writes_in_helpers_and_other_methods_never_run_twice() {
    for (message, timing) in realistic() {
        {
            for fragment in [INSERT, READ, "INSERT INTO audit"] {
                let db = database();
                db.add_fault(
                    Fault::new(message)
                        .timing(timing)
                        .when_sql_contains(fragment)
                        .times(1),
                );
                let repo = repo(&db);
                let audit = Audit { db: db.clone() };
                let _ = repo.nested_fn_then_read("n").await;
                let _ = repo.audit_then_read(&audit).await;
                let _ = repo.place_then_count("p").await;
                let _ = repo.own_macro_then_read("m").await;
                let _ = repo.read_then_helper("h").await;
                let case = format!("{message:?} {timing:?} at {fragment}");
                assert!(most_copies(&db) <= 1, "{case}");
                assert!(count(&db, "SELECT count(*) FROM audit") <= 1, "{case}");
                // Effects outside D1 happen at most once per call: no body ran twice.
                assert!(repo.effects.load(Ordering::Relaxed) <= 5, "{case}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_read_after_an_annotated_write_retries_the_read_alone() {
    let db = database();
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .when_sql_contains(READ)
            .times(2),
    );
    let repo = repo(&db);
    assert_eq!(repo.place_then_count("once").await.unwrap(), 1);
    assert_eq!(calls_with(&db, INSERT), 1);
    assert_eq!(calls_with(&db, READ), 3);
    assert_eq!(repo.effects.load(Ordering::Relaxed), 1);
}

#[tokio::test(start_paused = true)]
async fn a_loop_retries_the_insert_that_was_not_reached_and_no_other() {
    let db = database();
    // The third insert never reaches D1.
    db.add_fault(
        Fault::new(Message::CannotResolve)
            .on(Operation::Run)
            .on_calls(2..3),
    );
    let repo = repo(&db);
    repo.loop_inserts(&["a", "b", "c", "d"]).await.unwrap();
    assert_eq!(count(&db, "SELECT count(*) FROM orders"), 4);
    assert_eq!(most_copies(&db), 1);
    assert_eq!(
        calls_with(&db, INSERT),
        5,
        "only the third insert ran again"
    );
    assert_eq!(repo.effects.load(Ordering::Relaxed), 4);
}

#[tokio::test(start_paused = true)]
async fn a_loop_hands_back_a_maybe_executed_insert() {
    let db = database();
    test_support::lose_call_after_running(&db, Operation::Run, 1);
    let repo = repo(&db);
    assert!(repo.loop_inserts(&["a", "b", "c"]).await.is_err());
    // The second insert ran once and was handed back; the third never started.
    assert_eq!(count(&db, "SELECT count(*) FROM orders"), 2);
    assert_eq!(calls_with(&db, INSERT), 2);
}

#[tokio::test(start_paused = true)]
async fn a_loop_of_many_inserts_shares_the_calls_retries() {
    let db = database();
    // Every insert fails once before reaching D1.
    let items: Vec<String> = (0..10).map(|i| format!("item{i}")).collect();
    let items: Vec<&str> = items.iter().map(String::as_str).collect();
    let seen = core::sync::atomic::AtomicU64::new(0);
    db.add_fault(
        Fault::new(Message::CannotResolve)
            .on(Operation::Run)
            .when(move |_| seen.fetch_add(1, Ordering::Relaxed).is_multiple_of(2)),
    );
    let repo = repo(&db);
    let start = tokio::time::Instant::now();
    assert!(repo.loop_inserts(&items).await.is_err());
    // 4 retries in all (max_attempts - 1), so the fifth item's failure is handed back.
    assert_eq!(count(&db, "SELECT count(*) FROM orders"), 4);
    assert!(start.elapsed() <= d1_retry::RetryPolicy::DEFAULT.max_total_delay());
}

#[tokio::test(start_paused = true)]
async fn joined_inserts_retry_each_on_its_own() {
    // D1 answers "not executed" only before running a statement, "maybe executed" after.
    for (message, timing) in [
        (Message::TooManyRequestsQueued, Timing::BeforeExecution),
        (Message::NetworkConnectionLost, Timing::AfterExecution),
    ] {
        let db = database();
        db.add_fault(
            Fault::new(message)
                .timing(timing)
                .when_sql_contains(INSERT)
                .on_calls(1..2),
        );
        let _ = repo(&db).joined_inserts(&["a", "b", "c"]).await;
        assert_eq!(most_copies(&db), 1, "{timing:?}");
        assert_eq!(
            count(&db, "SELECT count(*) FROM orders"),
            3,
            "every item ran once"
        );
        if timing == Timing::BeforeExecution {
            assert_eq!(count(&db, "SELECT count(*) FROM orders"), 3);
            assert_eq!(calls_with(&db, INSERT), 4);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn unseen_sql_counts_as_a_write() {
    for (name, fragment) in [
        ("renamed", INSERT),
        ("helper", INSERT),
        ("passed", "passed"),
    ] {
        for message in [Message::NetworkConnectionLost, Message::CannotResolve] {
            let db = database();
            db.add_fault(
                Fault::new(message)
                    .after_execution()
                    .when_sql_contains(fragment)
                    .times(1),
            );
            let repo = repo(&db);
            let result = match name {
                "renamed" => repo.renamed_prepare("x").await.map(|()| 0),
                "helper" => repo.helper_statement("x").await,
                _ => {
                    let statement = db.prepare("INSERT INTO orders (item) VALUES ('passed')");
                    repo.passed_statement(statement).await
                }
            };
            let case = format!("{name} {message:?}");
            // Maybe executed: handed back. Not executed (injected after execution here, so
            // the row exists) is retried, which the kit's journal shows as a second call.
            if message == Message::NetworkConnectionLost {
                assert!(result.is_err(), "{case}");
                assert_eq!(calls_with(&db, fragment), 1, "{case}");
            } else {
                assert_eq!(calls_with(&db, fragment), 2, "{case}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn insert_returning_is_not_run_again_when_the_read_back_fails() {
    let db = database();
    db.add_fault(
        Fault::new(Message::CannotResolve)
            .when_sql_contains("SELECT item")
            .times(4),
    );
    let repo = repo(&db);
    // The read-back is a plain helper: not retried, so the call fails; the insert stays once.
    assert!(repo.insert_returning("r").await.is_err());
    assert_eq!(calls_with(&db, "RETURNING"), 1);
    assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);

    let db = lost_once_after_running("RETURNING");
    assert!(repo_for(&db).insert_returning("r").await.is_err());
    assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);
}

fn repo_for(db: &D1Database) -> Repo {
    repo(db)
}

#[tokio::test(start_paused = true)]
async fn a_local_const_is_judged_where_it_is_used() {
    let db = lost_once_after_running("shadow");
    // The inner `SQL` writes: a maybe-executed failure is handed back, not retried.
    assert!(repo(&db).shadowed().await.is_err());
    assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);
    assert_eq!(calls_with(&db, "shadow"), 1);
}

/// `r#stmt` and `stmt` are one name: a write bound under one spelling and run under the
/// other is the write, handed back after it ran (one row), not the read it shadows.
#[tokio::test(start_paused = true)]
async fn a_raw_name_is_its_plain_name() {
    for raw_first in [true, false] {
        let db = lost_once_after_running(INSERT);
        let repo = repo(&db);
        let result = if raw_first {
            repo.raw_name_shadowed("raw").await
        } else {
            repo.plain_name_shadowed("raw").await
        };
        assert!(result.is_err(), "raw first: {raw_first}");
        assert_eq!(calls_with(&db, INSERT), 1, "raw first: {raw_first}");
        assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);
    }
}

/// `let stmt = &mut <read>;` may become a write through the borrow (`*stmt = ..`, a
/// helper, `mem::swap`): not followed at expansion, it is judged by the SQL it holds when it
/// runs, so the insert that replaced the read runs once, and the read it may stay is made
/// again.
#[tokio::test(start_paused = true)]
async fn a_statement_borrowed_mutably_is_judged_by_what_it_holds() {
    let db = lost_once_after_running(INSERT);
    assert!(
        repo(&db)
            .replaced_through_a_borrow("m", true)
            .await
            .is_err()
    );
    assert_eq!(calls_with(&db, INSERT), 1);
    assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);

    let db = lost_once_after_running("WHERE item");
    assert!(
        repo(&db)
            .replaced_through_a_borrow("m", false)
            .await
            .is_ok()
    );
    assert_eq!(calls_with(&db, "WHERE item"), 2);
}

/// `let stmt = stmt.bind(..)?;` keeps the statement's SQL: the read that failed after it
/// ran is made again, the write that did is handed back (one row).
#[tokio::test(start_paused = true)]
async fn a_statement_bound_in_place_keeps_its_sql() {
    let db = lost_once_after_running("SELECT count(*) AS n FROM orders WHERE item");
    assert_eq!(repo(&db).bound_in_place("p").await.unwrap(), 0);
    assert_eq!(calls_with(&db, "WHERE item"), 2, "the read ran again");
    assert_eq!(calls_with(&db, INSERT), 1);

    let db = lost_once_after_running(INSERT);
    assert!(repo(&db).bound_in_place("p").await.is_err());
    assert_eq!(calls_with(&db, INSERT), 1, "the write ran once");
    assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1);
}

/// A name a macro may bind is not followed: after `bind_statement!(stmt = <write>)`,
/// `stmt` is the write, and a failure after it ran is handed back. The same through a
/// macro named like a logging macro, which the attribute takes to bind only the names in
/// its tokens.
#[tokio::test(start_paused = true)]
async fn a_statement_name_a_macro_rebinds_is_not_followed() {
    for (named_debug, message, calls) in [
        (false, Message::NetworkConnectionLost, 1),
        (false, Message::CannotResolve, 2),
        (true, Message::NetworkConnectionLost, 1),
        (true, Message::CannotResolve, 2),
    ] {
        let db = database();
        db.add_fault(
            Fault::new(message)
                .after_execution()
                .when_sql_contains(INSERT)
                .times(1),
        );
        let repo = repo(&db);
        let result = match named_debug {
            false => repo.rebound_by_macro("m").await,
            true => repo.rebound_by_macro_named_debug("m").await,
        };
        assert_eq!(result.is_ok(), message == Message::CannotResolve);
        let case = format!("{message:?}, named debug: {named_debug}");
        assert_eq!(calls_with(&db, INSERT), calls, "{case}");
        // Each run inserted a row (the kit injects after execution).
        let rows = count(&db, "SELECT count(*) FROM orders");
        assert_eq!(rows, calls as i64, "{case}");
    }
}

/// A write bound outside a block is judged by its own SQL where it runs in that block:
/// though a read constant of the same name is in scope there (`const_shadowed_where_run`),
/// or a read bound to the same name inside a `join!` argument ran before it
/// (`shadowed_in_join`). A failure after it ran is handed back: one run, one row.
#[tokio::test(start_paused = true)]
async fn a_write_bound_outside_a_block_is_judged_by_its_own_sql() {
    for shape in ["const_shadowed_where_run", "shadowed_in_join"] {
        let db = lost_once_after_running(INSERT);
        let result = match shape {
            "const_shadowed_where_run" => repo(&db).const_shadowed_where_run().await,
            _ => repo(&db).shadowed_in_join("j").await.map(|_| ()),
        };
        assert!(result.is_err(), "{shape}");
        assert_eq!(calls_with(&db, INSERT), 1, "{shape}");
        assert_eq!(count(&db, "SELECT count(*) FROM orders"), 1, "{shape}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_batch_collected_in_a_loop_is_a_write() {
    for (message, calls) in [
        (Message::CannotResolve, 2),
        (Message::NetworkConnectionLost, 1),
    ] {
        let db = database();
        db.add_fault(Fault::new(message).on(Operation::Batch).times(1));
        let repo = repo(&db);
        let result = repo.bulk(&["a", "b", "c"]).await;
        assert_eq!(result.is_ok(), message == Message::CannotResolve);
        assert_eq!(calls_with(&db, INSERT), calls, "{message:?}");
        assert_eq!(
            repo.effects.load(Ordering::Relaxed),
            3,
            "statements built once"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn branches_type_prepare_and_prefixed_errors() {
    let db = database();
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .times(1),
    );
    assert!(repo(&db).branch(true).await.is_err());
    assert_eq!(calls_with(&db, "UPDATE"), 1);

    let db = database();
    db.add_fault(Fault::new(Message::NetworkConnectionLost).times(2));
    assert_eq!(repo(&db).path_prepare().await.unwrap(), 0);
    assert_eq!(calls_with(&db, READ), 3);

    let db = database();
    db.add_fault(Fault::new(Message::CannotResolve).times(2));
    assert_eq!(repo(&db).prefixed().await.unwrap(), 0);
    assert_eq!(calls_with(&db, READ), 3);
}

#[tokio::test(start_paused = true)]
async fn dynamic_sql_is_scanned_where_it_is_prepared() {
    let db = database();
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .times(1),
    );
    let repo = repo(&db);
    assert!(
        repo.dynamic("INSERT INTO orders (item) VALUES ('d')".into())
            .await
            .is_err()
    );
    assert_eq!(calls_with(&db, INSERT), 1);

    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .times(1),
    );
    repo.dynamic("SELECT 1 FROM orders".into()).await.unwrap();
    assert_eq!(calls_with(&db, "SELECT 1"), 2);
}

#[tokio::test(start_paused = true)]
async fn nested_attempts_never_multiply() {
    let db = database();
    db.add_fault(Fault::new(Message::NetworkConnectionLost).on(Operation::First));
    let repo = repo(&db);
    assert!(repo.composed_read().await.is_err());
    // The outer whole-body read makes 5 attempts; the inner read does not retry inside them.
    assert_eq!(calls_with(&db, READ), 5);
    assert_eq!(repo.effects.load(Ordering::Relaxed), 5);
}
