//! One call of a `#[d1_retry]` function: the schedule its D1 executions share.
//!
//! Each execution in the body (a `first`, `all`, `run`, `raw`, `batch`, `exec`, ...) is
//! retried on its own, as the original TypeScript wrapper retried each binding call: a
//! statement that completed never runs again. The executions of one call share one
//! policy and one count of retries: the call makes at most `max_attempts - 1` retries in
//! all, and its n-th retry waits the schedule's n-th delay. So no execution makes more
//! than `max_attempts` attempts, and the waits of one call add up to at most
//! [`RetryPolicy::max_total_delay`]. A loop of 100 inserts gets 4 retries in all.
//!
//! With time limits, each attempt is raced against a timer (the attempt timeout, or what
//! is left of the call's deadline if that is sooner), and the deadline is measured from the
//! start of the call on the sleeper's clock.
//!
//! An execution awaited where it is made is retried by a loop written at its call site
//! (`execution.rs`, `timed_execution.rs`), which asks this schedule what to do after each
//! failure. [`execute`] and [`execute_timed`] are the same retries for an execution that
//! is not awaited there (a future stored, joined or returned), driven from one closure.

use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicU32, Ordering};
use core::task::{Context, Poll};
use core::time::Duration;

use crate::classify::failure::Failure;
use crate::log;
use crate::retry::decide::{Access, Facts, decide};
use crate::retry::follow::{Follow, Following};
use crate::retry::operation::OperationName;
use crate::retry::scope;
use crate::schedule::jitter;
use crate::schedule::timeout::{TimeLimit, TimedOut};
use crate::schedule::wait::{Held, Wait};
use crate::{FailureClass, RetryPolicy, Sleeper, Stopwatch};

/// The schedule shared by the executions of one call.
///
/// `Sync` (an atomic count, not a `Cell`), so a user's future that holds it across an
/// `.await` stays `Send` when it was.
#[derive(Debug)]
pub struct Call<'a, S = crate::DefaultSleeper> {
    /// Borrowed, not copied: the attribute's policies are constants (promoted to
    /// `'static`), and a reference keeps every call's future 64 bytes smaller.
    policy: &'a RetryPolicy,
    /// Borrowed too: the expansion's names are constants, and a call's future that held
    /// the name (32 bytes) would pass the 128 bytes a move copies inline on x86-64; over
    /// them, every move of the future is a call to `memmove` (BENCHMARKS.md, section 1).
    operation: &'a OperationName<'a>,
    retries: AtomicU32,
    sleeper: S,
}

/// A [`Call`] whose policy may have time limits: it starts the deadline's stopwatch with
/// the call. Kept apart so that a call without limits holds neither clock nor timer.
#[derive(Debug)]
pub struct TimedCall<'a, S = crate::DefaultSleeper> {
    call: Call<'a, S>,
    /// Started with the call when the policy has a deadline.
    started: Option<Stopwatch>,
}

#[cfg(any(feature = "tokio", all(feature = "worker", target_arch = "wasm32")))]
impl<'a> Call<'a> {
    /// A call about to make its first execution, waiting through the
    /// [`DefaultSleeper`](crate::DefaultSleeper).
    pub fn new(policy: &'a RetryPolicy, operation: &'a OperationName<'a>) -> Self {
        Call::with_sleeper(policy, operation, crate::DefaultSleeper::default())
    }
}

#[cfg(any(feature = "tokio", all(feature = "worker", target_arch = "wasm32")))]
impl<'a> TimedCall<'a> {
    /// A call within its policy's time limits, waiting through the
    /// [`DefaultSleeper`](crate::DefaultSleeper).
    pub fn new(policy: &'a RetryPolicy, operation: &'a OperationName<'a>) -> Self {
        TimedCall::with_sleeper(policy, operation, crate::DefaultSleeper::default())
    }
}

impl<'a, S: Sleeper> TimedCall<'a, S> {
    /// A call within its policy's time limits, waiting through `sleeper`.
    pub fn with_sleeper(
        policy: &'a RetryPolicy,
        operation: &'a OperationName<'a>,
        sleeper: S,
    ) -> Self {
        let call = Call::with_sleeper(policy, operation, sleeper);
        TimedCall {
            started: call.start_deadline(),
            call,
        }
    }

