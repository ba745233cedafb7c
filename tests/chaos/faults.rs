//! When the local D1 fails: bursts in virtual time and in call order, writes that ran and
//! whose caller hears otherwise, background noise with every documented message, and, for
//! the operations with time limits, stalls: before and after execution, ending in success
//! or in failure, and minutes in which D1 hangs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use d1_retry::FailureClass;
use d1_retry::testing::{Clock, Fault, FaultPlan, Message, Operation, Timing};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

use crate::repository::TIMED_MARK;

/// When each D1 call was made (virtual time), by the call's index on the database.
///
/// A `#[d1_retry]` method runs its body once and retries each execution on its own, so the
/// body cannot stamp its attempts: the fault plan's first rule, which never strikes, does.
#[derive(Clone, Default)]
pub struct CallStamps(Arc<Mutex<HashMap<u64, Instant>>>);

impl CallStamps {
    fn record(&self, index: u64) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(index, Instant::now());
    }

    /// When call `index` was made; forgotten once taken.
    pub fn take(&self, index: u64) -> Option<Instant> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&index)
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

pub fn hash(parts: &[u64]) -> u64 {
    parts
        .iter()
        .fold(0x51_7CC1_B727_220A, |h, p| splitmix(h ^ *p))
}

/// Outages in virtual time: in some 20 s periods, every call fails for 4-10 s, longer than
/// the 3.6 s default schedule can wait.
fn in_time_burst(seed: u64, salt: u64, now: Duration) -> bool {
    const PERIOD: u64 = 20_000;
    let now = u64::try_from(now.as_millis()).unwrap_or(u64::MAX);
    let period = now / PERIOD;
    let h = hash(&[seed, salt, period]);
    if !h.is_multiple_of(3) {
        return false;
    }
    let length = 4_000 + (h >> 8) % 6_000;
    let start = (h >> 24) % (PERIOD - length);
    (start..start + length).contains(&(now % PERIOD))
}

/// D1 hanging, as operators report it: in some 2-minute periods, every call made during
/// 20-60 s hangs.
fn in_hang(seed: u64, now: Duration) -> bool {
    const PERIOD: u64 = 120_000;
    let now = u64::try_from(now.as_millis()).unwrap_or(u64::MAX);
    let h = hash(&[seed, 0x57A1, now / PERIOD]);
    if !h.is_multiple_of(2) {
        return false;
    }
    let length = 20_000 + (h >> 8) % 40_000;
    let start = (h >> 24) % (PERIOD - length);
    (start..start + length).contains(&(now % PERIOD))
}

/// Runs of 6 to 14 consecutive failing calls, in some blocks of 400 calls.
fn in_call_burst(seed: u64, salt: u64, index: u64) -> bool {
    const BLOCK: u64 = 400;
    let h = hash(&[seed, salt, index / BLOCK]);
    if !h.is_multiple_of(2) {
        return false;
    }
    let length = 6 + (h >> 8) % 9;
    let start = (h >> 24) % (BLOCK - length);
    (start..start + length).contains(&(index % BLOCK))
}

pub fn fault_plan(seed: u64, clock: &Clock, stamps: &CallStamps) -> FaultPlan {
    use Message::*;
    use Timing::*;
    let mut rng = SmallRng::seed_from_u64(hash(&[seed, 0xFA17]));
    let mut plan = FaultPlan::new();
    // First, so that it sees every call; it never strikes, so the rules after it count
    // the same calls as without it.
    let stamps = stamps.clone();
    plan.push(Fault::new(Custom("never injected")).when(move |call| {
        stamps.record(call.index);
        false
    }));
    for (salt, message, timing) in [
        (1, TooManyRequestsQueued, BeforeExecution),
        (2, NetworkConnectionLost, AfterExecution),
        (3, InternalError, BeforeExecution),
    ] {
        let clock = clock.clone();
        plan.push(
            Fault::new(message)
                .timing(timing)
                .when(move |_| in_time_burst(seed, salt, clock.now())),
        );
    }
    for (salt, message, timing) in [
        (4, CannotResolve, BeforeExecution),
        (5, StorageReset, AfterExecution),
    ] {
        plan.push(
            Fault::new(message)
                .timing(timing)
                .when(move |call| in_call_burst(seed, salt, call.index)),
        );
    }
    // Writes that ran, and whose caller hears otherwise.
    for message in [
        NetworkConnectionLost,
        InternalError,
        CodeUpdated,
        RequestsQueuedTooLong,
    ] {
        plan.push(
            Fault::new(message)
                .after_execution()
                .when_sql_contains("INSERT INTO writes")
                .with_probability(0.02, rng.random()),
        );
    }
    plan.push(
        Fault::new(ClientDisconnected)
            .after_execution()
            .on(Operation::Batch)
            .with_probability(0.05, rng.random()),
    );
    // Background noise: every documented message, before and after execution, except that
    // a "not executed" message means D1 never ran the statement: after execution it would
    // be D1 breaking its own contract (and d1-retry, trusting it, would run a write twice).
    for message in Message::DOCUMENTED {
        let timings: &[Timing] = match message.documented_class() {
            Some(FailureClass::NotExecuted) => &[BeforeExecution],
            _ => &[BeforeExecution, AfterExecution],
        };
        for &timing in timings {
            plan.push(
                Fault::new(message)
                    .timing(timing)
                    .with_probability(0.006, rng.random()),
            );
        }
    }
    // Stalls, on the operations with time limits only (the others would wait each one
    // out): shorter than the 2 s attempt timeout and far longer; before execution (a call
    // given up then never runs) and after it (the statement is committed, then the answer
    // hangs); ending in success, or in failure.
    let secs = Duration::from_secs;
    for (stall, timing) in [
        (1, BeforeExecution),
        (3, BeforeExecution),
        (40, BeforeExecution),
        (1, AfterExecution),
        (5, AfterExecution),
        (60, AfterExecution),
    ] {
        plan.push(
            Fault::stall(secs(stall))
                .timing(timing)
                .when_sql_contains(TIMED_MARK)
                .with_probability(0.015, rng.random()),
        );
    }
    for (message, timing, stall) in [
        // Not executed after a hang: retried, a write too.
        (CannotResolve, BeforeExecution, 1),
        (StorageReset, BeforeExecution, 3),
        // The storage-timeout reset that ends a long stall: permanent.
        (StorageTimeout, BeforeExecution, 45),
        (NetworkConnectionLost, AfterExecution, 1),
        (InternalError, AfterExecution, 30),
    ] {
        plan.push(
            Fault::new(message)
                .timing(timing)
                .stalling(secs(stall))
                .when_sql_contains(TIMED_MARK)
                .with_probability(0.015, rng.random()),
        );
    }
    // Hang, then run and commit, then fail: a caller that gives up during the hang
    // cancels the statement.
    plan.push(
        Fault::new(StorageReset)
            .after_execution()
            .stall_timing(BeforeExecution)
            .stalling(secs(4))
            .when_sql_contains(TIMED_MARK)
            .with_probability(0.015, rng.random()),
    );
    // D1 unresponsive for up to a minute: every call made then hangs 60 s and fails, half
    // of the writes committed first.
    for (timing, share) in [(AfterExecution, 0.5), (BeforeExecution, 1.0)] {
        let clock = clock.clone();
        let mut coin = SmallRng::seed_from_u64(rng.random());
        plan.push(
            Fault::new(StorageTimeout)
                .timing(timing)
                .stalling(secs(60))
                .when_sql_contains(TIMED_MARK)
                .when(move |_| in_hang(seed, clock.now()) && coin.random_bool(share)),
        );
    }
    plan
}
