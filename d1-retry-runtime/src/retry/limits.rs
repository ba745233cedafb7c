//! Which loop a function with `policy = PATH` compiles: the one with time limits or the one
//! without, chosen from the constant's value; and the check of that constant.
//!
//! The attribute sees the path, not the policy behind it. It used to compile the
//! time-limited loop for every `policy = PATH` (`TimedCall`, `TimedAttempting`,
//! `TimedTurn`), although most policies have no time limits (the example Worker's `POLICY`
//! is `RetryPolicy::DEFAULT`): a clock and a timer's code in every site's future for limits
//! that never apply. The expansion now names the type `Limits::<{ limited(&PATH) }>`, whose
//! const argument the compiler evaluates while it type-checks the function, and the type's
//! methods make the call and the whole-body turn: [`Limits<false>`](Limits) the untimed
//! ones, [`Limits<true>`](Limits) the timed ones. Only one of the two loops is compiled,
//! and the user's tokens are written once.
//!
//! The sites are written once too, with the timed loop's steps (`begin_timed_on`,
//! `attempt_timed`, `classify_timed`). The untimed types take them here and leave out the
//! conversion of a [`TimedOut`], which no limit will ever need. A path that cannot be named
//! outside the function (`Self::POLICY`, a generic parameter's constant) cannot be a const
//! argument, which may not use the function's generics: such a function keeps the timed loop.

use core::future::Future;
use core::marker::PhantomData;

use crate::classify::failure::Failure;
use crate::dispatch::receiver::{ExecutionError, Pending, Retrying};
use crate::retry::call::{Call, MakeAttempt, TimedCall, execute};
use crate::retry::decide::Access;
use crate::retry::driver::{Driver, Plan, TimedTurn, Turn};
use crate::retry::execution::{Attempting, Execution};
#[cfg(any(feature = "tokio", all(feature = "worker", target_arch = "wasm32")))]
use crate::retry::operation::OperationName;
use crate::retry::timed_execution::TimedExecution;
use crate::schedule::timeout::TimedOut;
use crate::{RetryPolicy, Sleeper};

/// The loop of a function whose policy is a constant the attribute cannot read:
/// `Limits<true>` when the policy has time limits, `Limits<false>` when it has none.
#[derive(Clone, Copy, Debug)]
pub struct Limits<const LIMITED: bool>;

/// Validates a policy given as `#[d1_retry(policy = PATH)]`; the expansion calls it in a
/// constant, so an invalid policy is a compile error with this message; `#[track_caller]`
/// puts that error at the expansion's call, spanned at the user's path.
#[track_caller]
pub const fn checked_policy(policy: RetryPolicy) -> RetryPolicy {
    match policy.validate() {
        Ok(()) => policy,
        Err(error) => panic!("{}", error.message()),
    }
}

/// Whether `policy` has time limits: the const argument of [`Limits`]. It validates the
/// policy too ([`checked_policy`]), so that this one evaluation is the attribute's check of
/// a function without time-limit options.
#[track_caller]
pub const fn limited(policy: &RetryPolicy) -> bool {
    checked_policy(*policy).has_time_limits()
}

#[cfg(any(feature = "tokio", all(feature = "worker", target_arch = "wasm32")))]
impl Limits<false> {
    /// The call of a function whose policy has no time limits.
    #[inline(always)]
    pub fn call<'a>(self, policy: &'a RetryPolicy, operation: &'a OperationName<'a>) -> Call<'a> {
        Call::new(policy, operation)
    }
}

#[cfg(any(feature = "tokio", all(feature = "worker", target_arch = "wasm32")))]
impl Limits<true> {
    /// The call of a function whose policy has time limits.
    #[inline(always)]
    pub fn call<'a>(
        self,
        policy: &'a RetryPolicy,
        operation: &'a OperationName<'a>,
    ) -> TimedCall<'a> {
        TimedCall::new(policy, operation)
    }
}

impl Limits<false> {
    /// A whole-body function's next attempt, as [`Driver::turn`]: no limit to race.
    #[inline(always)]
    pub fn turn<'t, 'a, S, F, T, E>(
        self,
        driver: &'t mut Driver<'a, S>,
        attempt: F,
        plan: Plan<'t, 'a>,
        classify: for<'e> fn(&'e E) -> Failure<'e>,
        _timed_out: Option<fn(TimedOut) -> E>,
    ) -> Turn<'t, 'a, S, F, E>
    where
        S: Sleeper,
        F: Future<Output = Result<T, E>>,
    {
        driver.turn(attempt, plan, classify)
    }
}

impl Limits<true> {
    /// A whole-body function's next attempt, as [`Driver::turn_timed`].
    #[inline(always)]
    pub fn turn<'t, 'a, S, F, T, E>(
        self,
        driver: &'t mut Driver<'a, S>,
        attempt: F,
        plan: Plan<'t, 'a>,
        classify: for<'e> fn(&'e E) -> Failure<'e>,
        timed_out: Option<fn(TimedOut) -> E>,
    ) -> TimedTurn<'t, 'a, S, F, E>
    where
        S: Sleeper,
        F: Future<Output = Result<T, E>>,
    {
        driver.turn_timed(attempt, plan, classify, timed_out)
    }
}

/// The call an awaited execution begins on ([`Retrying::begin_timed_on`]): with time
/// limits or without.
pub trait Begin<'c> {
    /// The execution's state between its attempts.
    type Execution;

    /// Starts an execution with `access`.
    fn begin(&'c self, site: Retrying, access: Access) -> Self::Execution;
}

impl<'c, S: Sleeper + 'c> Begin<'c> for Call<'c, S> {
    type Execution = Execution<'c, S>;

    #[inline(always)]
    fn begin(&'c self, site: Retrying, access: Access) -> Execution<'c, S> {
        site.begin(self, access)
    }
}

impl<'c, S: Sleeper + 'c> Begin<'c> for TimedCall<'c, S> {
    type Execution = TimedExecution<'c, S>;

    #[inline(always)]
    fn begin(&'c self, site: Retrying, access: Access) -> TimedExecution<'c, S> {
        site.begin_timed(self, access)
    }
}

impl<'c, S: Sleeper> Execution<'c, S> {
    /// [`attempt`](Self::attempt), for a site written with the timed loop's steps: no
    /// limit applies, so `timeouts` is not asked.
    #[inline(always)]
    pub fn attempt_timed<Fut, T, E>(
        &mut self,
        attempt: Fut,
        _timeouts: impl FnOnce(PhantomData<E>) -> Option<fn(TimedOut) -> E>,
    ) -> Attempting<'_, 'c, S, Fut, E>
    where
        Fut: Future<Output = Result<T, E>>,
        E: ExecutionError,
    {
        self.attempt(attempt)
    }
}

impl<'c, S, A, F> Pending<'c, Call<'c, S>, A, F> {
    /// The future of an execution not awaited where it is made, without time limits:
    /// `timeouts` is not asked.
    pub fn classify_timed<Fut, T, E, C>(
        self,
        classify: C,
        _timeouts: impl FnOnce(PhantomData<E>) -> Option<fn(TimedOut) -> E>,
    ) -> impl Future<Output = Result<T, E>>
    where
        S: Sleeper,
        A: Clone,
        F: MakeAttempt<A, Future = Fut>,
        Fut: Future<Output = Result<T, E>>,
        C: for<'e> FnMut(&'e E) -> Failure<'e>,
    {
        let (call, access, args, attempt) = self.into_parts();
        execute(call, access, args, attempt, classify)
    }
}