    /// The untimed schedule it extends.
    pub fn call(&self) -> &Call<'a, S> {
        &self.call
    }

    /// The deadline's stopwatch, started with the call; `None` without a deadline.
    pub(crate) fn started(&self) -> Option<Stopwatch> {
        self.started
    }
}

impl<'a, S: Sleeper> Call<'a, S> {
    /// A call that waits through `sleeper`.
    pub const fn with_sleeper(
        policy: &'a RetryPolicy,
        operation: &'a OperationName<'a>,
        sleeper: S,
    ) -> Self {
        Call {
            policy,
            operation,
            retries: AtomicU32::new(0),
            sleeper,
        }
    }

    /// The stopwatch of the call's deadline: only a deadline needs a clock.
    pub(crate) fn start_deadline(&self) -> Option<Stopwatch> {
        match self.policy.deadline() {
            Some(_) => self.sleeper.stopwatch(),
            None => None,
        }
    }

    pub(crate) fn sleeper(&self) -> &S {
        &self.sleeper
    }

    pub(crate) fn operation(&self) -> OperationName<'a> {
        *self.operation
    }

    /// The retries this call has made so far, all executions together.
    pub fn retries(&self) -> u32 {
        self.retries.load(Ordering::Relaxed)
    }

    /// What is left of the call's deadline, if it has one and a clock to measure it.
    pub(crate) fn remaining(&self, started: Option<Stopwatch>) -> Option<Duration> {
        let deadline = self.policy.deadline()?;
        let started = started?;
        Some(deadline.saturating_sub(started.elapsed()))
    }

    /// The timer the next attempt races against, and which limit it stands for.
    pub(crate) fn attempt_limit(&self, started: Option<Stopwatch>) -> Option<Limit> {
        // A limit of zero is invalid: the policy makes a single attempt, which such a
        // limit would cut before it reached D1, so it is left out (a deadline that has
        // passed since the call began still cuts the attempt before it is made).
        let timeout = self
            .policy
            .attempt_timeout()
            .filter(|t| !t.is_zero())
            .map(|t| Limit {
                timer: t,
                limit: TimeLimit::Attempt,
                reported: t,
            });
        let deadline = self
            .policy
            .deadline()
            .filter(|d| !d.is_zero())
            .map(|deadline| Limit {
                // No clock: the deadline still bounds each attempt.
                timer: self.remaining(started).unwrap_or(deadline),
                limit: TimeLimit::Deadline,
                reported: deadline,
            });
        match (timeout, deadline) {
            (Some(t), Some(d)) => Some(if d.timer <= t.timer { d } else { t }),
            (one, other) => one.or(other),
        }
    }

    /// After a failure on the `attempt`-th attempt: `Some(delay)` to wait and try again,
    /// `None` to hand the caller the error. `cut`: the time limit that cut the attempt;
    /// `started`: the deadline's stopwatch; `seed`: the jitter's, in tests.
    pub(crate) fn decide_after(
        &self,
        failure: &Failure<'_>,
        access: Access,
        attempt: u32,
        cut: Option<TimeLimit>,
        started: Option<Stopwatch>,
        seed: Option<u64>,
    ) -> Option<Duration> {
        let class = failure.class();
        // It may have written: an enclosing `Retry` must not make it again. A method of the
        // user's named like a D1 call may have written in an earlier call of its own, and a
        // write through `first` or `raw` may fail with a row's text, whatever the class of
        // the failure read from it.
        if access.may_write()
            && (class != FailureClass::NotExecuted || access.may_have_written_whatever_the_class())
        {
            scope::record_write();
        }
        let nested = scope::nested();
        if nested {
            scope::leave(class);
        }
        // After the counts above: a call whose policy is invalid makes a single attempt,
        // but what that attempt may have written, and the failure it leaves to an attempt
        // around it, still count, or that attempt would run the write again.
        if let Err(invalid) = self.policy.validate() {
            log::invalid_policy(*self.operation, invalid);
            return None;
        }
        let budget_exhausted = spend_token(self.policy, class, nested);
        let max_attempts = self.policy.max_attempts();
        let event = log::Event {
            operation: *self.operation,
            read_only: access.is_read_only(),
            attempt,
            max_attempts,
            budget_exhausted,
            failure,
        };
        let remaining = self.remaining(started);
        let mut retries_made = self.retries();
        loop {
            let retry = retries_made.saturating_add(1);
            let (min, max) = self.policy.delay_bounds(retry);
            let delay = jitter::draw(seed, retry, min, max);
            let facts = Facts {
                class,
                access,
                nested,
                retries_made,
                max_attempts,
                budget_exhausted,
                deadline_reached: cut == Some(TimeLimit::Deadline)
                    || remaining.is_some_and(|left| delay >= left),
            };
            if let Err(withheld) = decide(facts) {
                log::withheld(&event, withheld);
                return None;
            }
            // Concurrent executions (`join_all`) may race for the last retry: take it
            // only if the count is still the one decided on.
            match self.retries.compare_exchange_weak(
                retries_made,
                retry,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    log::retrying(&event, delay);
                    return Some(delay);
                }
                Err(now) => retries_made = now,
            }
        }
    }

    /// The wait before a retry, on the heap: a future holds the state of every await
    /// point it may reach, so an inline timer (tokio's `Sleep` is 96 bytes) would make
    /// every call's future that much larger although nothing fails. The allocation is paid
    /// only on the retry path, next to a wait of 160 ms or more.
    pub(crate) fn wait(&self, delay: Duration) -> core::pin::Pin<Box<S::Sleep>> {
        Box::pin(self.sleeper.sleep(delay))
    }

    /// Called once an execution of `access` succeeded: gives the retry budget back its
    /// share, and counts a write, which an enclosing `Retry` must not make again.
    #[inline]
    pub(crate) fn completed(&self, access: Access) {
        self.succeeded();
        if access.may_write() {
            scope::record_write();
        }
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

/// A time limit on one attempt.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limit {
    /// How long the attempt may run.
    pub(crate) timer: Duration,
    pub(crate) limit: TimeLimit,
    /// The limit as configured, which the error reports.
    pub(crate) reported: Duration,
}

