//! An awaited execution without time limits: one small future per call site, and the
//! retry loop compiled once per result type rather than once per call site.
//!
//! `#[d1_retry]` rewrites `stmt.first().await` into `Retrying::run_in(..).await`, which
//! returns an [`Execute`]: a plain struct holding the arguments, the closure that makes an
//! attempt, the attempt's future and what carries over between attempts. It is not a state
//! machine (`async fn` or `async` block), and its `poll` hands the work to one function,
//! [`drive`].
//!
//! Why it matters: an annotated function can hold dozens of executions. With a generic
//! `async fn` per site, each one instantiated a state machine of about 400 lines of LLVM IR
//! in a debug build. Here each site instantiates two small functions (start an attempt,
//! poll it), and in a debug build `drive` runs behind a trait object, so it is compiled once
//! per `(T, E)`. In a release build `drive` is instantiated per site instead, so the
//! optimiser sees through the calls: a call that succeeds at once costs a few stores more
//! than the plain call. The trait object only exists during one `poll`, so it never
//! changes whether the caller's future is `Send`.
//!
//! The attempt's future is held inline and pinned with the [`Execute`] (the one `unsafe`
//! projection below). An earlier version borrowed a `pin!(None)` slot from the caller's
//! frame instead, which needed no `unsafe` but cost every annotated function an extra
//! local, a `super let` and a pinned borrow to type-check, borrow-check and lower: about a
//! quarter of what a read's expansion cost to compile.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use crate::Sleeper;
use crate::call::Call;
use crate::decide::Access;
use crate::failure::Failure;

/// The attempts of one execution, as the retry loop sees them: behind a trait object in a
/// debug build, so the loop is compiled once per result type.
pub trait Attempts<T, E> {
    /// Starts a new attempt, dropping the previous one.
    fn start(&mut self);
    /// Polls the attempt started last.
    fn poll_attempt(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, E>>;
}

/// How to start an attempt, and where its future lives: a view of an [`Execute`] for one
/// poll.
pub struct Site<'s, A, F, Fut> {
    args: &'s A,
    make: &'s mut F,
    slot: Pin<&'s mut Option<Fut>>,
}

impl<A, F, Fut, T, E> Attempts<T, E> for Site<'_, A, F, Fut>
where
    A: Clone,
    F: FnMut(A) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn start(&mut self) {
        // Each attempt gets its own clone of the arguments, so nothing the caller wrote
        // runs again except the execution itself.
        let attempt = (self.make)(self.args.clone());
        self.slot.set(Some(attempt));
    }

    #[cfg_attr(not(debug_assertions), inline(always))]
    fn poll_attempt(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        match self.slot.as_mut().as_pin_mut() {
            Some(attempt) => attempt.poll(cx),
            // `Execute::new` fills the slot and only `start` refills it: an empty slot is
            // unreachable, and waits forever rather than panics.
            None => Poll::Pending,
        }
    }
}

/// What carries over from one poll to the next.
struct State<S: Sleeper> {
    /// Attempts started so far (the first one by [`Execute::new`]).
    attempts: u32,
    /// The wait before the next attempt (on the heap: see `Call::wait`).
    waiting: Option<Pin<Box<S::Sleep>>>,
}

/// The future of an execution awaited where it is made: the attempt's future, how to make
/// the next one, how to read its error, and what carries over between attempts.
#[must_use = "futures do nothing unless polled"]
pub struct Execute<'c, S: Sleeper, A, F, Fut, E> {
    call: &'c Call<'c, S>,
    access: Access,
    args: A,
    make: F,
    /// `E::d1_failure`, taken where the site is made: that is where an unreadable error
    /// type is reported (the one error, at the call), so awaiting asks nothing of `E`.
    classify: for<'e> fn(&'e E) -> Failure<'e>,
    /// Pinned with the `Execute` (see `poll`); the other fields are not.
    attempt: Option<Fut>,
    state: State<S>,
}

