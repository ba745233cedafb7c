//! The whole-attempt retry loop's decisions, shared by [`Retry`](crate::Retry) and the
//! `#[d1_retry(read_only)]` / `#[d1_retry(idempotent)]` expansion: one [`Call`] whose only
//! execution is the whole attempt, so both loops decide with the same code.

use core::future::Future;
use core::time::Duration;

use crate::call::{Call, race};
use crate::decide::Access;
use crate::failure::Failure;
use crate::operation::OperationName;
use crate::timeout::{TimeLimit, TimedOut};
use crate::{RetryPolicy, Sleeper, Stopwatch};

/// Counts attempts and decides, after each failure, whether and how long to wait.
///
/// It holds no clock unless the policy has a deadline, and allocates nothing; a call that
/// succeeds at once costs a few stores.
pub struct Driver<'a, S> {
    call: Call<'a, S>,
    /// The deadline's stopwatch, started with the driver when the policy has a deadline.
    started: Option<Stopwatch>,
    attempt: u32,
    seed: Option<u64>,
    /// The time limit that cut the last attempt, if one did.
    cut: Option<TimeLimit>,
}

impl<'a, S: Sleeper> Driver<'a, S> {
    /// A driver about to make its first attempt.
    pub fn new(policy: RetryPolicy, operation: OperationName<'a>, sleeper: S) -> Self {
        let call = Call::with_sleeper(policy, operation, sleeper);
        Driver {
            started: call.start_deadline(),
            call,
            attempt: 1,
            seed: None,
            cut: None,
        }
    }

    /// Makes the jitter reproducible.
    #[must_use]
    pub fn with_seed(mut self, seed: Option<u64>) -> Self {
        self.seed = seed;
        self
    }

    /// Runs one attempt within the policy's time limits: `Err` if a limit cut it (its
    /// future is then dropped, which does not cancel a query in D1).
    pub async fn attempt<F: Future>(&mut self, attempt: F) -> Result<F::Output, TimedOut> {
        self.cut = None;
        let Some(limit) = self.call.attempt_limit(self.started) else {
            return Ok(attempt.await);
        };
        let result = race(attempt, self.call.sleeper(), limit, self.call.operation()).await;
        if let Err(cut) = &result {
            self.cut = Some(cut.limit());
        }
        result
    }

    /// Called after the current attempt failed: `Some(delay)` to wait and try again,
    /// `None` to give up and hand the caller its error.
    pub fn next_delay(&mut self, failure: &Failure<'_>, access: Access) -> Option<Duration> {
        let delay = self.call.decide_after(
            failure,
            access,
            self.attempt,
            self.cut.take(),
            self.started,
            self.seed,
        )?;
        self.attempt += 1;
        Some(delay)
    }

    /// Called once the current attempt succeeded: gives the retry budget back its share.
    ///
    /// One relaxed atomic load while the budget is full, no allocation, nothing logged.
    #[inline]
    pub fn succeeded(&self) {
        self.call.succeeded();
    }

    /// Waits `delay` through the sleeper.
    pub fn sleep(&self, delay: Duration) -> S::Sleep {
        self.call.sleeper().sleep(delay)
    }
}
