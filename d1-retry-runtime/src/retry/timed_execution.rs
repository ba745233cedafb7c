//! An execution awaited where it is made, in a function whose policy has time limits
//! (time-limit options, a `policy = PATH` whose constant has some, or `Self::POLICY`, whose
//! value the compiler cannot choose by: see [`limits`](crate::retry::limits)): the loop of
//! [`execution`](crate::retry::execution), each attempt raced against the attempt timeout or what
//! is left of the deadline.
//!
//! `#[d1_retry]` writes the same loop as for an untimed call, with `begin_timed` and
//! `attempt_timed`:
//!
//! ```text
//! match <site>.begin_timed(&call, access) {
//!     mut execution => loop {
//!         match execution.attempt_timed(stmt.first(), |e| <E: From<TimedOut>?>).await {
//!             ControlFlow::Break(result) => break result,
//!             ControlFlow::Continue(again) => execution.again(again),
//!         }
//!     }
//! }
//! ```
//!
//! Before, such a call went through the closure-based `execute_timed` (and `execute` as
//! well, for an error type that cannot receive a `TimedOut`), which instantiated a future,
//! a closure and a trait object's five methods per call site. The loop instantiates one
//! small future per site ([`TimedAttempting`]); its clock and the decisions are compiled
//! once per sleeper. In the example Worker's release wasm an annotated method now adds
//! 238 bytes, where it added 1,617 (`scripts/bench-wasm-size.sh`, BENCHMARKS.md).
//!
//! A cut attempt is dropped where it lies and fails as maybe executed, as in `execute_timed`:
//! only a read is made again. An error type that cannot receive a [`TimedOut`] (the second
//! argument of `attempt_timed` finds no `From<TimedOut>`) has no limits applied, since the
//! caller could not be told why its call was cut.
//!
//! The attempt's timer is made at the attempt's first pending poll, not before it: the
//! timeout runs from when the request has been handed to the runtime (microseconds after
//! the attempt starts), and an attempt that is ready at once makes no timer at all.

use core::future::{Future, IntoFuture};
use core::marker::PhantomData;
use core::ops::ControlFlow;
use core::pin::Pin;
use core::task::{Context, Poll};

use crate::classify::failure::Failure;
use crate::dispatch::receiver::{D1Call, D1Receiver, ExecutionError, Never, Plain, Retrying};
use crate::retry::call::{Limit, TimedCall, convert};
use crate::retry::decide::Access;
use crate::retry::execution::{Execution, Once, PlainExecution};
use crate::retry::limits::Begin;
use crate::schedule::timeout::TimedOut;
use crate::schedule::wait::{Held, Timer, Wait};
use crate::{FailureClass, Sleeper, Stopwatch};

/// What carries over between the attempts of one retried execution under time limits: the
/// untimed [`Execution`] and the call's deadline stopwatch.
pub struct TimedExecution<'c, S: Sleeper> {
    execution: Execution<'c, S>,
    started: Option<Stopwatch>,
}

impl<'c, S: Sleeper> TimedExecution<'c, S> {
    /// One attempt, raced against the limits when `timeouts` finds how to hand a
    /// [`TimedOut`] to the caller as `E`. Resolves as [`Execution::attempt`] does.
    #[inline(always)]
    pub fn attempt_timed<Fut, T, E>(
        &mut self,
        attempt: Fut,
        timeouts: impl FnOnce(PhantomData<E>) -> Option<fn(TimedOut) -> E>,
    ) -> TimedAttempting<'_, 'c, S, Fut, E>
    where
        Fut: Future<Output = Result<T, E>>,
        E: ExecutionError,
    {
        TimedAttempting {
            timed_out: timeouts(PhantomData),
            classify: E::d1_failure,
            clock: Clock {
                execution: self,
                waiting: Held::none(),
                started: false,
                limit: None,
                timer: Held::none(),
            },
            attempt: Some(attempt),
        }
    }

    // The loop's other steps, the untimed execution's. Methods of this type rather than
    // reached through a `Deref`: the expansion calls them on `&mut` or `&` of this type,
    // and a method found only after a deref loses to a method of the same name of any trait
    // the user has in scope for every type (`extension_traits.rs`).

