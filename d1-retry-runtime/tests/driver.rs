//! The retry driver under tokio's paused clock: attempts, waits, and the error handed back.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

use d1_retry_runtime::{FailureClass, Retry, RetryPolicy};
use tokio::time::Instant;

const NETWORK_LOST: &str = "D1_ERROR: Network connection lost.";
const CANNOT_RESOLVE: &str =
    "D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node.";
const INTERNAL: &str = "D1_ERROR: internal error; reference = 6b1d3a0f";
const UNIQUE: &str = "D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)";

/// An error carrying the attempt that produced it, so a test can tell which one came back.
#[derive(Debug, PartialEq)]
struct DbError {
    message: &'static str,
    attempt: u32,
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message)
    }
}

impl std::error::Error for DbError {}

/// A fake D1 call: fails with the scripted messages in turn, then succeeds; records when
/// each call started (virtual time).
#[derive(Default)]
struct Script {
    failures: RefCell<Vec<&'static str>>,
    calls: Cell<u32>,
    started: RefCell<Vec<Instant>>,
}

impl Script {
    fn failing(messages: &[&'static str]) -> Rc<Self> {
        Rc::new(Script {
            failures: RefCell::new(messages.to_vec()),
            ..Script::default()
        })
    }

    async fn call(&self) -> Result<&'static str, DbError> {
        self.calls.set(self.calls.get() + 1);
        self.started.borrow_mut().push(Instant::now());
        let next = {
            let mut failures = self.failures.borrow_mut();
            if failures.is_empty() {
                None
            } else {
                Some(failures.remove(0))
            }
        };
        // A real D1 call yields to the runtime; so does this one.
        tokio::task::yield_now().await;
        match next {
            Some(message) => Err(DbError {
                message,
                attempt: self.calls.get(),
            }),
            None => Ok("row"),
        }
    }

    fn waits(&self) -> Vec<Duration> {
        self.started
            .borrow()
            .windows(2)
            .map(|w| w[1] - w[0])
            .collect()
    }
}

#[tokio::test(start_paused = true)]
async fn read_succeeds_on_fifth_attempt_after_four_maybe_executed_failures() {
    let db = Script::failing(&[NETWORK_LOST, INTERNAL, NETWORK_LOST, INTERNAL]);
    let result = Retry::new("users.find")
        .read_only(true)
        .seed(1)
        .run(|| db.call())
        .await;
    assert_eq!(result, Ok("row"));
    assert_eq!(db.calls.get(), 5);
}

#[tokio::test(start_paused = true)]
async fn after_five_failures_the_last_original_error_comes_back() {
    let db = Script::failing(&[NETWORK_LOST; 6]);
    let result = Retry::new("users.find")
        .read_only(true)
        .seed(2)
        .run(|| db.call())
        .await;
    assert_eq!(
        result,
        Err(DbError {
            message: NETWORK_LOST,
            attempt: 5
        })
    );
    assert_eq!(db.calls.get(), 5);
}

#[tokio::test(start_paused = true)]
async fn constraint_violation_is_not_retried() {
    let db = Script::failing(&[UNIQUE]);
    let result = Retry::new("users.insert").run(|| db.call()).await;
    assert_eq!(
        result,
        Err(DbError {
            message: UNIQUE,
            attempt: 1
        })
    );
    assert_eq!(db.calls.get(), 1);
}

#[tokio::test(start_paused = true)]
async fn permanent_failure_of_a_read_is_not_retried() {
    let db = Script::failing(&[UNIQUE]);
    let result = Retry::new("users.find")
        .read_only(true)
        .run(|| db.call())
        .await;
    assert!(result.is_err());
    assert_eq!(db.calls.get(), 1);
}

