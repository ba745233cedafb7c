//! One call of a `#[d1_retry]` function: the schedule its D1 executions share.
//!
//! Each execution in the body (a `first`, `all`, `run`, `raw`, `batch`, `exec`, ...) is
//! retried on its own, as the original TypeScript wrapper retried each binding call: a
//! statement that completed never runs again. The executions of one call share one
//! policy and one count of retries: the call makes at most `max_attempts - 1` retries in
//! all, and its n-th retry waits the schedule's n-th delay. So no execution makes more
//! than `max_attempts` attempts, and the waits of one call add up to at most
//! [`RetryPolicy::max_total_delay`]. A loop of 100 inserts gets 4 retries in all.

use core::future::Future;
use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;

use crate::decide::{Access, Facts, decide};
use crate::failure::Failure;
use crate::operation::OperationName;
use crate::{DefaultSleeper, FailureClass, RetryPolicy, Sleeper, jitter, log, scope};

/// The schedule shared by the executions of one call.
///
/// `Sync` (an atomic count, not a `Cell`), so a user's future that holds it across an
/// `.await` stays `Send` when it was.
#[derive(Debug)]
pub struct Call<'a, S = DefaultSleeper> {
    policy: RetryPolicy,
    operation: OperationName<'a>,
    retries: AtomicU32,
    sleeper: S,
}

impl<'a> Call<'a> {
    /// A call about to make its first execution, waiting through the [`DefaultSleeper`].
    pub fn new(policy: RetryPolicy, operation: OperationName<'a>) -> Self {
        Call::with_sleeper(policy, operation, DefaultSleeper::default())
    }
}

impl<'a, S> Call<'a, S> {
    /// A call that waits through `sleeper`.
    pub const fn with_sleeper(
        policy: RetryPolicy,
        operation: OperationName<'a>,
        sleeper: S,
    ) -> Self {
        Call {
            policy,
            operation,
            retries: AtomicU32::new(0),
            sleeper,
        }
    }

    /// The retries this call has made so far, all executions together.
    pub fn retries(&self) -> u32 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Called after an execution failed on its `attempt`-th attempt: `Some(delay)` to wait
    /// and try again, `None` to hand the caller the error.
    pub fn after_failure(
        &self,
        failure: &Failure<'_>,
        access: Access,
        attempt: u32,
    ) -> Option<Duration> {
        if let Err(invalid) = self.policy.validate() {
            log::invalid_policy(self.operation, invalid);
            return None;
        }
        let class = failure.class();
        let nested = scope::nested();
        let budget_exhausted = spend_token(&self.policy, class, nested);
        let max_attempts = self.policy.max_attempts();
        let event = log::Event {
            operation: self.operation,
            read_only: access.is_read_only(),
            attempt,
            max_attempts,
            budget_exhausted,
            failure,
        };
        let mut facts = Facts {
            class,
            access,
            nested,
            retries_made: self.retries(),
            max_attempts,
            budget_exhausted,
        };
        let retry = loop {
            if let Err(withheld) = decide(facts) {
                log::withheld(&event, withheld);
                return None;
            }
            // Concurrent executions (`join_all`) may race for the last retry: take it
            // only if the count is still the one decided on.
            match self.retries.compare_exchange_weak(
                facts.retries_made,
                facts.retries_made + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(made) => break made + 1,
                Err(now) => facts.retries_made = now,
            }
        };
        let (min, max) = self.policy.delay_bounds(retry);
        let delay = jitter::draw(None, retry, min, max);
        log::retrying(&event, delay);
        Some(delay)
    }

    /// Called once an execution succeeded: gives the retry budget back its share.
    #[inline]
    pub fn succeeded(&self) {
        if let Some(budget) = self.policy.budget() {
            budget.record_success();
        }
    }
}

/// Every transient failure is news about D1's health and spends a token, whether or not
/// this particular failure can be retried; a permanent one means D1 answered. A failure
/// inside a whole-body attempt is counted by that attempt, not twice.
pub(crate) fn spend_token(policy: &RetryPolicy, class: FailureClass, nested: bool) -> bool {
    match policy.budget() {
        Some(budget) if class != FailureClass::Permanent && !nested => !budget.record_failure(),
        _ => false,
    }
}

/// Runs one execution until it succeeds or must not be retried: the first attempt with a
/// clone of `args`, each retry with another clone, so nothing in the user's body runs again.
pub async fn execute<S, A, F, Fut, T, E, C>(
    call: &Call<'_, S>,
    access: Access,
    args: A,
    mut attempt: F,
    mut classify: C,
) -> Result<T, E>
where
    S: Sleeper,
    A: Clone,
    F: FnMut(A) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    C: for<'e> FnMut(&'e E) -> Failure<'e>,
{
    let mut attempts = 1;
    loop {
        let delay = match attempt(args.clone()).await {
            Ok(value) => {
                call.succeeded();
                return Ok(value);
            }
            Err(error) => match call.after_failure(&classify(&error), access, attempts) {
                Some(delay) => delay,
                None => return Err(error),
            },
        };
        // The error was dropped at the end of the match, so an error that is not `Send`
        // never lives across the wait.
        call.sleeper.sleep(delay).await;
        attempts += 1;
    }
}
