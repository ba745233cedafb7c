//! An execution awaited where it is made, without time limits (`stmt.first().await`,
//! `db.batch(statements).await`, `statement.await`): retried by a loop the expansion writes
//! where the call stands.
//!
//! `#[d1_retry]` rewrites such a call into
//!
//! ```text
//! match <site>.begin(&call, access) {
//!     mut execution => loop {
//!         match execution.attempt(stmt.first()).await {
//!             ControlFlow::Break(result) => break result,
//!             ControlFlow::Continue(again) => execution.again(again),
//!         }
//!     }
//! }
//! ```
//!
//! so that each attempt is the call exactly as written, made again only after a failure
//! that may be retried and after its wait. A call with arguments evaluates them once, before
//! the loop, which [`keep`](Execution::keep)s them; each attempt [`take`](Execution::take)s
//! a clone, as a statement awaited itself is cloned for each attempt. The arguments stay
//! in place between attempts: moved out and back around the await, they cost rustc a
//! drop flag and more state per site (a batch's expansion about a sixth more, counted).
//!
//! What each call site instantiates is one small future ([`Attempting`]) around the call's
//! own future, with no closure; the decision and the wait are in [`Execution`]'s methods,
//! compiled once per sleeper. Counted in instructions of rustc (`COUNT=instructions
//! scripts/bench-compile-time.sh`), a read's expansion costs 38 % less than through the
//! closure-based future it replaces, which held the arguments, the closure and the attempt,
//! and drove them through a trait object.
//!
//! A receiver that is not D1 ([`Plain`]) may take `self` or its arguments by value
//! (`job.run().await`), which a loop could not move twice. So [`Plain`]'s execution
//! continues with [`Never`]: its `again` returns `!`, and the loop has no way back to a
//! second call that the borrow checker could see. It never turns, and moves what it is
//! given into the one call, as written: its receiver directly, its arguments through
//! [`PlainExecution::take`], which takes them out of the `Option` that kept them.

use core::future::{Future, IntoFuture};
use core::marker::PhantomData;
use core::ops::ControlFlow;
use core::pin::Pin;
use core::task::{Context, Poll};

use crate::classify::failure::Failure;
use crate::dispatch::receiver::{D1Call, D1Receiver, ExecutionError, Never, Plain, Retrying};
use crate::retry::call::Call;
use crate::retry::decide::Access;
use crate::schedule::timeout::TimeLimit;
use crate::schedule::wait::{Held, Wait};
use crate::{Sleeper, Stopwatch};

/// What carries over between the attempts of one retried execution: the call's schedule,
/// the access and the number of attempts made. It has no destructor (the wait after a
/// failure is [`Attempting`]'s): the caller holds it across its await, where a value with
/// one costs rustc a drop flag and cleanup paths in every function (a read's expansion
/// about a tenth more, counted).
pub struct Execution<'c, S: Sleeper> {
    call: &'c Call<'c, S>,
    access: Access,
    attempts: u32,
}

impl<'c, S: Sleeper> Execution<'c, S> {
    /// One attempt: `attempt` is the call as written. Resolves to `Break(result)` to hand
    /// the caller, or to `Continue`, after a failure that is retried and its wait, when
    /// the loop must make the call again.
    #[inline(always)]
    pub fn attempt<Fut, T, E>(&mut self, attempt: Fut) -> Attempting<'_, 'c, S, Fut, E>
    where
        Fut: Future<Output = Result<T, E>>,
        E: ExecutionError,
    {
        Attempting {
            execution: self,
            error: PhantomData,
            waiting: Held::none(),
            attempt,
        }
    }

    /// Before the next attempt: nothing to do (the wait is over).
    #[inline(always)]
    pub fn again(&mut self, (): ()) {}

    /// Before the next attempt of a call whose receiver is a field (`self.jobs.stmt`): each
    /// attempt evaluates it again, and through a `Deref` of the user's on the way
    /// (`self.jobs` a cursor) it may name another statement than the one the access was
    /// judged on, whose address `at` holds. Then the next attempt is that statement's
    /// first, and its failures are judged by the SQL it holds, read now: retried under the
    /// first statement's access, a write could run twice.
    pub fn again_at<R: D1Receiver + ?Sized, C: D1Call>(
        &mut self,
        (): (),
        at: &mut usize,
        receiver: &R,
        own: C,
    ) {
        if let Some(access) = crate::retry::follow::moved(at, receiver, own) {
            crate::retry::scope::switch_write(self.access, access);
            self.access = access;
        }
    }