    /// [`Execution::again`].
    #[inline(always)]
    pub fn again(&mut self, (): ()) {
        self.execution.again(());
    }

    /// [`Execution::again_at`].
    #[inline(always)]
    pub fn again_at<R: D1Receiver + ?Sized, C: D1Call>(
        &mut self,
        (): (),
        at: &mut usize,
        receiver: &R,
        own: C,
    ) {
        self.execution.again_at((), at, receiver, own);
    }

    /// [`Execution::keep`].
    #[inline(always)]
    pub fn keep<A: Clone>(&self, args: A) -> A {
        self.execution.keep(args)
    }

    /// [`Execution::take`].
    #[inline(always)]
    pub fn take<A: Clone>(&self, kept: &mut A) -> A {
        self.execution.take(kept)
    }
}

/// One attempt of a [`TimedExecution`], and the wait after it when it failed and is
/// retried. Only the attempt's own future and error are generic here: the clock, the
/// limits and the decisions are `Clock`'s, compiled once per sleeper rather than copied
/// into every call site's future.
#[must_use = "futures do nothing unless polled"]
pub struct TimedAttempting<'e, 'c, S: Sleeper, Fut, E> {
    /// How a [`TimedOut`] becomes the caller's error; `None`: no limits apply.
    timed_out: Option<fn(TimedOut) -> E>,
    classify: for<'x> fn(&'x E) -> Failure<'x>,
    clock: Clock<'e, 'c, S>,
    /// `None` once cut: dropped where it lies.
    attempt: Option<Fut>,
}

impl<S, Fut, T, E> Future for TimedAttempting<'_, '_, S, Fut, E>
where
    S: Sleeper,
    Fut: Future<Output = Result<T, E>>,
{
    type Output = ControlFlow<Result<T, E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `clock` and `attempt` are only ever polled, set or dropped in place,
        // through the pins made here; nothing is moved out of `self`.
        let this = unsafe { self.get_unchecked_mut() };
        let mut clock = unsafe { Pin::new_unchecked(&mut this.clock) };
        let limited = this.timed_out.is_some();
        loop {
            match clock.as_mut().before(limited, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Before::Again) => return Poll::Ready(ControlFlow::Continue(())),
                Poll::Ready(Before::Cut) => {}
                Poll::Ready(Before::Attempt) => {
                    // SAFETY: see above.
                    let attempt = unsafe { Pin::new_unchecked(&mut this.attempt) };
                    match attempt.as_pin_mut().map(|attempt| attempt.poll(cx)) {
                        Some(Poll::Ready(Ok(value))) => {
                            clock.succeeded();
                            return Poll::Ready(ControlFlow::Break(Ok(value)));
                        }
                        Some(Poll::Ready(Err(error))) => {
                            if clock.as_mut().failed(&(this.classify)(&error), limited) {
                                continue;
                            }
                            return Poll::Ready(ControlFlow::Break(Err(error)));
                        }
                        _ => {
                            if !clock.as_mut().fired(cx) {
                                return Poll::Pending;
                            }
                        }
                    }
                }
            }
            // Cut: the attempt is dropped where it lies.
            // SAFETY: see above.
            unsafe { Pin::new_unchecked(&mut this.attempt) }.set(None);
            if let Err(cut) = clock.as_mut().cut() {
                return match this.timed_out {
                    Some(timed_out) => {
                        Poll::Ready(ControlFlow::Break(Err(convert(timed_out, cut))))
                    }
                    // Not reached: a limit is only set when `limited`, that is with
                    // `timed_out`.
                    None => Poll::Pending,
                };
            }
        }
    }
}

/// What [`Clock::before`] lets the attempt do.
enum Before {
    /// The wait after a failure is over: the loop makes the call again.
    Again,
    /// Poll the attempt.
    Attempt,
    /// The limit was reached before the attempt started: it is not made.
    Cut,
}

