//! A stalled D1: calls that hang on tokio's paused clock, then go through or fail, and
//! callers that give up during the hang.

use core::time::Duration;
use std::sync::{Arc, Mutex};

use tokio::time::{Instant, sleep, timeout};

use super::{count, users};
use crate::testing::*;

const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// An INSERT with the email in its SQL, for the rules that pick calls by SQL text.
fn insert(db: &D1Database, email: &str) -> D1PreparedStatement {
    db.prepare(format!("INSERT INTO users (email) VALUES ('{email}')"))
}

fn rows(db: &D1Database, email: &str) -> i64 {
    count(
        db,
        &format!("SELECT count(*) FROM users WHERE email = '{email}'"),
    )
}

/// Runs `call` and returns what it answered and how much (virtual) time it took.
async fn timed<T>(call: impl Future<Output = T>) -> (T, Duration) {
    let start = Instant::now();
    let answer = call.await;
    (answer, start.elapsed())
}

#[tokio::test(start_paused = true)]
async fn a_stall_that_ends_in_success_takes_exactly_its_duration_then_runs() {
    let db = users();
    db.add_fault(Fault::stall(secs(40)).times(1));
    let (result, took) = timed(insert(&db, "s@x").run()).await;
    assert_eq!(took, secs(40));
    assert_eq!(result.unwrap().meta().unwrap().unwrap().changes, Some(1));
    assert_eq!(rows(&db, "s@x"), 1);
    // `times(1)`: the next call does not hang.
    let (result, took) = timed(db.prepare("SELECT 1").all()).await;
    assert!(result.is_ok());
    assert_eq!(took, Duration::ZERO);

    let calls = db.calls();
    assert_eq!(calls[0].stalled, Some(secs(40)));
    assert_eq!(calls[0].injected, None);
    assert!(calls[0].executed && !calls[0].dropped && calls[0].error.is_none());
    assert_eq!(calls[1].stalled, None);
    let stats = db.stats();
    assert_eq!((stats.calls, stats.stalled, stats.dropped), (2, 1, 0));
    assert_eq!((stats.injected_before, stats.injected_after), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_caller_giving_up_during_a_stall_before_execution_cancels_the_call() {
    let db = users();
    // A stall that would end in success, and one that would end in a failure.
    db.add_fault(Fault::stall(secs(60)).on(Operation::Run).times(1));
    db.add_fault(
        Fault::new(Message::StorageReset)
            .stalling(secs(60))
            .on(Operation::Batch)
            .times(1),
    );
    let (gave_up, took) = timed(timeout(secs(10), insert(&db, "d1@x").run())).await;
    assert!(gave_up.is_err());
    assert_eq!(took, secs(10));
    let batch = db.batch(vec![insert(&db, "d2@x"), insert(&db, "d3@x")]);
    assert!(timeout(secs(10), batch).await.is_err());
    // Long after the stalls would have ended, nothing ran.
    sleep(secs(120)).await;
    assert_eq!(count(&db, "SELECT count(*) FROM users"), 2);

    let calls = db.calls();
    assert_eq!(calls.len(), 2);
    for call in &calls {
        assert!(
            call.dropped && !call.executed && call.error.is_none(),
            "{call:?}"
        );
        assert_eq!(call.stalled, Some(secs(60)));
    }
    assert_eq!(calls[0].injected, None);
    assert_eq!(
        calls[1].injected,
        Some((Message::StorageReset, Timing::BeforeExecution))
    );
    let stats = db.stats();
    assert_eq!((stats.stalled, stats.dropped), (2, 2));
    // The database still answers.
    insert(&db, "d1@x").run().await.unwrap();
    assert_eq!(rows(&db, "d1@x"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_caller_giving_up_during_a_stall_after_execution_leaves_the_write_committed_once() {
    let db = users();
    // The write commits, the storage object hangs, then resets.
    db.add_fault(
        Fault::new(Message::StorageReset)
            .after_execution()
            .stalling(secs(60))
            .when_sql_contains("a@x")
            .times(1),
    );
    // The write commits, then its answer hangs.
    db.add_fault(
        Fault::stall(secs(60))
            .after_execution()
            .when_sql_contains("b@x")
            .times(1),
    );
    for email in ["a@x", "b@x"] {
        let (gave_up, took) = timed(timeout(secs(10), insert(&db, email).run())).await;
        assert!(gave_up.is_err());
        assert_eq!(took, secs(10));
        // Committed before the hang, and once only, however long we wait.
        assert_eq!(rows(&db, email), 1, "{email}");
        sleep(secs(120)).await;
        assert_eq!(rows(&db, email), 1, "{email}");
    }
    let calls = db.calls();
    assert_eq!(calls.len(), 2);
    for call in &calls {
        assert!(
            call.dropped && call.executed && call.error.is_none(),
            "{call:?}"
        );
        assert_eq!(call.stalled, Some(secs(60)));
    }
    assert_eq!(
        calls[0].injected,
        Some((Message::StorageReset, Timing::AfterExecution))
    );
    assert_eq!(calls[1].injected, None);
    let stats = db.stats();
    assert_eq!(
        (stats.stalled, stats.dropped, stats.injected_after),
        (2, 2, 1)
    );
}

#[tokio::test(start_paused = true)]
async fn a_stall_then_failure_answers_the_message_after_exactly_the_stall() {
    let db = users();
    let reset = "D1_ERROR: Internal error in D1 DB storage caused object to be reset.";
    db.add_fault(
        Fault::new(Message::StorageReset)
            .stalling(secs(30))
            .when_sql_contains("before@x"),
    );
    db.add_fault(
        Fault::new(Message::StorageReset)
            .after_execution()
            .stalling(secs(45))
            .when_sql_contains("after@x"),
    );
    let (before, took) = timed(insert(&db, "before@x").run()).await;
    let before = before.unwrap_err();
    assert_eq!(took, secs(30));
    assert_eq!(before.to_string(), reset);
    assert_eq!(before.injected(), Some(Timing::BeforeExecution));
    assert_eq!(rows(&db, "before@x"), 0);

    let (after, took) = timed(insert(&db, "after@x").run()).await;
    let after = after.unwrap_err();
    assert_eq!(took, secs(45));
    assert_eq!(after.to_string(), reset);
    assert_eq!(after.injected(), Some(Timing::AfterExecution));
    assert_eq!(rows(&db, "after@x"), 1);

    let calls = db.calls();
    assert_eq!(
        calls.iter().map(|c| c.stalled).collect::<Vec<_>>(),
        [Some(secs(30)), Some(secs(45))]
    );
    assert_eq!(
        calls.iter().map(|c| c.executed).collect::<Vec<_>>(),
        [false, true]
    );
    assert!(
        calls
            .iter()
            .all(|c| !c.dropped && c.error.as_deref() == Some(reset))
    );
}

#[tokio::test(start_paused = true)]
async fn a_stall_placed_before_an_after_execution_failure_runs_only_if_waited_out() {
    let db = users();
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .stalling(secs(20))
            .stall_timing(Timing::BeforeExecution)
            .times(2),
    );
    // Given up during the hang: the statement never runs.
    assert!(timeout(secs(5), insert(&db, "p@x").run()).await.is_err());
    sleep(secs(60)).await;
    assert_eq!(rows(&db, "p@x"), 0);
    // Waited out: the statement runs after the hang, then the call fails.
    let (result, took) = timed(insert(&db, "p@x").run()).await;
    assert_eq!(took, secs(20));
    assert_eq!(result.unwrap_err().injected(), Some(Timing::AfterExecution));
    assert_eq!(rows(&db, "p@x"), 1);
    let calls = db.calls();
    assert_eq!(
        calls
            .iter()
            .map(|c| (c.dropped, c.executed))
            .collect::<Vec<_>>(),
        [(true, false), (false, true)]
    );
}

#[tokio::test(start_paused = true)]
async fn stalls_compose_with_times_sql_and_operations() {
    let db = users();
    db.add_fault(
        Fault::stall(secs(5))
            .on(Operation::Run)
            .when_sql_contains("INSERT")
            .times(2),
    );
    let mut took = Vec::new();
    // Neither a SELECT run, nor an INSERT read through `first`, is the rule's.
    took.push(timed(db.prepare("SELECT 1").run()).await.1);
    let returning = db.prepare("INSERT INTO users (email) VALUES ('r@x') RETURNING id");
    took.push(timed(returning.first::<i64>(Some("id"))).await.1);
    for email in ["c1@x", "c2@x", "c3@x"] {
        let (result, elapsed) = timed(insert(&db, email).run()).await;
        result.unwrap();
        took.push(elapsed);
    }
    assert_eq!(
        took,
        [
            Duration::ZERO,
            Duration::ZERO,
            secs(5),
            secs(5),
            Duration::ZERO
        ]
    );
    assert_eq!(db.injected_per_rule(), [2]);
    assert_eq!(db.stats().stalled, 2);
}

#[tokio::test(start_paused = true)]
async fn stalls_follow_a_scripted_window_on_the_same_clock() {
    let db = users();
    let clock = Clock::tokio();
    db.add_fault(Fault::stall(secs(5)).during(&clock, secs(10)..secs(12)));
    let (_, took) = timed(db.prepare("SELECT 1").all()).await;
    assert_eq!(took, Duration::ZERO);
    sleep(secs(11)).await;
    // Inside the window: the call hangs 5 s of the clock the window reads.
    let (_, took) = timed(db.prepare("SELECT 1").all()).await;
    assert_eq!(took, secs(5));
    assert_eq!(clock.now(), secs(16));
    // The window is over by the time the stall ends.
    let (_, took) = timed(db.prepare("SELECT 1").all()).await;
    assert_eq!(took, Duration::ZERO);
    let stalled: Vec<Option<Duration>> = db.calls().iter().map(|c| c.stalled).collect();
    assert_eq!(stalled, [None, Some(secs(5)), None]);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_call_does_not_hold_up_the_others() {
    let db = users();
    db.add_fault(Fault::stall(secs(20)).when_sql_contains("slow@x"));
    let (slow, fast) = (insert(&db, "slow@x"), insert(&db, "fast@x"));
    let (slow, fast) = tokio::join!(timed(slow.run()), async {
        tokio::task::yield_now().await;
        timed(fast.run()).await
    });
    assert_eq!((slow.1, fast.1), (secs(20), Duration::ZERO));
    slow.0.unwrap();
    fast.0.unwrap();
    // The journal holds calls in the order they answered; `index` in the order they began.
    let calls = db.calls();
    let order: Vec<(u64, Option<Duration>)> = calls.iter().map(|c| (c.index, c.stalled)).collect();
    assert_eq!(order, [(1, None), (0, Some(secs(20)))]);
}

#[tokio::test(start_paused = true)]
async fn a_session_hears_its_bookmark_only_from_a_stalled_call_that_answers() {
    let db = users();
    let session = db.with_session(None).unwrap();
    db.add_fault(Fault::stall(secs(30)).after_execution().times(2));
    // Dropped after its write: committed, but no bookmark came back.
    let write = session.prepare("INSERT INTO users (email) VALUES ('b1@x')");
    assert!(timeout(secs(1), write.run()).await.is_err());
    assert_eq!(session.get_bookmark().unwrap(), None);
    assert_eq!(rows(&db, "b1@x"), 1);
    // Waited out: the bookmark names the state its write made.
    let write = session.prepare("INSERT INTO users (email) VALUES ('b2@x')");
    write.run().await.unwrap();
    let bookmark = session.get_bookmark().unwrap().unwrap();
    let later = db.with_session(Some(&bookmark)).unwrap();
    assert_eq!(later.get_bookmark().unwrap(), Some(bookmark));
}

#[tokio::test(start_paused = true)]
async fn a_stall_waits_through_the_sleeper_the_database_is_given() {
    let db = users();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let record = asked.clone();
    db.set_sleeper(move |stall: Duration| {
        record.lock().unwrap().push(stall);
        core::future::ready(())
    });
    db.add_fault(Fault::stall(secs(7)).times(1));
    db.add_fault(Fault::new(Message::CpuLimit).stalling(secs(9)).times(1));
    let (result, took) = timed(db.prepare("SELECT 1").all()).await;
    assert!(result.is_ok());
    let (result, took_too) = timed(db.prepare("SELECT 1").all()).await;
    assert!(result.is_err());
    // The sleeper was asked, and tokio's clock did not move.
    assert_eq!((took, took_too), (Duration::ZERO, Duration::ZERO));
    assert_eq!(*asked.lock().unwrap(), [secs(7), secs(9)]);
}