#[tokio::test(start_paused = true)]
async fn write_failing_with_internal_error_is_not_retried() {
    let db = Script::failing(&[INTERNAL]);
    let start = Instant::now();
    let result = Retry::new("users.insert")
        .read_only(false)
        .run(|| db.call())
        .await;
    assert_eq!(
        result,
        Err(DbError {
            message: INTERNAL,
            attempt: 1
        })
    );
    assert_eq!(db.calls.get(), 1);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn write_is_retried_when_d1_was_not_reached() {
    let db = Script::failing(&[CANNOT_RESOLVE, CANNOT_RESOLVE]);
    let result = Retry::new("users.insert").seed(3).run(|| db.call()).await;
    assert_eq!(result, Ok("row"));
    assert_eq!(db.calls.get(), 3);
}

#[tokio::test(start_paused = true)]
async fn write_stops_at_the_first_maybe_executed_failure_after_not_executed_ones() {
    let db = Script::failing(&[CANNOT_RESOLVE, NETWORK_LOST]);
    let result = Retry::new("users.insert").seed(4).run(|| db.call()).await;
    assert_eq!(
        result,
        Err(DbError {
            message: NETWORK_LOST,
            attempt: 2
        })
    );
    assert_eq!(db.calls.get(), 2);
}

#[tokio::test(start_paused = true)]
async fn idempotent_work_is_retried_after_maybe_executed_failures() {
    let db = Script::failing(&[INTERNAL, NETWORK_LOST]);
    let result = Retry::new("users.upsert")
        .idempotent(true)
        .seed(5)
        .run(|| db.call())
        .await;
    assert_eq!(result, Ok("row"));
    assert_eq!(db.calls.get(), 3);
}

#[tokio::test(start_paused = true)]
async fn first_retry_waits_between_160_and_240_ms() {
    for seed in 0..200 {
        let db = Script::failing(&[NETWORK_LOST]);
        Retry::new("users.find")
            .read_only(true)
            // 200 failures would spend the process-wide retry budget (see tests/budget.rs).
            .policy(RetryPolicy::DEFAULT.without_budget())
            .seed(seed)
            .run(|| db.call())
            .await
            .unwrap();
        let wait = db.waits()[0];
        assert!(
            (Duration::from_millis(160)..=Duration::from_millis(240)).contains(&wait),
            "seed {seed}: first wait {wait:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn each_wait_stays_within_its_jittered_bounds_and_the_total_within_3_6_s() {
    // 1000 failures would spend the process-wide retry budget (see tests/budget.rs).
    let policy = RetryPolicy::DEFAULT.without_budget();
    let mut shortest = Duration::MAX;
    let mut longest = Duration::ZERO;
    for seed in 0..200 {
        let db = Script::failing(&[NETWORK_LOST; 5]);
        let start = Instant::now();
        let result = Retry::new("users.find")
            .read_only(true)
            .policy(policy)
            .seed(seed)
            .run(|| db.call())
            .await;
        assert!(result.is_err());
        let waits = db.waits();
        assert_eq!(waits.len(), 4);
        for (retry, wait) in (1..).zip(&waits) {
            let (min, max) = policy.delay_bounds(retry);
            assert!(
                min <= *wait && *wait <= max,
                "seed {seed} retry {retry}: {wait:?}"
            );
        }
        let total = start.elapsed();
        assert!(
            total <= Duration::from_millis(3600),
            "seed {seed}: waited {total:?}"
        );
        shortest = shortest.min(total);
        longest = longest.max(total);
    }
    // Jitter really spreads the schedule: 200 seeds do not all wait the same.
    assert!(
        longest - shortest > Duration::from_millis(500),
        "{shortest:?}..{longest:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_same_seed_gives_the_same_waits() {
    let run = |seed| async move {
        let db = Script::failing(&[NETWORK_LOST; 3]);
        Retry::new("users.find")
            .read_only(true)
            .seed(seed)
            .run(|| db.call())
            .await
            .unwrap();
        db.waits()
    };
    assert_eq!(run(9).await, run(9).await);
    assert_ne!(run(9).await, run(10).await);
}

#[tokio::test(start_paused = true)]
async fn custom_policy_attempts_and_delays_are_honoured() {
    let policy = RetryPolicy::DEFAULT
        .with_max_attempts(3)
        .with_base_delay(Duration::from_millis(10))
        .with_max_delay(Duration::from_millis(15))
        .with_jitter(100, 100);
    let db = Script::failing(&[NETWORK_LOST; 5]);
    let result = Retry::new("users.find")
        .read_only(true)
        .policy(policy)
        .run(|| db.call())
        .await;
    assert_eq!(
        result,
        Err(DbError {
            message: NETWORK_LOST,
            attempt: 3
        })
    );
    assert_eq!(db.calls.get(), 3);
    assert_eq!(
        db.waits(),
        [Duration::from_millis(10), Duration::from_millis(15)]
    );
}

#[tokio::test(start_paused = true)]
async fn one_attempt_policy_never_retries() {
    let db = Script::failing(&[CANNOT_RESOLVE]);
    let policy = RetryPolicy::DEFAULT.with_max_attempts(1);
    let result = Retry::new("users.find")
        .read_only(true)
        .policy(policy)
        .run(|| db.call())
        .await;
    assert!(result.is_err());
    assert_eq!(db.calls.get(), 1);
}

#[tokio::test(start_paused = true)]
async fn invalid_policy_makes_a_single_attempt_instead_of_panicking() {
    for policy in [
        RetryPolicy::DEFAULT.with_max_attempts(0),
        RetryPolicy::DEFAULT.with_base_delay(Duration::from_secs(3)),
        RetryPolicy::DEFAULT.with_jitter(0, 100),
    ] {
        let db = Script::failing(&[CANNOT_RESOLVE]);
        let result = Retry::new("users.find")
            .policy(policy)
            .run(|| db.call())
            .await;
        assert_eq!(
            result,
            Err(DbError {
                message: CANNOT_RESOLVE,
                attempt: 1
            })
        );
        assert_eq!(db.calls.get(), 1);
        // And a call that succeeds still succeeds.
        let db = Script::failing(&[]);
        let result = Retry::new("users.find")
            .policy(policy)
            .run(|| db.call())
            .await;
        assert_eq!(result, Ok("row"));
    }
}

#[tokio::test(start_paused = true)]
async fn a_future_dropped_mid_wait_leaves_nothing_behind() {
    let db = Script::failing(&[NETWORK_LOST; 5]);
    let probe = Rc::new(());
    {
        let captured = Rc::clone(&probe);
        let db = Rc::clone(&db);
        let call = Retry::new("users.find")
            .read_only(true)
            .seed(6)
            .run(move || {
                let _held = Rc::clone(&captured);
                let db = Rc::clone(&db);
                async move { db.call().await }
            });
        // The first attempt fails and the driver starts its 160-240 ms wait; stop it there.
        let timed_out = tokio::time::timeout(Duration::from_millis(100), call).await;
        assert!(timed_out.is_err());
    }
    assert_eq!(db.calls.get(), 1);
    tokio::time::sleep(Duration::from_secs(10)).await;
    // No attempt ran after the drop, and every captured handle was released.
    assert_eq!(db.calls.get(), 1);
    assert_eq!(Rc::strong_count(&probe), 1);
    assert_eq!(Rc::strong_count(&db), 1);
}

#[tokio::test(start_paused = true)]
async fn run_by_classifies_with_the_callers_function() {
    let calls = Cell::new(0);
    let result: Result<(), String> = Retry::new("jobs.tick")
        .seed(7)
        .run_by(
            |message: &String| {
                if message == "busy" {
                    FailureClass::NotExecuted
                } else {
                    FailureClass::Permanent
                }
            },
            || {
                calls.set(calls.get() + 1);
                let n = calls.get();
                async move {
                    if n < 3 {
                        Err("busy".to_owned())
                    } else {
                        Err("broken".to_owned())
                    }
                }
            },
        )
        .await;
    assert_eq!(result, Err("broken".to_owned()));
    assert_eq!(calls.get(), 3);
}

#[tokio::test(start_paused = true)]
async fn custom_sleeper_receives_the_jittered_delays() {
    let asked = Rc::new(RefCell::new(Vec::new()));
    let sleeper = {
        let asked = Rc::clone(&asked);
        move |d: Duration| {
            asked.borrow_mut().push(d);
            std::future::ready(())
        }
    };
    let db = Script::failing(&[NETWORK_LOST, NETWORK_LOST]);
    let result = Retry::new("users.find")
        .read_only(true)
        .seed(8)
        .sleeper(sleeper)
        .run(|| db.call())
        .await;
    assert_eq!(result, Ok("row"));
    let asked = asked.borrow();
    assert_eq!(asked.len(), 2);
    assert!((Duration::from_millis(160)..=Duration::from_millis(240)).contains(&asked[0]));
    assert!((Duration::from_millis(320)..=Duration::from_millis(480)).contains(&asked[1]));
}

#[tokio::test(start_paused = true)]
async fn inside_a_whole_attempt_the_driver_leaves_the_decision_outside() {
    // A `Retry` (or `D1Retry`, which is built on it) called inside an attempt that is
    // retried as a whole must not retry too, or the attempts multiply.
    let script = Script::failing(&[NETWORK_LOST, NETWORK_LOST]);
    let inner = d1_retry_runtime::__private::scoped(
        Retry::new("inner").read_only(true).run(|| script.call()),
    )
    .await;
    assert_eq!(inner.map_err(|e| e.attempt), Err(1));
    assert_eq!(script.calls.get(), 1);

    // Outside the scope, the same driver retries.
    let script = Script::failing(&[NETWORK_LOST]);
    let outer = Retry::new("outer")
        .read_only(true)
        .run(|| script.call())
        .await;
    assert!(outer.is_ok());
    assert_eq!(script.calls.get(), 2);
}

#[tokio::test(start_paused = true)]
async fn nested_drivers_make_at_most_max_attempts_calls() {
    // Retry around Retry: the outer one's attempts enter the scope, so the inner one
    // makes one call per outer attempt: 5 in all, not 25.
    let script = Script::failing(&[NETWORK_LOST; 30]);
    let result = Retry::new("outer")
        .read_only(true)
        .run(|| Retry::new("inner").read_only(true).run(|| script.call()))
        .await;
    assert!(result.is_err());
    assert_eq!(script.calls.get(), 5);
}
