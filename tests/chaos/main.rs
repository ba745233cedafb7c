//! Chaos: thousands of randomized calls through `#[d1_retry]` methods and through the
//! `Retry` driver, against the local D1 failing with every documented message, before and
//! after execution, in random faults and in bursts that outlast the retry schedule; and,
//! for the operations with time limits (`attempt_timeout_ms`/`deadline_ms`,
//! `Retry::run_timed`), hanging before or after execution, then answering or failing.
//!
//! After each round, the database itself is the judge:
//! - no write is applied twice; a write the caller saw succeed is there exactly once; a
//!   write whose caller got an error is there at most once (exactly as often as the journal
//!   says it ran);
//! - every read returned what the database held;
//! - every execution stopped where the retry table says: a permanent failure after one call,
//!   a maybe-executed write failure at once, a transient read failure only when its call's
//!   retries were spent (or its retry budget ran out); the caller got the last call's error;
//! - a `#[d1_retry]` method's body ran once, each execution retried on its own, never again
//!   once it completed (a read, an insert and a read in one method; a loop of inserts);
//!   the executions of one call shared `max_attempts - 1` retries, none made more than
//!   `max_attempts` attempts, and the n-th retry of the call waited within the policy's
//!   bounds for retry n (tokio's paused clock: the waits are virtual and exact);
//! - a stall longer than its call's time limit was cut exactly at the limit, and no other;
//!   a cut read was retried, a cut write handed back with a `TimedOut` naming the limit
//!   (and in the database at most once: exactly when D1 had run it); the caller had its
//!   answer when its last call ended, and no call passed its deadline.
//!
//! The suite, by concept: [`faults`] is when the local D1 fails, [`repository`] the
//! operations (`#[d1_retry]` methods, their SQL and policies), [`harness`] runs them in
//! lanes and records what each caller saw, and [`checks`] judges every round against the
//! journal and the database.
//!
//! Reproducible: `D1_RETRY_CHAOS_SEED` (default fixed) and `D1_RETRY_CHAOS_OPS` (default
//! 10,000 per path). A soak: `D1_RETRY_CHAOS_OPS=1000000 cargo test --release -p d1-retry
//! --test chaos -- --nocapture`.

mod checks;
mod faults;
mod harness;
mod repository;

use std::time::Duration;

use harness::{Harness, LANES};
use repository::{DRIVER_BUDGETED, MACRO_BUDGETED, Path};

const DEFAULT_SEED: u64 = 0x00D1_C4A0_5EED;
const DEFAULT_OPS: u64 = 10_000;

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => {
            let text = text.trim();
            let parsed = match text.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => text.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("{name}={text:?} is not a number"))
        }
        Err(_) => default,
    }
}

/// One chaos run on a fresh local D1, in its own runtime with tokio's paused clock, so the
/// waits are virtual: hours of retry schedules take seconds.
fn chaos(path: Path, seed: u64, ops: u64) -> Harness {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    runtime.block_on(async {
        let harness = Harness::new(path, seed, ops);
        DRIVER_BUDGETED.budget().expect("budgeted").refill();
        MACRO_BUDGETED.budget().expect("budgeted").refill();
        harness.run().await;
        harness
    })
}

/// The chaos runs of this file take turns: they share the budgets' token pools, and a
/// replay must start from the same pools as the run it replays.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn settings() -> (u64, u64) {
    (
        env_u64("D1_RETRY_CHAOS_SEED", DEFAULT_SEED),
        env_u64("D1_RETRY_CHAOS_OPS", DEFAULT_OPS),
    )
}

fn assert_exercised(harness: &Harness, ops: u64) {
    let tally = harness.tally.borrow();
    println!("{}", harness.summary());
    assert_eq!(tally.operations, ops.div_ceil(LANES) * LANES);
    // The run really exercised what it claims to: a fault plan that injected nothing would
    // pass every invariant vacuously.
    assert!(
        tally.retries > tally.operations / 20,
        "{}",
        harness.summary()
    );
    assert!(
        tally.faults_after > 0 && tally.faults_before > 0,
        "{}",
        harness.summary()
    );
    assert!(
        tally.maybe_executed_write_errors > 0 && tally.permanent_errors > 0 && tally.exhausted > 0,
        "{}",
        harness.summary()
    );
    // The stalls struck the operations with time limits: calls cut by each limit, cut reads
    // retried, cut writes handed back (some after D1 had run them), calls stopped before a
    // wait past their deadline.
    assert!(
        tally.stalled_calls > 0
            && tally.attempt_timeouts > 0
            && tally.deadline_cuts > 0
            && tally.timed_out_reads_retried > 0
            && tally.timed_out_writes_handed_back > 0
            && tally.timed_out_writes_in_database > 0
            && tally.deadline_stops > 0,
        "{}",
        harness.summary()
    );
    // The attribute path ran methods of several executions, and retried a later execution
    // after an earlier one had completed.
    if harness.path == Path::Macro {
        assert!(
            tally.multi_execution_ops > 0 && tally.later_execution_retries > 0,
            "{}",
            harness.summary()
        );
    }
}

#[test]
fn chaos_through_the_retry_driver() {
    let _turn = one_at_a_time();
    let (seed, ops) = settings();
    assert_exercised(&chaos(Path::Driver, seed, ops), ops);
}

#[test]
fn chaos_through_d1_retry_methods() {
    let _turn = one_at_a_time();
    let (seed, ops) = settings();
    assert_exercised(&chaos(Path::Macro, seed, ops), ops);
}

/// The same seed replays the same run: same calls, same faults, same outcomes.
#[test]
fn a_seed_replays_the_same_run() {
    let _turn = one_at_a_time();
    for path in [Path::Driver, Path::Macro] {
        let (a, b, c) = (
            chaos(path, 7, 400),
            chaos(path, 7, 400),
            chaos(path, 8, 400),
        );
        let (a, b, c) = (a.tally.borrow(), b.tally.borrow(), c.tally.borrow());
        assert_eq!(a.fingerprint, b.fingerprint, "{path:?}");
        assert_eq!(
            (a.calls, a.faults_before, a.faults_after),
            (b.calls, b.faults_before, b.faults_after)
        );
        assert_ne!(a.fingerprint, c.fingerprint, "{path:?}");
    }
}