impl<'c, S: Sleeper, A, F, Fut, E> Execute<'c, S, A, F, Fut, E> {
    /// Makes `make(args)`, retried as `access` allows on the call's schedule; `classify`
    /// reads a failed attempt's error (`E::d1_failure`, from the caller, which checks that
    /// `E` is readable).
    #[inline(always)]
    pub fn new(
        call: &'c Call<'c, S>,
        access: Access,
        args: A,
        mut make: F,
        classify: for<'e> fn(&'e E) -> Failure<'e>,
    ) -> Self
    where
        A: Clone,
        F: FnMut(A) -> Fut,
    {
        // The first attempt's future is made here, where the plain call would have made
        // it: before the `.await`.
        let first = make(args.clone());
        Execute {
            call,
            access,
            args,
            make,
            classify,
            attempt: Some(first),
            state: State {
                attempts: 1,
                waiting: None,
            },
        }
    }
}

impl<S, A, F, Fut, T, E> Future for Execute<'_, S, A, F, Fut, E>
where
    S: Sleeper,
    A: Clone,
    F: FnMut(A) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    type Output = Result<T, E>;

    #[cfg_attr(not(debug_assertions), inline(always))]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        // SAFETY: `attempt` is structurally pinned and nothing else is. Through this
        // borrow it is only polled in place and replaced in place by `Pin::set` (which
        // drops the old future where it lies), never moved out; `Execute` has no `Drop`
        // impl and no `Unpin` impl of its own, so it is `Unpin` only when the attempt is.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: see above; `this.attempt` stays where it is until it is dropped.
        let slot = unsafe { Pin::new_unchecked(&mut this.attempt) };
        let mut site = Site {
            args: &this.args,
            make: &mut this.make,
            slot,
        };
        #[cfg(debug_assertions)]
        let site: &mut dyn Attempts<T, E> = &mut site;
        #[cfg(not(debug_assertions))]
        let site = &mut site;
        drive(
            this.call,
            this.access,
            this.classify,
            site,
            &mut this.state,
            cx,
        )
    }
}

/// The retry loop of one execution: start an attempt, poll it, and after a failure ask
/// the call whether to wait and start another.
#[cfg_attr(not(debug_assertions), inline(always))]
fn drive<S, T, E, X>(
    call: &Call<'_, S>,
    access: Access,
    classify: for<'e> fn(&'e E) -> Failure<'e>,
    site: &mut X,
    state: &mut State<S>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, E>>
