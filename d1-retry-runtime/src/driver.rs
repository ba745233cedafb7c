//! The retry loop's decisions, shared by [`Retry`](crate::Retry) and the `#[d1_retry]` expansion.

use core::time::Duration;

use rand::rngs::SmallRng;

use crate::failure::Failure;
use crate::operation::Operation;
use crate::{FailureClass, RetryPolicy, Sleeper, jitter, log, should_retry};

/// What re-running the failed attempt could do to the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Every statement of the attempt was read-only.
    ReadOnly,
    /// The work is declared safe to run twice.
    Idempotent,
    /// The attempt had one statement that may write.
    Write,
    /// The attempt may have written before the statement that failed: never retried.
    Unretryable,
}

impl Access {
    /// Whether every statement was read-only (the `d1.read_only` log field).
    pub fn is_read_only(self) -> bool {
        matches!(self, Access::ReadOnly)
    }

    fn allows(self, class: FailureClass) -> bool {
        match self {
            Access::ReadOnly | Access::Idempotent => should_retry(class, true),
            Access::Write => should_retry(class, false),
            Access::Unretryable => false,
        }
    }
}

/// Counts attempts and decides, after each failure, whether and how long to wait.
///
/// It holds no clock and allocates nothing; the random source is only seeded once a
/// failure needs a jittered delay, so a call that succeeds at once costs a few stores.
pub struct Driver<'a, S> {
    policy: RetryPolicy,
    operation: Operation<'a>,
    sleeper: S,
    attempt: u32,
    seed: Option<u64>,
    rng: Option<SmallRng>,
}

impl<'a, S: Sleeper> Driver<'a, S> {
    /// A driver about to make its first attempt.
    pub fn new(policy: RetryPolicy, operation: Operation<'a>, sleeper: S) -> Self {
        Driver {
            policy,
            operation,
            sleeper,
            attempt: 1,
            seed: None,
            rng: None,
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
        // Every transient failure is news about D1's health and spends a token, whether or
        // not this particular failure could be retried; a permanent one means D1 answered.
        let budget_exhausted = match self.policy.budget() {
            Some(budget) if class != FailureClass::Permanent => !budget.record_failure(),
            _ => false,
        };
        let event = log::Event {
            operation: self.operation,
            read_only: access.is_read_only(),
            attempt: self.attempt,
            max_attempts: self.policy.max_attempts(),
            budget_exhausted,
            failure,
        };
        if !access.allows(class) {
            log::not_retried(&event);
            return None;
        }
        if self.attempt >= self.policy.max_attempts() {
            log::exhausted(&event);
            return None;
        }
        if budget_exhausted {
            log::budget_exhausted(&event);
            return None;
        }
        let (min, max) = self.policy.delay_bounds(self.attempt);
        let delay = jitter::draw(&mut self.rng, self.seed, min, max);
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