/// The time of one attempt: its limit and timer, and the wait after it.
struct Clock<'e, 'c, S: Sleeper> {
    execution: &'e mut TimedExecution<'c, S>,
    waiting: Wait<S>,
    /// The limit is set at the first poll, when the attempt starts, not when it is made.
    started: bool,
    limit: Option<Limit>,
    /// Made at the attempt's first pending poll ([`fired`](Self::fired)); pinned in place.
    timer: Timer<S>,
}

impl<S: Sleeper> Clock<'_, '_, S> {
    /// Before the attempt is polled: the wait, if there is one; else, at the first poll,
    /// the attempt's limit when `limited`.
    fn before(self: Pin<&mut Self>, limited: bool, cx: &mut Context<'_>) -> Poll<Before> {
        // SAFETY: `timer` is only polled, set or dropped in place, through this pin.
        let this = unsafe { self.get_unchecked_mut() };
        if this.waiting.is_some() {
            return this
                .execution
                .execution
                .poll_waiting(&mut this.waiting, cx)
                .map(|()| Before::Again);
        }
        if !this.started {
            this.started = true;
            if limited {
                let call = this.execution.execution.call();
                this.limit = call.attempt_limit(this.execution.started);
            }
        }
        Poll::Ready(match this.limit {
            Some(limit) if limit.timer.is_zero() => Before::Cut,
            _ => Before::Attempt,
        })
    }

    /// The attempt is pending: `true` when its limit's timer has fired. The timer is made
    /// here, at the attempt's first pending poll, not before it: an attempt ready at once
    /// (a D1 call never is; a cached or failed one may be) costs no timer, and the first
    /// poll only hands the request to the runtime, in microseconds.
    ///
    /// The limit stays in the clock for [`cut`](Self::cut), rather than being handed to the
    /// caller and back: the caller is compiled once per call's future, and each 40-byte
    /// copy of a `Limit` there was code in every one of them.
    fn fired(self: Pin<&mut Self>, cx: &mut Context<'_>) -> bool {
        // SAFETY: as in `before`.
        let this = unsafe { self.get_unchecked_mut() };
        let Some(limit) = this.limit else {
            return false;
        };
        let mut timer = unsafe { Pin::new_unchecked(&mut *this.timer) };
        if timer.is_none() {
            let call = this.execution.execution.call();
            timer.set(Some(call.sleeper().sleep(limit.timer)));
        }
        timer
            .as_pin_mut()
            .is_some_and(|timer| timer.poll(cx).is_ready())
    }

    fn succeeded(&self) {
        self.execution.execution.succeeded();
    }

    /// After a failed attempt: `true` when it is retried, after the wait now set.
    /// `limited`: the limits apply, so the deadline bounds the wait.
    fn failed(self: Pin<&mut Self>, failure: &Failure<'_>, limited: bool) -> bool {
        // SAFETY: as in `before`.
        let this = unsafe { self.get_unchecked_mut() };
        unsafe { Pin::new_unchecked(&mut *this.timer) }.set(None);
        let started = if limited {
            this.execution.started
        } else {
            None
        };
        *this.waiting = this.execution.execution.decide(failure, None, started);
        this.waiting.is_some()
    }

    /// After an attempt cut at its limit ([`Before::Cut`], or [`fired`](Self::fired)):
    /// `Ok` when it is retried, after the wait now set; else the [`TimedOut`] to hand the
    /// caller. The cut attempt may have run, so only a read is made again.
    fn cut(self: Pin<&mut Self>) -> Result<(), TimedOut> {
        // SAFETY: as in `before`.
        let this = unsafe { self.get_unchecked_mut() };
        unsafe { Pin::new_unchecked(&mut *this.timer) }.set(None);
        let Some(limit) = this.limit else {
            // Not reached: only a limit cuts. Without one, no wait is set, and the attempt,
            // already dropped, is pending for good rather than made again or a panic.
            return Ok(());
        };
        let call = this.execution.execution.call();
        let cut = TimedOut::new(limit.limit, limit.reported, call.operation());
        let failure = Failure::with_class(FailureClass::MaybeExecuted, &cut);
        let started = this.execution.started;
        *this.waiting = this
            .execution
            .execution
            .decide(&failure, Some(limit.limit), started);
        match *this.waiting {
            Some(_) => Ok(()),
            None => Err(cut),
        }
    }
}