    /// Keeps the arguments for every attempt: each takes a clone ([`take`](Self::take)).
    #[inline(always)]
    pub fn keep<A: Clone>(&self, args: A) -> A {
        args
    }

    /// The arguments of this attempt: a clone of those kept, as the call may consume what
    /// it is given.
    #[inline(always)]
    pub fn take<A: Clone>(&self, kept: &mut A) -> A {
        kept.clone()
    }

    /// After a failed attempt: the wait before the next, or `None` to hand the caller the
    /// error.
    fn failed(&mut self, failure: &Failure<'_>) -> Option<Pin<Box<S::Sleep>>> {
        self.decide(failure, None, None)
    }

    /// The decision after a failure: the wait before the next attempt, or `None`. Under
    /// time limits ([`TimedExecution`](crate::retry::timed_execution::TimedExecution)), `cut` is
    /// the limit that cut the attempt, and `started` the deadline's stopwatch.
    pub(crate) fn decide(
        &mut self,
        failure: &Failure<'_>,
        cut: Option<TimeLimit>,
        started: Option<Stopwatch>,
    ) -> Option<Pin<Box<S::Sleep>>> {
        let Some(delay) =
            self.call
                .decide_after(failure, self.access, self.attempts, cut, started, None)
        else {
            crate::retry::scope::settle_write(self.access);
            return None;
        };
        Some(self.call.wait(delay))
    }

    /// After a successful attempt (see [`Call::completed`]).
    pub(crate) fn succeeded(&self) {
        self.call.completed(self.access);
        crate::retry::scope::settle_write(self.access);
    }

    /// The call's schedule.
    pub(crate) fn call(&self) -> &'c Call<'c, S> {
        self.call
    }

    /// The wait after a failed attempt, then the count of the next attempt once it is over.
    pub(crate) fn poll_waiting(&mut self, waiting: &mut Wait<S>, cx: &mut Context<'_>) -> Poll<()> {
        if waiting.is_pending(cx) {
            return Poll::Pending;
        }
        self.attempts += 1;
        Poll::Ready(())
    }
}

/// One attempt of an [`Execution`]: the call's future, then, after a failure that is
/// retried, the wait. A plain struct rather than a state machine.
#[must_use = "futures do nothing unless polled"]
pub struct Attempting<'e, 'c, S: Sleeper, Fut, E> {
    execution: &'e mut Execution<'c, S>,
    /// The error type, whose classifier (`E::d1_failure`) reads a failure: named by the
    /// type rather than held as a function pointer, which would make every call's future
    /// 8 bytes larger (the `operation` field of `Call` says why they count).
    error: PhantomData<fn() -> E>,
    /// The wait after a failure, on the heap (see `Call::wait`): only a failure pays for
    /// it. Here rather than in the [`Execution`] the caller holds across its await: a
    /// value with a destructor there costs rustc more in every function.
    waiting: Wait<S>,
    /// Pinned with the `Attempting` (see `poll`); the other fields are not.
    attempt: Fut,
}

impl<S, Fut, T, E> Future for Attempting<'_, '_, S, Fut, E>
where
    S: Sleeper,
    Fut: Future<Output = Result<T, E>>,
    E: ExecutionError,
{
    type Output = ControlFlow<Result<T, E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `attempt` is structurally pinned and nothing else is: through this
        // borrow it is only polled in place, never moved out; `Attempting` has no `Drop`
        // impl and no `Unpin` impl of its own, so it is `Unpin` only when the attempt is.
        let this = unsafe { self.get_unchecked_mut() };
        loop {
            // Once a wait is scheduled, the attempt has finished: it is never polled again.
            if this.waiting.is_some() {
                return this
                    .execution
                    .poll_waiting(&mut this.waiting, cx)
                    .map(|()| ControlFlow::Continue(()));
            }
            // SAFETY: see above; `this.attempt` stays where it is until it is dropped.
            let result = match unsafe { Pin::new_unchecked(&mut this.attempt) }.poll(cx) {
                Poll::Ready(result) => result,
                Poll::Pending => return Poll::Pending,
            };
            match result {
                Ok(value) => {
                    this.execution.succeeded();
                    return Poll::Ready(ControlFlow::Break(Ok(value)));
                }
                Err(error) => match this.execution.failed(&E::d1_failure(&error)) {
                    Some(wait) => *this.waiting = Some(wait),
                    None => return Poll::Ready(ControlFlow::Break(Err(error))),
                },
            }
        }
    }
}

