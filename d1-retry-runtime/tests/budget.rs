//! The retry budget inside the driver: failures spend it, successes refill it, and a spent
//! budget stops retries and says so in the logs.

use std::cell::Cell;
use std::fmt;

use d1_retry_runtime::{Retry, RetryBudget, RetryPolicy, RetryTokens};

#[derive(Debug, PartialEq)]
struct DbError(&'static str);

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for DbError {}

const OVERLOADED: &str = "D1_ERROR: D1 DB is overloaded. Too many requests queued.";
const UNIQUE: &str = "D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT";

/// Runs one logical call whose attempts fail with `message` `failures` times, then succeed;
/// returns how many attempts it made.
async fn call(policy: RetryPolicy, failures: u32, message: &'static str) -> u32 {
    let attempts = Cell::new(0);
    let _ = Retry::new("budget.test")
        .read_only(true)
        .policy(policy)
        .seed(1)
        .run(|| async {
            attempts.set(attempts.get() + 1);
            if attempts.get() <= failures {
                Err(DbError(message))
            } else {
                Ok(())
            }
        })
        .await;
    attempts.get()
}

#[tokio::test(start_paused = true)]
async fn a_spent_budget_stops_retries_and_successes_bring_them_back() {
    static TOKENS: RetryTokens = RetryTokens::new();
    let budget = RetryBudget::new(&TOKENS)
        .with_max_tokens(4)
        .with_token_ratio(0.5);
    let policy = RetryPolicy::DEFAULT.with_budget(budget);

    // 4 -> 3 (retry) -> 2 (at half: stop): two attempts instead of five.
    assert_eq!(call(policy, 10, OVERLOADED).await, 2);
    assert_eq!(budget.tokens(), 2.0);
    // Still at or below half: a failing call gets no retry at all.
    assert_eq!(call(policy, 10, OVERLOADED).await, 1);
    assert_eq!(budget.tokens(), 1.0);
    // Successful calls give back half a token each, through the driver's success hook.
    for _ in 0..3 {
        assert_eq!(call(policy, 0, OVERLOADED).await, 1);
    }
    assert_eq!(budget.tokens(), 2.5);
    assert!(budget.allows_retries());
    // A failure takes its token before the decision: from 3.5 it leaves 2.5, above half,
    // so it is retried.
    for _ in 0..2 {
        call(policy, 0, OVERLOADED).await;
    }
    assert_eq!(call(policy, 1, OVERLOADED).await, 2);
    assert_eq!(budget.tokens(), 3.0);
}

#[tokio::test(start_paused = true)]
async fn permanent_failures_do_not_spend_the_budget() {
    static TOKENS: RetryTokens = RetryTokens::new();
    let budget = RetryBudget::new(&TOKENS).with_max_tokens(2);
    let policy = RetryPolicy::DEFAULT.with_budget(budget);
    for _ in 0..10 {
        assert_eq!(call(policy, 1, UNIQUE).await, 1);
    }
    assert_eq!(budget.tokens(), 2.0);
}

#[tokio::test(start_paused = true)]
async fn without_a_budget_every_scheduled_retry_is_made() {
    let policy = RetryPolicy::DEFAULT.without_budget();
    for _ in 0..100 {
        assert_eq!(call(policy, 10, OVERLOADED).await, 5);
    }
}

#[tokio::test(start_paused = true)]
async fn the_default_policy_draws_on_the_shared_budget() {
    // The only test in this binary that touches the shared pool, so the counts are exact.
    let shared = RetryBudget::DEFAULT;
    assert_eq!(RetryPolicy::DEFAULT.budget(), Some(shared));
    let before = shared.tokens();
    assert_eq!(call(RetryPolicy::DEFAULT, 2, OVERLOADED).await, 3);
    // Two failures taken; one success gives back 0.1.
    assert!((shared.tokens() - (before - 2.0 + 0.1)).abs() < 1e-9);
    shared.refill();
}

use test_support::Logs;

#[test]
fn logs_say_when_the_budget_stopped_a_retry() {
    static TOKENS: RetryTokens = RetryTokens::new();
    let budget = RetryBudget::new(&TOKENS).with_max_tokens(2);
    let policy = RetryPolicy::DEFAULT.with_budget(budget);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime builds");
    let (logs, guard) = Logs::capture();
    // 2 -> 1: at or below half at once, so the first failure is not retried.
    assert_eq!(runtime.block_on(call(policy, 10, OVERLOADED)), 1);
    drop(guard);
    let text = logs.text();
    assert!(
        text.contains("D1 failure, not retried") && text.contains("d1.withheld=\"budget\""),
        "{text}"
    );
    assert!(text.contains("d1.budget_exhausted=true"), "{text}");
    assert!(text.contains("d1.attempt=1"), "{text}");
}