impl Retrying {
    /// The execution of one awaited call site under the policy's time limits.
    #[inline(always)]
    pub fn begin_timed<'c, S: Sleeper>(
        self,
        timed: &'c TimedCall<'c, S>,
        access: Access,
    ) -> TimedExecution<'c, S> {
        TimedExecution {
            execution: self.begin(timed.call(), access),
            started: timed.started(),
        }
    }

    /// [`begin_timed`](Self::begin_timed), for `own` on `receiver` ([`Retrying::access`]):
    /// what the expansion calls, one call per site. Also on a call without limits, for a
    /// function whose `policy = PATH` has none (see [`Limits`](crate::retry::limits)).
    #[inline(always)]
    pub fn begin_timed_on<'c, K, R, C>(
        self,
        call: &'c K,
        access: Access,
        receiver: &R,
        own: C,
    ) -> K::Execution
    where
        K: Begin<'c>,
        R: D1Receiver + ?Sized,
        C: D1Call,
    {
        call.begin(self, self.access(access, receiver, own))
    }
}

impl Plain {
    /// A plain call: made once, as written, without time limits.
    #[inline(always)]
    pub fn begin_timed<S>(self, _timed: &TimedCall<'_, S>, _access: Access) -> PlainExecution {
        PlainExecution
    }

    /// [`begin_timed`](Self::begin_timed), whatever the call, with time limits or without.
    #[inline(always)]
    pub fn begin_timed_on<K: ?Sized, R: ?Sized, C>(
        self,
        _call: &K,
        _access: Access,
        _receiver: &R,
        _own: C,
    ) -> PlainExecution {
        PlainExecution
    }
}

impl PlainExecution {
    /// The call's own future, as [`attempt`](Self::attempt): a plain call has no limits.
    #[inline(always)]
    pub fn attempt_timed<R: IntoFuture>(
        &mut self,
        value: R,
        _timeouts: impl FnOnce(PhantomData<Never>) -> Option<fn(TimedOut) -> Never>,
    ) -> Once<R::IntoFuture> {
        self.attempt(value)
    }
}

#[cfg(all(test, feature = "tokio"))]
mod tests {
    use super::*;
    use crate::RetryPolicy;
    use crate::fake::{DbError, LOST, hanging_first, retried_after_its_cut};
    use crate::retry::operation::OperationName;
    use core::cell::Cell;
    use core::time::Duration;
    use tokio::time::Instant;

    const fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The loop `#[d1_retry]` writes for an awaited call under time limits.
    async fn looped<Fut>(
        timed: &TimedCall<'_>,
        access: Access,
        timed_out: Option<fn(TimedOut) -> DbError>,
        mut make: impl FnMut() -> Fut,
    ) -> Result<u32, DbError>
    where
        Fut: Future<Output = Result<u32, DbError>>,
    {
        let mut execution = Retrying.begin_timed(timed, access);
        let looped = async {
            loop {
                match execution.attempt_timed(make(), |_| timed_out).await {
                    ControlFlow::Break(result) => break result,
                    ControlFlow::Continue(again) => execution.again(again),
                }
            }
        };
        // An execution that would never finish fails the test, an hour later on the
        // paused clock, rather than hanging it.
        let hour = Duration::from_secs(3600);
        tokio::time::timeout(hour, looped)
            .await
            .expect("the execution never finished")
    }

    fn timed_out(_: TimedOut) -> DbError {
        DbError("timed out")
    }

    /// One call of `looped` under `policy`, whose attempt `n` (from 0) stalls for
    /// `stalls[n]` (forever past the end) and then succeeds with `n`: its result, how long
    /// it took, and how many attempts were made.
    async fn stalled(
        policy: &RetryPolicy,
        access: Access,
        timed_out: Option<fn(TimedOut) -> DbError>,
        stalls: &[Option<Duration>],
    ) -> (Result<u32, DbError>, Duration, u32) {
        let timed = TimedCall::new(policy, &OperationName::Named("test"));
        let made = Cell::new(0);
        let start = Instant::now();
        let result = looped(&timed, access, timed_out, || {
            let n = made.get();
            assert!(n < 10, "more attempts than any policy allows");
            made.set(n + 1);
            let stall = stalls.get(n as usize).copied().flatten();
            async move {
                match stall {
                    Some(time) => tokio::time::sleep(time).await,
                    None => core::future::pending().await,
                }
                Ok(n)
            }
        })
        .await;
        (result, start.elapsed(), made.get())
    }