where
    S: Sleeper,
    X: Attempts<T, E> + ?Sized,
{
    loop {
        if let Some(wait) = &mut state.waiting {
            if wait.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            state.waiting = None;
            state.attempts += 1;
            site.start();
        }
        let Poll::Ready(result) = site.poll_attempt(cx) else {
            return Poll::Pending;
        };
        match result {
            Ok(value) => {
                call.succeeded();
                return Poll::Ready(Ok(value));
            }
            Err(error) => match call.after_failure(&classify(&error), access, state.attempts) {
                Some(delay) => state.waiting = Some(call.wait(delay)),
                None => return Poll::Ready(Err(error)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RetryPolicy;
    use crate::fake::{DbError, LOST, Waits};
    use crate::operation::OperationName;
    use crate::receiver::ExecutionError;
    use core::cell::{Cell, RefCell};

    fn poll<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
        Pin::new(future).poll(&mut Context::from_waker(core::task::Waker::noop()))
    }

    /// Polls `future` until it is ready, 10 times at most: a mutant that never finishes
    /// fails the test instead of hanging it.
    fn finish<F: Future + Unpin>(future: &mut F) -> F::Output {
        (0..10)
            .find_map(|_| match poll(future) {
                Poll::Ready(output) => Some(output),
                Poll::Pending => None,
            })
            .expect("an execution that never finishes")
    }

    /// An execution that fails with `failures` in turn, then succeeds, through [`Execute`]:
    /// returns how many attempts were made and what each attempt's arguments were.
    fn run(access: Access, failures: &[&'static str]) -> (Result<u32, DbError>, Vec<u32>, usize) {
        let waits = Waits::default();
        let policy = RetryPolicy::DEFAULT.without_budget();
        let call = Call::with_sleeper(&policy, OperationName::Named("test"), &waits);
        let made = Cell::new(0_u32);
        let seen = RefCell::new(Vec::new());
        let attempt = |arg: u32| {
            let n = made.get();
            made.set(n + 1);
            seen.borrow_mut().push(arg);
            let result = match failures.get(n as usize) {
                Some(message) => Err(DbError(message)),
                None => Ok(n),
            };
            core::future::ready(result)
        };
        let mut execute = core::pin::pin!(Execute::new(
            &call,
            access,
            7_u32,
            attempt,
            DbError::d1_failure
        ));
        assert_eq!(
            made.get(),
            1,
            "the first attempt is made where the call is written"
        );
        let mut polls = 0;
        let result = loop {
            polls += 1;
            assert!(polls <= 10, "an execution that never finishes");
            if let Poll::Ready(result) = poll(&mut execute) {
                break result;
            }
        };
        assert_eq!(
            polls,
            waits.0.borrow().len() + 1,
            "each wait is one pending poll"
        );
        assert_eq!(
            execute.state.attempts as usize,
            seen.borrow().len(),
            "the attempt count the log reports"
        );
        (result, seen.into_inner(), waits.0.borrow().len())
    }

    #[test]
    fn a_read_is_started_again_after_each_wait_with_fresh_arguments() {
        let (result, seen, waited) = run(Access::ReadOnly, &[LOST, LOST]);
        assert_eq!(result.unwrap(), 2, "the third attempt succeeds");
        assert_eq!(
            seen,
            [7, 7, 7],
            "every attempt gets a clone of the arguments"
        );
        assert_eq!(waited, 2);
    }

    #[test]
    fn a_write_that_may_have_run_is_handed_back_without_another_attempt() {
        let (result, seen, waited) = run(Access::Write, &[LOST]);
        assert_eq!(result.unwrap_err().0, LOST);
        assert_eq!(seen, [7], "made once");
        assert_eq!(waited, 0);
    }

    #[test]
    fn attempts_stop_at_the_policys_maximum() {
        let (result, seen, waited) = run(Access::ReadOnly, &[LOST; 9]);
        assert_eq!(result.unwrap_err().0, LOST);
        assert_eq!(seen.len(), 5, "5 attempts in all");
        assert_eq!(waited, 4);
    }

    #[test]
    fn an_attempt_that_borrows_from_itself_is_polled_where_it_lies() {
        // An `async` block that holds a borrow of its own local across a pending poll is
        // `!Unpin`: `Execute` must poll it in place, and replace it in place when it starts
        // the next attempt (`cargo miri test` checks the projection).
        let waits = Waits::default();
        let policy = RetryPolicy::DEFAULT.without_budget();
        let call = Call::with_sleeper(&policy, OperationName::Named("test"), &waits);
        let made = Cell::new(0_u32);
        let attempt = |first: u32| {
            let n = made.get();
            made.set(n + 1);
            async move {
                let local = [first + n; 4];
                let borrowed = &local;
                crate::fake::OncePending::new().await;
                match borrowed[3] {
                    5 => Err(DbError(LOST)),
                    value => Ok(value),
                }
            }
        };
        let mut execute = core::pin::pin!(Execute::new(
            &call,
            Access::ReadOnly,
            5_u32,
            attempt,
            DbError::d1_failure
        ));
        let result = finish(&mut execute);
        assert_eq!(result.unwrap(), 6, "the second attempt's own value");
        assert_eq!(made.get(), 2);
    }

    #[test]
    fn a_success_gives_the_budget_a_share_back_whichever_attempt_it_is() {
        // Whether the success comes from the first attempt or a later one, it must be
        // reported (`.ci/run` tests both builds: `drive` is inlined in one, a trait
        // object's in the other).
        static TOKENS: crate::RetryTokens = crate::RetryTokens::new();
        let budget = crate::RetryBudget::new(&TOKENS).with_max_tokens(10);
        let policy = RetryPolicy::DEFAULT.with_budget(budget);
        for failures in [&[][..], &[LOST][..]] {
            budget.record_failure();
            let spent = budget.tokens();
            let waits = Waits::default();
            let call = Call::with_sleeper(&policy, OperationName::Named("test"), &waits);
            let mut made = 0;
            let attempt = |()| {
                made += 1;
                core::future::ready(match failures.get(made - 1) {
                    Some(message) => Err(DbError(message)),
                    None => Ok(made),
                })
            };
            let mut execute = core::pin::pin!(Execute::new(
                &call,
                Access::ReadOnly,
                (),
                attempt,
                DbError::d1_failure
            ));
            let result = finish(&mut execute);
            assert_eq!(result.unwrap(), failures.len() + 1);
            assert!(
                budget.tokens() > spent - failures.len() as f64,
                "{failures:?}: {} tokens after, {spent} before",
                budget.tokens()
            );
        }
    }
}