/// [`Execution`] for a receiver that is not D1 ([`Plain`]): the call is made once, as
/// written.
#[derive(Clone, Copy, Debug)]
pub struct PlainExecution;

impl PlainExecution {
    /// Awaits `value` once, as `.await` does: it always breaks the loop.
    #[inline(always)]
    pub fn attempt<R: IntoFuture>(&mut self, value: R) -> Once<R::IntoFuture> {
        Once(value.into_future())
    }

    /// Never called: [`Never`] has no values. Returning `!` is what lets a loop around a
    /// call that moves its receiver compile (see the module).
    #[inline(always)]
    pub fn again(&mut self, never: Never) -> ! {
        match never {}
    }

    /// Never called, as [`again`](Self::again).
    #[inline(always)]
    pub fn again_at<R: ?Sized, C>(&mut self, never: Never, _at: &mut usize, _: &R, _: C) -> ! {
        match never {}
    }

    /// Keeps the arguments for the one attempt.
    #[inline(always)]
    pub fn keep<A>(&self, args: A) -> Option<A> {
        Some(args)
    }

    /// The arguments, moved into the one call: nothing is cloned.
    #[inline(always)]
    pub fn take<A>(&self, kept: &mut Option<A>) -> A {
        match kept.take() {
            Some(args) => args,
            // The loop of a plain call never turns (`again` is `!`), so the arguments
            // are taken once.
            None => unreachable!("a plain call is made once"),
        }
    }
}

/// The future of [`PlainExecution::attempt`]: the value's own future, its output in
/// `Break`.
#[must_use = "futures do nothing unless polled"]
pub struct Once<F>(F);

impl<F: Future> Future for Once<F> {
    type Output = ControlFlow<F::Output, Never>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: the one field is structurally pinned: it is only polled in place, and
        // `Once` has no `Drop` impl and no `Unpin` impl of its own.
        unsafe { self.map_unchecked_mut(|once| &mut once.0) }
            .poll(cx)
            .map(ControlFlow::Break)
    }
}

impl Retrying {
    /// Starts an execution awaited where it is made, with no arguments: see the module.
    #[inline(always)]
    pub fn begin<'c, S: Sleeper>(self, call: &'c Call<'c, S>, access: Access) -> Execution<'c, S> {
        crate::retry::scope::begin_write(access);
        Execution {
            call,
            access,
            attempts: 1,
        }
    }

    /// [`begin`](Self::begin), for `own` on `receiver` ([`Retrying::access`]): what the
    /// expansion calls, one call per site.
    #[inline(always)]
    pub fn begin_on<'c, S: Sleeper, R: D1Receiver + ?Sized, C: D1Call>(
        self,
        call: &'c Call<'c, S>,
        access: Access,
        receiver: &R,
        own: C,
    ) -> Execution<'c, S> {
        self.begin(call, self.access(access, receiver, own))
    }
}

impl Plain {
    /// The call as written, made once: see [`PlainExecution`].
    #[inline(always)]
    pub fn begin<S>(self, _call: &Call<'_, S>, _access: Access) -> PlainExecution {
        PlainExecution
    }

    /// [`begin`](Self::begin), whatever the call.
    #[inline(always)]
    pub fn begin_on<S, R: ?Sized, C>(
        self,
        _call: &Call<'_, S>,
        _access: Access,
        _receiver: &R,
        _own: C,
    ) -> PlainExecution {
        PlainExecution
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RetryPolicy;
    use crate::fake::{DbError, LOST, OncePending, Waits};
    use crate::retry::operation::OperationName;
    use core::cell::Cell;

    /// Polls `future` until it is ready, 20 times at most (a mutant that never finishes
    /// fails the test instead of hanging it); returns its output and the pending polls.
    fn finish<F: Future>(future: F) -> (F::Output, usize) {
        let mut future = core::pin::pin!(future);
        let mut cx = Context::from_waker(core::task::Waker::noop());
        for pending in 0..20 {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return (output, pending);
            }
        }
        panic!("an execution that never finishes");
    }