    #[tokio::test(start_paused = true)]
    async fn a_cut_read_is_dropped_at_once_and_made_again_after_its_wait() {
        let policy = const {
            RetryPolicy::DEFAULT
                .without_budget()
                .with_attempt_timeout(ms(100))
        };
        let timed = TimedCall::new(&policy, &OperationName::Named("test"));
        let (made, dropped) = (Cell::new(0_u32), Cell::new(0_u32));
        let make = hanging_first(&made, &dropped);
        let execution = looped(&timed, Access::ReadOnly, Some(timed_out), make);
        retried_after_its_cut(execution, ms(100), &made, &dropped).await;
        assert_eq!(timed.call().retries(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_that_borrows_from_itself_is_polled_where_it_lies() {
        // Under Miri, this is the check of the pins: the attempt holds a reference into
        // its own state across the await, and the timer races it.
        let policy = const {
            RetryPolicy::DEFAULT
                .without_budget()
                .with_attempt_timeout(ms(100))
        };
        let timed = TimedCall::new(&policy, &OperationName::Named("test"));
        let made = Cell::new(0_u32);
        let result = looped(&timed, Access::ReadOnly, Some(timed_out), || {
            let n = made.get();
            assert!(n < 10, "more attempts than any policy allows");
            made.set(n + 1);
            async move {
                let local = [n; 4];
                let borrowed = &local;
                tokio::time::sleep(ms(if n == 0 { 500 } else { 10 })).await;
                Ok(borrowed[3] + 1)
            }
        })
        .await;
        assert_eq!(result.unwrap(), 2, "the second attempt's own value");
        assert_eq!(made.get(), 2, "the first, cut at 100 ms, and the second");
    }

    #[tokio::test(start_paused = true)]
    async fn a_cut_write_hands_the_caller_the_timeout_and_is_made_once() {
        let policy = const {
            RetryPolicy::DEFAULT
                .without_budget()
                .with_attempt_timeout(ms(100))
        };
        let (result, took, made) = stalled(&policy, Access::Write, Some(timed_out), &[]).await;
        assert_eq!(result.unwrap_err().0, "timed out");
        assert_eq!(took, ms(100), "cut at the timeout, not waited out");
        assert_eq!(made, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_last_attempt_is_cut_by_what_is_left_of_the_deadline() {
        let policy = const {
            RetryPolicy::DEFAULT
                .without_budget()
                .with_attempt_timeout(ms(2000))
                .with_deadline(ms(5000))
        };
        let (result, took, made) = stalled(&policy, Access::ReadOnly, Some(timed_out), &[]).await;
        assert_eq!(result.unwrap_err().0, "timed out");
        assert_eq!(took, ms(5000), "the caller has its error at the deadline");
        assert_eq!(made, 3, "two cut by the timeout, the third by the deadline");
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_timeout_conversion_a_stall_is_waited_out() {
        let policy = const {
            RetryPolicy::DEFAULT
                .without_budget()
                .with_attempt_timeout(ms(100))
        };
        let (result, took, made) = stalled(&policy, Access::Write, None, &[Some(ms(1000))]).await;
        assert_eq!(result.unwrap(), 0);
        assert_eq!(took, ms(1000));
        assert_eq!(made, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn after_the_deadline_an_attempt_is_made_but_never_polled() {
        let policy = const { RetryPolicy::DEFAULT.without_budget().with_deadline(ms(300)) };
        let timed = TimedCall::new(&policy, &OperationName::Named("test"));
        tokio::time::advance(ms(400)).await;
        let (made, polled) = (Cell::new(0), Cell::new(0));
        let result = looped(&timed, Access::ReadOnly, Some(timed_out), || {
            made.set(made.get() + 1);
            core::future::poll_fn(|_| {
                polled.set(polled.get() + 1);
                Poll::Ready(Ok::<u32, DbError>(1))
            })
        })
        .await;
        assert_eq!(result.unwrap_err().0, "timed out");
        assert_eq!((made.get(), polled.get()), (1, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn no_retry_waits_past_the_deadline_unless_the_limits_do_not_apply() {
        let policy = const { RetryPolicy::DEFAULT.without_budget().with_deadline(ms(300)) };
        let failing = |made: &Cell<u32>| {
            let n = made.get();
            assert!(n < 10, "more attempts than any policy allows");
            made.set(n + 1);
            core::future::ready(if n < 2 { Err(DbError(LOST)) } else { Ok(n) })
        };
        // The first wait (160-240 ms) fits in 300 ms, the second (320-480 ms) cannot.
        let timed = TimedCall::new(&policy, &OperationName::Named("test"));
        let made = Cell::new(0);
        let result = looped(&timed, Access::ReadOnly, Some(timed_out), || failing(&made)).await;
        assert_eq!(result.unwrap_err().0, LOST);
        assert_eq!(made.get(), 2);
        // An error type that cannot receive a `TimedOut` has no limits: no deadline either.
        let timed = TimedCall::new(&policy, &OperationName::Named("test"));
        let made = Cell::new(0);
        let result = looped(&timed, Access::ReadOnly, None, || failing(&made)).await;
        assert_eq!(result.unwrap(), 2);
        assert_eq!(made.get(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_success_gives_the_budget_a_share_back() {
        static TOKENS: crate::RetryTokens = crate::RetryTokens::new();
        let budget = crate::RetryBudget::new(&TOKENS).with_max_tokens(10);
        let policy = RetryPolicy::DEFAULT
            .with_budget(budget)
            .with_attempt_timeout(ms(100));
        budget.record_failure();
        let spent = budget.tokens();
        let (result, _, made) =
            stalled(&policy, Access::ReadOnly, Some(timed_out), &[Some(ms(10))]).await;
        assert_eq!((result.unwrap(), made), (0, 1));
        assert!(
            budget.tokens() > spent,
            "{} tokens after, {spent} before",
            budget.tokens()
        );
    }

    #[test]
    fn the_timer_is_made_at_the_attempts_first_pending_poll_only() {
        let waits = crate::fake::Waits::default();
        let policy = crate::fake::TIMEOUT_100_MS;
        let timed = TimedCall::with_sleeper(&policy, &OperationName::Named("test"), &waits);
        let mut execution = Retrying.begin_timed(&timed, Access::ReadOnly);
        crate::fake::timer_only_when_pending(&waits, |pending_first| {
            let attempt = crate::fake::succeeding(3, pending_first);
            let timeouts = |_| Some(timed_out as fn(TimedOut) -> DbError);
            match crate::fake::poll_to_end(execution.attempt_timed(attempt, timeouts)) {
                ControlFlow::Break(Ok(value)) => Some(value),
                _ => None,
            }
        });
    }

    #[test]
    #[allow(clippy::never_loop)] // The point: the loop compiles, and never turns.
    fn a_plain_call_is_made_once_as_written() {
        struct Job(u32);
        impl Job {
            async fn run(self) -> u32 {
                self.0
            }
        }
        let policy = RetryPolicy::DEFAULT.with_attempt_timeout(ms(100));
        let timed = TimedCall::new(&policy, &OperationName::Named("test"));
        let job = Job(7);
        let future = async {
            let mut execution = Plain.begin_timed(&timed, Access::Write);
            loop {
                match execution.attempt_timed(job.run(), |_| None).await {
                    ControlFlow::Break(value) => break value,
                    ControlFlow::Continue(never) => execution.again(never),
                }
            }
        };
        let mut future = core::pin::pin!(future);
        let mut cx = Context::from_waker(core::task::Waker::noop());
        assert_eq!(future.as_mut().poll(&mut cx), Poll::Ready(7));
    }
}