/// Races `call` against `limit`'s timer; the call's future is dropped if the timer wins
/// (which does not cancel the query in D1).
pub(crate) async fn race<F: Future, S: Sleeper>(
    call: F,
    sleeper: &S,
    limit: Limit,
    operation: OperationName<'_>,
) -> Result<F::Output, TimedOut> {
    let timed_out = || TimedOut::new(limit.limit, limit.reported, operation);
    if limit.timer.is_zero() {
        // The deadline has passed before the attempt: D1 is not called at all.
        return Err(timed_out());
    }
    let mut call = core::pin::pin!(call);
    // Made at the attempt's first pending poll, as every timer of an attempt is: a call
    // ready at once makes none.
    let mut timer = core::pin::pin!(None);
    core::future::poll_fn(|cx| {
        if let Poll::Ready(output) = call.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        if timer.is_none() {
            timer.set(Some(sleeper.sleep(limit.timer)));
        }
        match timer.as_mut().as_pin_mut().map(|timer| timer.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Err(())),
            _ => Poll::Pending,
        }
    })
    .await
    .map_err(|()| timed_out())
}

/// Runs one execution until it succeeds or must not be retried: the first attempt with a
/// clone of `args`, each retry with another clone, so nothing in the user's body runs again.
///
/// The policy's time limits are not applied: see [`execute_timed`]. Kept apart so that a
/// call without limits holds no timer in its future.
pub async fn execute<S, A, F, Fut, T, E, C>(
    call: &Call<'_, S>,
    access: Access,
    args: A,
    attempt: F,
    classify: C,
) -> Result<T, E>
where
    S: Sleeper,
    A: Clone,
    F: MakeAttempt<A, Future = Fut>,
    Fut: Future<Output = Result<T, E>>,
    C: for<'e> FnMut(&'e E) -> Failure<'e>,
{
    let slot = core::pin::pin!(None);
    let mut site = Site {
        args,
        attempt,
        classify,
        slot,
    };
    let mut state = State::new();
    core::future::poll_fn(|cx| {
        let mut out = None;
        let mut attempts = Attempt {
            site: &mut site,
            out: &mut out,
        };
        match drive(call, None, access, &mut state, &mut attempts, cx) {
            // No time limits: nothing is cut.
            Poll::Ready(_) => finished(out),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// [`execute`] within the policy's time limits: each attempt is raced against the attempt
/// timeout or what is left of the deadline, and a cut attempt fails as maybe executed;
/// `timed_out` hands the caller the [`TimedOut`] as the call's error type. Without it (an
/// error type that cannot receive a `TimedOut`) the limits are not applied, by this same
/// function: one instantiation per call site, not one with limits and one without.
pub async fn execute_timed<S, A, F, Fut, T, E, C>(
    timed: &TimedCall<'_, S>,
    access: Access,
    args: A,
    attempt: F,
    classify: C,
    timed_out: Option<fn(TimedOut) -> E>,
) -> Result<T, E>
where
    S: Sleeper,
    A: Clone,
    F: MakeAttempt<A, Future = Fut>,
    Fut: Future<Output = Result<T, E>>,
    C: for<'e> FnMut(&'e E) -> Failure<'e>,
{
    let slot = core::pin::pin!(None);
    let mut timer = core::pin::pin!(None);
    let mut site = Site {
        args,
        attempt,
        classify,
        slot,
    };
    let mut state = State::new();
    core::future::poll_fn(|cx| {
        let mut out = None;
        let mut attempts = Attempt {
            site: &mut site,
            out: &mut out,
        };
        let limits = timed_out.map(|_| Limits {
            started: timed.started,
            timer: timer.as_mut(),
        });
        match drive(&timed.call, limits, access, &mut state, &mut attempts, cx) {
            // Only an execution with limits is cut, and it has `timed_out`.
            Poll::Ready(cut) => match (cut, timed_out) {
                (Some(cut), Some(timed_out)) => Poll::Ready(Err(convert(timed_out, cut))),
                _ => finished(out),
            },
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// `timed_out(cut)`, out of line: compiled once per error type rather than inlined into
/// every call site.
#[inline(never)]
pub(crate) fn convert<E>(timed_out: fn(TimedOut) -> E, cut: TimedOut) -> E {
    timed_out(cut)
}

/// The result [`drive`] left behind when it finished. It always leaves one; were it not to,
/// the execution would wait forever rather than panic (no panic path in every Worker).
fn finished<T, E>(out: Option<Result<T, E>>) -> Poll<Result<T, E>> {
    match out {
        Some(result) => Poll::Ready(result),
        None => Poll::Pending,
    }
}

/// The attempts of one execution, their types erased so that the retry loop ([`drive`]) is
/// compiled once per sleeper instead of once per call site (each instance was a few
/// kilobytes of wasm). The object lives for one poll only, so it never decides whether the
/// caller's future is `Send`.
trait Attempts {
    /// Makes the next attempt's future, dropping the previous one.
    fn start(&mut self);
    /// Polls the attempt: `Ready(true)` when it succeeded, `Ready(false)` when it failed;
    /// either way its result is kept, and its future dropped.
    fn poll_attempt(&mut self, cx: &mut Context<'_>) -> Poll<bool>;
    /// Drops the attempt's future: a time limit cut it.
    fn stop(&mut self);
    /// The failure of the attempt that failed last.
    fn failure(&mut self) -> Failure<'_>;
    /// The access of the statement the attempt just started was made on, if it is another
    /// than the last attempt's (see [`Following`]).
    fn moved(&mut self) -> Option<Access>;
}

/// How a site makes each attempt's future from a clone of its arguments: a closure, or a
/// closure that is also handed the receiver it is made on to follow ([`Following`]).
pub trait MakeAttempt<A> {
    /// The attempt's future.
    type Future;
    /// Makes the next attempt.
    fn make(&mut self, args: A) -> Self::Future;
    /// The access of the statement the attempt just made was made on, if it is another
    /// than the last attempt's: taken once.
    fn moved(&mut self) -> Option<Access>;
}

impl<A, F: FnMut(A) -> Fut, Fut> MakeAttempt<A> for F {
    type Future = Fut;

    #[inline(always)]
    fn make(&mut self, args: A) -> Fut {
        self(args)
    }

    #[inline(always)]
    fn moved(&mut self) -> Option<Access> {
        None
    }
}

impl<A, F: FnMut(A, &mut Follow) -> Fut, Fut> MakeAttempt<A> for Following<F> {
    type Future = Fut;

    #[inline(always)]
    fn make(&mut self, args: A) -> Fut {
        (self.attempt)(args, &mut self.follow)
    }

    #[inline(always)]
    fn moved(&mut self) -> Option<Access> {
        self.follow.take_moved()
    }
}

/// What carries over between polls of one execution: how to make its attempts.
struct Site<'s, A, F, Fut, C> {
    args: A,
    attempt: F,
    classify: C,
    /// The attempt's future, pinned in the caller's frame.
    slot: Pin<&'s mut Option<Fut>>,
}

/// A [`Site`] and the result of the current poll: the result never outlives the poll, so an
/// error that is not `Send` never lives across a wait.
struct Attempt<'a, 's, A, F, Fut, C, T, E> {
    site: &'a mut Site<'s, A, F, Fut, C>,
    out: &'a mut Option<Result<T, E>>,
}

impl<A, F, Fut, C, T, E> Attempts for Attempt<'_, '_, A, F, Fut, C, T, E>
where
    A: Clone,
    F: MakeAttempt<A, Future = Fut>,
    Fut: Future<Output = Result<T, E>>,
    C: for<'e> FnMut(&'e E) -> Failure<'e>,
{
    fn start(&mut self) {
        // Each attempt gets its own clone of the arguments.
        let attempt = self.site.attempt.make(self.site.args.clone());
        self.site.slot.set(Some(attempt));
    }

    fn moved(&mut self) -> Option<Access> {
        self.site.attempt.moved()
    }

    fn poll_attempt(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        let Some(attempt) = self.site.slot.as_mut().as_pin_mut() else {
            // `drive` starts an attempt before polling it: unreachable, and waits forever
            // rather than panics.
            return Poll::Pending;
        };
        let Poll::Ready(result) = attempt.poll(cx) else {
            return Poll::Pending;
        };
        self.site.slot.set(None);
        let succeeded = result.is_ok();
        *self.out = Some(result);
        Poll::Ready(succeeded)
    }

    fn stop(&mut self) {
        self.site.slot.set(None);
    }

    fn failure(&mut self) -> Failure<'_> {
        match &*self.out {
            Some(Err(error)) => (self.site.classify)(error),
            // `drive` asks only after a failure.
            _ => Failure::with_class(FailureClass::Permanent, &""),
        }
    }
}

/// The time limits of an execution: the deadline's stopwatch and the attempt's timer,
/// pinned in the caller's frame.
struct Limits<'t, T> {
    started: Option<Stopwatch>,
    timer: Pin<&'t mut Option<T>>,
}

/// The retry loop's state between polls.
struct State<S: Sleeper> {
    /// Attempts started so far.
    attempts: u32,
    /// The current attempt's time limit, if it has one.
    limit: Option<Limit>,
    /// An attempt is in flight.
    running: bool,
    /// The wait before the next attempt (on the heap: see [`Call::wait`]).
    waiting: Wait<S>,
    /// The access of the statement the attempts are made on now, when it is another than
    /// the one the execution began on ([`Attempts::moved`]).
    moved: Option<Access>,
}

impl<S: Sleeper> State<S> {
    fn new() -> Self {
        State {
            attempts: 0,
            limit: None,
            running: false,
            waiting: Held::none(),
            moved: None,
        }
    }
}

/// The retry loop of one execution, compiled once per sleeper: start an attempt (raced
/// against its time limit when `limits` is given), poll it, and after a failure ask the
/// call whether to wait and start another. `Ready` once the attempts' result is final:
/// `Some` when a time limit cut the last attempt (converted by the caller, so that the
/// conversion is not compiled into every attempt type), `None` when the site holds it.
#[inline(never)]
fn drive<S: Sleeper>(
    call: &Call<'_, S>,
    mut limits: Option<Limits<'_, S::Sleep>>,
    begun: Access,
    state: &mut State<S>,
    site: &mut dyn Attempts,
    cx: &mut Context<'_>,
) -> Poll<Option<TimedOut>> {
    let started = limits.as_ref().and_then(|limits| limits.started);
    loop {
        if state.waiting.is_some() && state.waiting.is_pending(cx) {
            return Poll::Pending;
        }
        let mut access = state.moved.unwrap_or(begun);
        if !state.running {
            state.running = true;
            state.attempts += 1;
            // In flight from its first attempt until it ends, as an execution the expansion
            // loops over is (`Retrying::begin`): an attempt that encloses it and is cut
            // meanwhile must not run it again.
            if state.attempts == 1 {
                scope::begin_write(access);
            }
            state.limit = match &limits {
                Some(limits) => call.attempt_limit(limits.started),
                None => None,
            };
            site.start();
            if let Some(moved) = site.moved() {
                scope::switch_write(access, moved);
                state.moved = Some(moved);
                access = moved;
            }
            // The last attempt's timer, if it failed before its timer fired.
            if let Some(limits) = &mut limits {
                limits.timer.set(None);
            }
        }
        let expired = match (&limits, state.limit) {
            (Some(_), Some(limit)) if limit.timer.is_zero() => Some(limit),
            _ => None,
        };
        let cut = match expired.map_or_else(|| site.poll_attempt(cx), |_| Poll::Pending) {
            Poll::Ready(true) => {
                call.completed(access);
                scope::settle_write(access);
                return Poll::Ready(None);
            }
            Poll::Ready(false) => None,
            Poll::Pending => match (&mut limits, state.limit) {
                (Some(limits), Some(limit)) => {
                    // A limit already reached (the deadline passed before the attempt) cuts
                    // the attempt before it is polled, so D1 is not called at all. Otherwise
                    // the timer is made at the attempt's first pending poll: an attempt
                    // ready at once makes none.
                    let fired = limit.timer.is_zero() || {
                        if limits.timer.is_none() {
                            limits.timer.set(Some(call.sleeper.sleep(limit.timer)));
                        }
                        match limits.timer.as_mut().as_pin_mut() {
                            Some(timer) => timer.poll(cx).is_ready(),
                            None => false,
                        }
                    };
                    if !fired {
                        return Poll::Pending;
                    }
                    limits.timer.set(None);
                    site.stop();
                    Some(limit)
                }
                _ => return Poll::Pending,
            },
        };
        state.running = false;
        let (delay, cut) = match cut {
            None => {
                let failure = site.failure();
                // The failed attempt's error needs no dropping before the wait: it lives in
                // the result of this one poll, which the next attempt's result replaces and
                // which ends when the wait is pending.
                let delay =
                    call.decide_after(&failure, access, state.attempts, None, started, None);
                (delay, None)
            }
            Some(limit) => {
                let cut = TimedOut::new(limit.limit, limit.reported, *call.operation);
                let failure = Failure::with_class(FailureClass::MaybeExecuted, &cut);
                let limit = Some(limit.limit);
                let delay =
                    call.decide_after(&failure, access, state.attempts, limit, started, None);
                (delay, Some(cut))
            }
        };
        match delay {
            Some(delay) => *state.waiting = Some(call.wait(delay)),
            None => {
                scope::settle_write(access);
                return Poll::Ready(cut);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{DbError, LOST, Waits};
    use core::cell::Cell;

    const NOT_REACHED: &str =
        "D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node.";

    fn call(waits: &Waits) -> Call<'static, &Waits> {
        Call::with_sleeper(
            &const { RetryPolicy::DEFAULT.without_budget() },
            &OperationName::Named("test"),
            waits,
        )
    }

    /// Runs an execution that fails with `failures` in turn, then succeeds.
    async fn execution(
        call: &Call<'_, &Waits>,
        access: Access,
        failures: &[&'static str],
        made: &Cell<u32>,
    ) -> Result<u32, DbError> {
        execute(
            call,
            access,
            (),
            |()| {
                let n = made.get();
                made.set(n + 1);
                let result = match failures.get(n as usize) {
                    Some(message) => Err(DbError(message)),
                    None => Ok(n),
                };
                core::future::ready(result)
            },
            |error: &DbError| Failure::from_error(error),
        )
        .await
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        let mut future = core::pin::pin!(future);
        let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
        loop {
            if let core::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
        }
    }

    #[test]
    fn executions_share_the_calls_retries_and_its_schedule() {
        let waits = Waits::default();
        let call = call(&waits);
        let (first, second, third) = (Cell::new(0), Cell::new(0), Cell::new(0));
        // Two retries for the first execution, two for the second: the call's four.
        assert!(block_on(execution(&call, Access::ReadOnly, &[LOST, LOST], &first)).is_ok());
        assert!(
            block_on(execution(
                &call,
                Access::Write,
                &[NOT_REACHED, NOT_REACHED],
                &second
            ))
            .is_ok()
        );
        assert_eq!((first.get(), second.get()), (3, 3));
        assert_eq!(call.retries(), 4);
        // The n-th retry of the call waits the n-th delay, whichever execution makes it.
        let policy = RetryPolicy::DEFAULT;
        for (n, wait) in (1..).zip(waits.0.borrow().iter()) {
            let (min, max) = policy.delay_bounds(n);
            assert!((min..=max).contains(wait), "retry {n}: {wait:?}");
        }
        // None left: the third execution's failure goes back to the caller.
        let error = block_on(execution(&call, Access::ReadOnly, &[LOST], &third)).unwrap_err();
        assert_eq!(error.0, LOST);
        assert_eq!(third.get(), 1);
        assert_eq!(waits.0.borrow().len(), 4);
    }

    #[test]
    fn a_write_that_may_have_run_is_handed_back_at_once() {
        let waits = Waits::default();
        let call = call(&waits);
        let made = Cell::new(0);
        assert!(block_on(execution(&call, Access::Write, &[LOST], &made)).is_err());
        assert!(block_on(execution(&call, Access::Unseen, &[LOST], &Cell::new(0))).is_err());
        assert_eq!(made.get(), 1);
        assert_eq!(call.retries(), 0);
        assert!(waits.0.borrow().is_empty());
    }

    #[test]
    fn inside_a_whole_body_attempt_an_execution_does_not_retry() {
        let waits = Waits::default();
        let call = call(&waits);
        let made = Cell::new(0);
        let result = block_on(crate::retry::scope::scoped(execution(
            &call,
            Access::ReadOnly,
            &[LOST],
            &made,
        )));
        assert!(result.is_err());
        assert_eq!(made.get(), 1);
    }

    #[test]
    fn every_transient_failure_spends_a_token_unless_nested() {
        static TOKENS: crate::RetryTokens = crate::RetryTokens::new();
        let budget = crate::RetryBudget::new(&TOKENS).with_max_tokens(10);
        let policy = RetryPolicy::DEFAULT.with_budget(budget);
        let before = budget.tokens();
        assert!(!spend_token(&policy, FailureClass::MaybeExecuted, false));
        assert!(budget.tokens() < before);
        let after = budget.tokens();
        assert!(!spend_token(&policy, FailureClass::MaybeExecuted, true));
        assert!(!spend_token(&policy, FailureClass::Permanent, false));
        assert_eq!(budget.tokens(), after);
    }

    #[cfg(feature = "tokio")]
    #[tokio::test(start_paused = true)]
    async fn the_deadline_bounds_each_attempt_and_each_wait() {
        let policy = RetryPolicy::DEFAULT
            .without_budget()
            .with_attempt_timeout(Duration::from_millis(2000))
            .with_deadline(Duration::from_millis(300));
        let timed = TimedCall::new(&policy, &OperationName::Named("test"));
        let call = timed.call();
        assert!(timed.started.is_some(), "a deadline starts the stopwatch");
        // The deadline (300 ms) is sooner than the attempt timeout (2 s): it is the timer.
        let limit = call.attempt_limit(timed.started).unwrap();
        assert_eq!(limit.limit, TimeLimit::Deadline);
        assert_eq!(limit.timer, Duration::from_millis(300));
        assert_eq!(limit.reported, Duration::from_millis(300));
        tokio::time::advance(Duration::from_millis(100)).await;
        assert_eq!(
            call.remaining(timed.started),
            Some(Duration::from_millis(200))
        );
        assert_eq!(
            call.attempt_limit(timed.started).unwrap().timer,
            Duration::from_millis(200)
        );
        // A first retry waits 160-240 ms: it fits in the 200 ms left only sometimes, so
        // with 50 ms left it never does.
        tokio::time::advance(Duration::from_millis(150)).await;
        let error = DbError(LOST);
        let failure = Failure::from_error(&error);
        let read = Access::ReadOnly;
        assert_eq!(
            call.decide_after(&failure, read, 1, None, timed.started, None),
            None
        );
        // Without the stopwatch the same failure is retried: only the clock refused it.
        assert!(
            call.decide_after(&failure, read, 1, None, None, None)
                .is_some()
        );
        // An attempt cut by the deadline is never retried.
        let fresh = TimedCall::new(&policy, &OperationName::Named("test"));
        let cut = fresh.call().decide_after(
            &failure,
            read,
            1,
            Some(TimeLimit::Deadline),
            fresh.started,
            None,
        );
        assert_eq!(cut, None);

        // The attempt timeout is the timer when it is the sooner one; no deadline, no clock.
        let short = RetryPolicy::DEFAULT.with_attempt_timeout(Duration::from_millis(50));
        let untimed_clock = TimedCall::new(&short, &OperationName::Named("test"));
        assert!(untimed_clock.started.is_none());
        let limit = untimed_clock.call().attempt_limit(None).unwrap();
        assert_eq!(
            (limit.limit, limit.timer),
            (TimeLimit::Attempt, Duration::from_millis(50))
        );
        let none = TimedCall::new(&RetryPolicy::DEFAULT, &OperationName::Named("test"));
        assert!(none.call().attempt_limit(None).is_none());
    }

    #[test]
    fn a_success_gives_the_budget_back_its_share() {
        static TOKENS: crate::RetryTokens = crate::RetryTokens::new();
        let budget = crate::RetryBudget::new(&TOKENS).with_max_tokens(10);
        let waits = Waits::default();
        let policy = RetryPolicy::DEFAULT.with_budget(budget);
        let call = Call::with_sleeper(&policy, &OperationName::Named("test"), &waits);
        assert!(budget.record_failure());
        let spent = budget.tokens();
        call.succeeded();
        assert!(budget.tokens() > spent);
    }

    #[test]
    fn the_timer_is_made_at_the_attempts_first_pending_poll_only() {
        let waits = Waits::default();
        let policy = crate::fake::TIMEOUT_100_MS;
        let timed = TimedCall::with_sleeper(&policy, &OperationName::Named("test"), &waits);
        crate::fake::timer_only_when_pending(&waits, |pending_first| {
            crate::fake::poll_to_end(execute_timed(
                &timed,
                Access::ReadOnly,
                (),
                |()| crate::fake::succeeding(3, pending_first),
                |error: &DbError| Failure::from_error(error),
                Some(|_cut| DbError("timed out")),
            ))
            .ok()
        });
    }

    #[cfg(feature = "tokio")]
    #[tokio::test(start_paused = true)]
    async fn an_attempt_cut_by_its_timeout_is_dropped_at_once_not_after_the_wait() {
        let policy = const {
            RetryPolicy::DEFAULT
                .without_budget()
                .with_attempt_timeout(Duration::from_millis(100))
        };
        let timed = TimedCall::new(&policy, &OperationName::Named("test"));
        let (made, dropped) = (Cell::new(0_u32), Cell::new(0_u32));
        let mut make = crate::fake::hanging_first(&made, &dropped);
        let execution = execute_timed(
            &timed,
            Access::ReadOnly,
            (),
            |()| make(),
            |error: &DbError| Failure::from_error(error),
            Some(|_cut| DbError("timed out")),
        );
        let timeout = Duration::from_millis(100);
        crate::fake::retried_after_its_cut(execution, timeout, &made, &dropped).await;
    }

    #[cfg(feature = "tokio")]
    #[tokio::test(start_paused = true)]
    async fn after_the_deadline_an_attempt_is_made_but_never_polled() {
        // A second execution of a call whose deadline has passed (the first one used it
        // up): its statement is prepared, but D1 must not be called, not even once.
        let policy = const {
            RetryPolicy::DEFAULT
                .without_budget()
                .with_deadline(Duration::from_millis(300))
        };
        let timed = TimedCall::new(&policy, &OperationName::Named("test"));
        tokio::time::advance(Duration::from_millis(400)).await;
        let (made, polled) = (Cell::new(0), Cell::new(0));
        let result = execute_timed(
            &timed,
            Access::ReadOnly,
            (),
            |()| {
                made.set(made.get() + 1);
                core::future::poll_fn(|_| {
                    polled.set(polled.get() + 1);
                    Poll::Ready(Ok::<u32, DbError>(1))
                })
            },
            |error: &DbError| Failure::from_error(error),
            Some(|_cut| DbError("timed out")),
        )
        .await;
        assert_eq!(result.unwrap_err().0, "timed out");
        assert_eq!((made.get(), polled.get()), (1, 0));
    }
}
