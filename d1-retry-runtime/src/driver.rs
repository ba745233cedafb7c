//! The whole-attempt retry loop's decisions, shared by [`Retry`](crate::Retry) and the
//! `#[d1_retry(read_only)]` / `#[d1_retry(idempotent)]` expansion: one [`Call`] whose only
//! execution is the whole attempt, so both loops decide with the same code.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::call::{Call, race};
use crate::decide::Access;
use crate::failure::Failure;
use crate::operation::OperationName;
use crate::scope::Inside;
use crate::timeout::{TimeLimit, TimedOut};
use crate::{RetryPolicy, Sleeper, Stopwatch};

/// Counts attempts and decides, after each failure, whether and how long to wait.
///
/// It holds no clock unless the policy has a deadline, and allocates nothing; a call that
/// succeeds at once costs a few stores.
pub struct Driver<'a, S: Sleeper> {
    call: Call<'a, S>,
    /// The deadline's stopwatch, started with the driver when the policy has a deadline.
    started: Option<Stopwatch>,
    attempt: u32,
    seed: Option<u64>,
    /// The time limit that cut the last attempt, if one did.
    cut: Option<TimeLimit>,
    /// The wait decided after the last failure, made before the next attempt.
    waiting: Option<Pin<Box<S::Sleep>>>,
}

impl<'a, S: Sleeper> Driver<'a, S> {
    /// A driver about to make its first attempt.
    pub fn new(policy: &'a RetryPolicy, operation: OperationName<'a>, sleeper: S) -> Self {
        let call = Call::with_sleeper(policy, operation, sleeper);
        Driver {
            started: call.start_deadline(),
            call,
            attempt: 1,
            seed: None,
            cut: None,
            waiting: None,
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
        if let Some(wait) = self.waiting.take() {
            wait.await;
        }
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

    /// Makes the next attempt ([`turn`](Self::turn) or [`attempt`](Self::attempt)) wait
    /// `delay` first, so that the loop awaits once per attempt.
    pub fn wait_before_next(&mut self, delay: Duration) {
        self.waiting = Some(self.call.wait(delay));
    }

    /// The next attempt of a loop without time limits: the wait decided after the last
    /// failure, then `attempt` polled inside the scope that keeps the D1 calls within
    /// from retrying on their own.
    pub fn turn<'t, F: Future>(&'t mut self, attempt: Pin<&'t mut F>) -> Turn<'t, S, F> {
        Turn {
            waiting: &mut self.waiting,
            attempt,
        }
    }

    /// Waits `delay` through the sleeper (on the heap: see `Call::wait`).
    pub fn sleep(&self, delay: Duration) -> core::pin::Pin<Box<S::Sleep>> {
        self.call.wait(delay)
    }
}

/// The future of [`Driver::turn`]: a plain struct, so that a whole-body function adds one
/// await point per attempt and no state machine for the wait.
#[must_use = "futures do nothing unless polled"]
pub struct Turn<'t, S: Sleeper, F> {
    waiting: &'t mut Option<Pin<Box<S::Sleep>>>,
    attempt: Pin<&'t mut F>,
}

impl<S: Sleeper, F: Future> Future for Turn<'_, S, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        if wait_is_pending::<S>(this.waiting, cx) {
            return Poll::Pending;
        }
        // Polled here rather than through `Scoped`, so that a function adds one `poll`
        // for its attempt, not two.
        let _inside = Inside::enter();
        this.attempt.as_mut().poll(cx)
    }
}

/// Polls the wait scheduled before an attempt, if any, and clears it once it is over.
/// Apart from [`Turn::poll`] so that it is compiled once per sleeper, not per function.
fn wait_is_pending<S: Sleeper>(
    waiting: &mut Option<Pin<Box<S::Sleep>>>,
    cx: &mut Context<'_>,
) -> bool {
    if let Some(wait) = waiting {
        if wait.as_mut().poll(cx).is_pending() {
            return true;
        }
        *waiting = None;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::Waits;
    use core::cell::Cell;

    #[test]
    fn a_turn_makes_the_scheduled_wait_then_polls_the_attempt_inside_the_scope() {
        let waits = Waits::default();
        let policy = RetryPolicy::DEFAULT;
        let mut driver = Driver::new(&policy, OperationName::Named("test"), &waits);
        let polled_nested = Cell::new(None);
        let attempt = || {
            core::future::poll_fn(|_| {
                polled_nested.set(Some(crate::scope::nested()));
                Poll::Ready(1)
            })
        };
        let mut cx = Context::from_waker(core::task::Waker::noop());

        // No wait scheduled: the first turn polls the attempt at once, inside the scope.
        let mut first = core::pin::pin!(attempt());
        assert_eq!(
            Pin::new(&mut driver.turn(first.as_mut())).poll(&mut cx),
            Poll::Ready(1)
        );
        assert_eq!(polled_nested.take(), Some(true));
        assert!(!crate::scope::nested(), "the scope ends with the poll");

        // A scheduled wait comes first: the attempt is not polled until it is over.
        driver.wait_before_next(Duration::from_millis(200));
        assert_eq!(*waits.0.borrow(), [Duration::from_millis(200)]);
        let mut second = core::pin::pin!(attempt());
        let mut turn = driver.turn(second.as_mut());
        assert_eq!(Pin::new(&mut turn).poll(&mut cx), Poll::Pending);
        assert_eq!(polled_nested.take(), None, "not polled during the wait");
        assert_eq!(Pin::new(&mut turn).poll(&mut cx), Poll::Ready(1));
        assert_eq!(polled_nested.take(), Some(true));
        drop(turn);
        assert!(driver.waiting.is_none(), "a wait is made once");
    }

    #[test]
    fn the_driver_counts_attempts_waits_on_the_schedule_and_gives_the_budget_back() {
        use crate::fake::{DbError, LOST};
        static TOKENS: crate::RetryTokens = crate::RetryTokens::new();
        let budget = crate::RetryBudget::new(&TOKENS).with_max_tokens(10);
        let policy = RetryPolicy::DEFAULT.with_budget(budget);
        let waits = Waits::default();
        let mut driver = Driver::new(&policy, OperationName::Named("test"), &waits);
        let error = DbError(LOST);
        let failure = Failure::from_error(&error);
        let first = driver.next_delay(&failure, Access::ReadOnly).unwrap();
        assert!(
            (Duration::from_millis(160)..=Duration::from_millis(240)).contains(&first),
            "{first:?}"
        );
        assert_eq!(driver.attempt, 2);
        let second = driver.next_delay(&failure, Access::ReadOnly).unwrap();
        assert!(second >= Duration::from_millis(320), "{second:?}");
        assert_eq!(driver.attempt, 3);
        assert_eq!(driver.next_delay(&failure, Access::Write), None);
        assert_eq!(
            driver.attempt, 3,
            "a failure handed back is not an attempt more"
        );
        let spent = budget.tokens();
        driver.succeeded();
        assert!(budget.tokens() > spent, "a success gives a share back");
    }
}