    /// The loop `#[d1_retry]` writes around `make()`, on a retrying site, where each
    /// attempt is pending `own` times before it is ready: returns the result and the waits,
    /// and checks the polls and the count of attempts the execution kept.
    fn retried<Fut>(
        access: Access,
        own: usize,
        mut make: impl FnMut() -> Fut,
    ) -> (Result<u32, DbError>, usize)
    where
        Fut: Future<Output = Result<u32, DbError>>,
    {
        let waits = Waits::default();
        let policy = RetryPolicy::DEFAULT.without_budget();
        let call = Call::with_sleeper(&policy, &OperationName::Named("test"), &waits);
        let (result, pending) = finish(async {
            let mut execution = Retrying.begin(&call, access);
            let result = loop {
                match execution.attempt(make()).await {
                    ControlFlow::Break(result) => break result,
                    ControlFlow::Continue(again) => execution.again(again),
                }
            };
            (result, execution.attempts)
        });
        let (result, attempts) = result;
        let waited = waits.0.borrow().len();
        assert_eq!(
            pending,
            waited + own * attempts as usize,
            "each wait is one pending poll"
        );
        assert_eq!(
            attempts as usize,
            waited + 1,
            "the attempt count the log reports"
        );
        (result, waited)
    }

    /// An attempt maker that fails with `failures` in turn, then succeeds with the number
    /// of attempts made before it; counts the attempts in `made`.
    fn failing<'a>(
        made: &'a Cell<u32>,
        failures: &'a [&'static str],
    ) -> impl FnMut() -> core::future::Ready<Result<u32, DbError>> + 'a {
        move || {
            let n = made.get();
            // A loop that never stops making attempts fails here instead of hanging.
            assert!(n < 10, "more attempts than any policy allows");
            made.set(n + 1);
            core::future::ready(match failures.get(n as usize) {
                Some(message) => Err(DbError(message)),
                None => Ok(n),
            })
        }
    }

    #[test]
    fn a_read_is_made_again_after_each_wait() {
        let made = Cell::new(0);
        let (result, waited) = retried(Access::ReadOnly, 0, failing(&made, &[LOST, LOST]));
        assert_eq!(result.unwrap(), 2, "the third attempt succeeds");
        assert_eq!(made.get(), 3);
        assert_eq!(waited, 2);
    }

    #[test]
    fn a_write_that_may_have_run_is_handed_back_without_another_attempt() {
        let made = Cell::new(0);
        let (result, waited) = retried(Access::Write, 0, failing(&made, &[LOST]));
        assert_eq!(result.unwrap_err().0, LOST);
        assert_eq!(made.get(), 1, "made once");
        assert_eq!(waited, 0);
    }

    #[test]
    fn attempts_stop_at_the_policys_maximum() {
        let made = Cell::new(0);
        let (result, waited) = retried(Access::ReadOnly, 0, failing(&made, &[LOST; 9]));
        assert_eq!(result.unwrap_err().0, LOST);
        assert_eq!(made.get(), 5, "5 attempts in all");
        assert_eq!(waited, 4);
    }

    #[test]
    fn an_attempt_that_borrows_from_itself_is_polled_where_it_lies() {
        // An `async` block holding a borrow of its own local across a pending poll is
        // `!Unpin`: `Attempting` must poll it in place (`cargo miri test` checks the
        // projection).
        let made = Cell::new(0_u32);
        let (result, waited) = retried(Access::ReadOnly, 1, || {
            let n = made.get();
            assert!(n < 10, "more attempts than any policy allows");
            made.set(n + 1);
            async move {
                let local = [n; 4];
                let borrowed = &local;
                OncePending::new().await;
                match borrowed[3] {
                    0 => Err(DbError(LOST)),
                    value => Ok(value),
                }
            }
        });
        assert_eq!(result.unwrap(), 1, "the second attempt's own value");
        assert_eq!(waited, 1);
    }

    #[test]
    fn a_success_gives_the_budget_a_share_back_whichever_attempt_it_is() {
        static TOKENS: crate::RetryTokens = crate::RetryTokens::new();
        let budget = crate::RetryBudget::new(&TOKENS).with_max_tokens(10);
        let policy = RetryPolicy::DEFAULT.with_budget(budget);
        for failures in [&[][..], &[LOST][..]] {
            budget.record_failure();
            let spent = budget.tokens();
            let waits = Waits::default();
            let call = Call::with_sleeper(&policy, &OperationName::Named("test"), &waits);
            let made = Cell::new(0);
            let mut make = failing(&made, failures);
            let (result, _) = finish(async {
                let mut execution = Retrying.begin(&call, Access::ReadOnly);
                loop {
                    match execution.attempt(make()).await {
                        ControlFlow::Break(result) => break result,
                        ControlFlow::Continue(again) => execution.again(again),
                    }
                }
            });
            assert_eq!(result.unwrap() as usize, failures.len());
            assert!(
                budget.tokens() > spent - failures.len() as f64,
                "{failures:?}: {} tokens after, {spent} before",
                budget.tokens()
            );
        }
    }

    #[test]
    fn each_attempt_gets_a_clone_of_the_arguments_and_the_loop_keeps_one() {
        // As `#[d1_retry]` writes a call with arguments: kept by the loop, a clone taken
        // for each attempt.
        let waits = Waits::default();
        let policy = RetryPolicy::DEFAULT.without_budget();
        let call = Call::with_sleeper(&policy, &OperationName::Named("test"), &waits);
        let seen = core::cell::RefCell::new(Vec::new());
        let run = |name: String, n: u32| {
            assert!(
                seen.borrow().len() < 10,
                "more attempts than any policy allows"
            );
            seen.borrow_mut().push(name.clone());
            core::future::ready(if seen.borrow().len() < 3 {
                Err(DbError(LOST))
            } else {
                Ok(n + name.len() as u32)
            })
        };
        let (result, _) = finish(async {
            let kept = ("ada".to_owned(), 1_u32);
            let mut execution = Retrying.begin(&call, Access::ReadOnly);
            let mut kept = execution.keep(kept);
            loop {
                let (name, n) = execution.take(&mut kept);
                match execution.attempt(run(name, n)).await {
                    ControlFlow::Break(result) => break result,
                    ControlFlow::Continue(again) => execution.again(again),
                }
            }
        });
        assert_eq!(result.unwrap(), 4);
        assert_eq!(seen.into_inner(), ["ada", "ada", "ada"]);
        assert_eq!(waits.0.borrow().len(), 2);
    }

    #[test]
    #[allow(clippy::never_loop)] // The point: the loop compiles, and never turns.
    fn a_plain_call_moves_its_arguments_once_without_cloning_them() {
        struct NotClone(u32);
        struct Job;
        impl Job {
            async fn exec(self, value: NotClone) -> u32 {
                value.0
            }
        }
        let policy = RetryPolicy::DEFAULT;
        let call = Call::new(&policy, &OperationName::Named("test"));
        let job = Job;
        let (value, pending) = finish(async {
            let kept = NotClone(5);
            let mut execution = Plain.begin(&call, Access::Write);
            let mut kept = execution.keep(kept);
            loop {
                let value = execution.take(&mut kept);
                match execution.attempt(job.exec(value)).await {
                    ControlFlow::Break(value) => break value,
                    ControlFlow::Continue(again) => execution.again(again),
                }
            }
        });
        assert_eq!((value, pending), (5, 0));
    }

    #[test]
    #[allow(clippy::never_loop)] // The point: the loop compiles, and never turns.
    fn a_plain_call_is_made_once_even_when_it_moves_its_receiver() {
        struct Job(u32);
        impl Job {
            async fn run(self) -> u32 {
                self.0
            }
        }
        let policy = RetryPolicy::DEFAULT;
        let call = Call::new(&policy, &OperationName::Named("test"));
        let job = Job(3);
        let (value, pending) = finish(async {
            let mut execution = Plain.begin(&call, Access::Write);
            loop {
                match execution.attempt(job.run()).await {
                    ControlFlow::Break(value) => break value,
                    ControlFlow::Continue(again) => execution.again(again),
                }
            }
        });
        assert_eq!((value, pending), (3, 0));
    }
}
