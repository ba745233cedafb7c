//! The whole-attempt retry loop's decisions, shared by [`Retry`](crate::Retry) and the
//! `#[d1_retry(read_only)]` / `#[d1_retry(idempotent)]` expansion.

use core::time::Duration;

use crate::call::spend_token;
use crate::decide::{Access, Facts, decide};
use crate::failure::Failure;
use crate::operation::OperationName;
use crate::{RetryPolicy, Sleeper, jitter, log, scope};

/// Counts attempts and decides, after each failure, whether and how long to wait.
///
/// It holds no clock and allocates nothing; a call that succeeds at once costs a few stores.
pub struct Driver<'a, S> {
    policy: RetryPolicy,
    operation: OperationName<'a>,
    sleeper: S,
    attempt: u32,
    seed: Option<u64>,
}

impl<'a, S: Sleeper> Driver<'a, S> {
    /// A driver about to make its first attempt.
    pub fn new(policy: RetryPolicy, operation: OperationName<'a>, sleeper: S) -> Self {
        Driver {
            policy,
            operation,
            sleeper,
            attempt: 1,
            seed: None,
        }
    }

    /// Makes the jitter reproducible.
    #[must_use]
    pub fn with_seed(mut self, seed: Option<u64>) -> Self {
        self.seed = seed;
        self
    }

    /// Called after the current attempt failed: `Some(delay)` to wait and try again,
    /// `None` to give up and hand the caller its error.
    pub fn next_delay(&mut self, failure: &Failure<'_>, access: Access) -> Option<Duration> {
        if let Err(invalid) = self.policy.validate() {
            log::invalid_policy(self.operation, invalid);
            return None;
        }
        let class = failure.class();
        let nested = scope::nested();
        let budget_exhausted = spend_token(&self.policy, class, nested);
        let event = log::Event {
            operation: self.operation,
            read_only: access.is_read_only(),
            attempt: self.attempt,
            max_attempts: self.policy.max_attempts(),
            budget_exhausted,
            failure,
        };
        let facts = Facts {
            class,
            access,
            nested,
            retries_made: self.attempt - 1,
            max_attempts: self.policy.max_attempts(),
            budget_exhausted,
        };
        if let Err(withheld) = decide(facts) {
            log::withheld(&event, withheld);
            return None;
        }
        let (min, max) = self.policy.delay_bounds(self.attempt);
        let delay = jitter::draw(self.seed, self.attempt, min, max);
        log::retrying(&event, delay);
        self.attempt += 1;
        Some(delay)
    }

    /// Called once the current attempt succeeded: gives the retry budget back its share.
    ///
    /// One relaxed atomic load while the budget is full, no allocation, nothing logged.
    #[inline]
    pub fn succeeded(&self) {
        if let Some(budget) = self.policy.budget() {
            budget.record_success();
        }
    }

    /// Waits `delay` through the sleeper.
    pub fn sleep(&self, delay: Duration) -> S::Sleep {
        self.sleeper.sleep(delay)
    }
}
