//! The whole-attempt retry loop's decisions, shared by [`Retry`](crate::Retry) and the
//! `#[d1_retry(read_only)]` / `#[d1_retry(idempotent)]` expansion: one [`Call`] whose only
//! execution is the whole attempt, so both loops decide with the same code. Also what a
//! whole-body attempt observed ([`Attempt`], its dynamic SQL) and how that sets its access
//! ([`Plan`]), which [`Turn`] reads after a failure.

use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicU32, Ordering};
use core::task::{Context, Poll};
use core::time::Duration;

use crate::classify::failure::Failure;
use crate::retry::call::{Call, Limit, race};
use crate::retry::decide::Access;
use crate::retry::operation::OperationName;
use crate::retry::scope::{self, Entered, InFlight, Leaving};
use crate::schedule::timeout::{TimeLimit, TimedOut};
use crate::schedule::wait::{Held, Timer, Wait};
use crate::{FailureClass, RetryPolicy, Sleeper, Stopwatch, is_read_only, is_read_only_prepared};

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
    waiting: Wait<S>,
    /// The least retryable class of the failures D1 calls within the current attempt left
    /// to it (`scope::leave`), which decides when the attempt's own error does not say.
    left: Option<FailureClass>,
}

impl<'a, S: Sleeper> Driver<'a, S> {
    /// A driver about to make its first attempt.
    pub fn new(policy: &'a RetryPolicy, operation: &'a OperationName<'a>, sleeper: S) -> Self {
        let call = Call::with_sleeper(policy, operation, sleeper);
        Driver {
            started: call.start_deadline(),
            call,
            attempt: 1,
            seed: None,
            cut: None,
            waiting: Held::none(),
            left: None,
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
        *self.waiting = Some(self.call.wait(delay));
    }

    /// The next attempt of a loop without time limits, and the decision after it: the
    /// wait decided after the last failure, then `attempt` polled inside the scope that
    /// keeps the D1 calls within from retrying on their own. Resolves to `Some(result)` to
    /// hand the caller, or `None` after a failure to retry (the wait is then scheduled and
    /// the error dropped), so that the function's loop holds one await point and nothing
    /// else.
    pub fn turn<'t, F, T, E>(
        &'t mut self,
        attempt: F,
        plan: Plan<'t, 'a>,
        classify: for<'e> fn(&'e E) -> Failure<'e>,
    ) -> Turn<'t, 'a, S, F, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        Turn {
            head: TurnHead {
                driver: self,
                plan,
                classify,
            },
            attempt,
        }
    }

    /// After an attempt of [`turn`](Self::turn): `Some` to hand back, `None` to retry.
    /// Shared by [`Turn`] and [`TimedTurn`], and compiled once per result type.
    fn after<T, E>(
        &mut self,
        result: Result<T, E>,
        plan: Plan<'_, '_>,
        classify: for<'e> fn(&'e E) -> Failure<'e>,
    ) -> Option<Result<T, E>> {
        let left = self.left.take();
        match result {
            Ok(value) => {
                self.succeeded();
                Some(Ok(value))
            }
            Err(error) => match self.next_delay(&classify(&error).or_left(left), plan.access()) {
                Some(delay) => {
                    self.wait_before_next(delay);
                    None
                }
                None => Some(Err(error)),
            },
        }
    }

    /// [`turn`](Self::turn) under the policy's time limits, for a whole-body function with
    /// a `policy = PATH` or time-limit options: the attempt is raced against them when
    /// `timed_out` says how the caller's error is made of a [`TimedOut`], and no limit
    /// applies (no race, and no deadline on the waits) when the error type cannot receive
    /// one, as on a D1 call's attempt. A cut attempt fails *maybe executed*: dropping its
    /// future does not cancel a query in D1.
    pub fn turn_timed<'t, F, T, E>(
        &'t mut self,
        attempt: F,
        plan: Plan<'t, 'a>,
        classify: for<'e> fn(&'e E) -> Failure<'e>,
        timed_out: Option<fn(TimedOut) -> E>,
    ) -> TimedTurn<'t, 'a, S, F, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        TimedTurn {
            head: TurnHead {
                driver: self,
                plan,
                classify,
            },
            race: TimedRace {
                timed_out,
                limit: None,
                started: false,
                timer: Held::none(),
            },
            attempt,
        }
    }

    /// As a timed attempt starts: its limit, when `limited`; else none, and the deadline
    /// no longer bounds the waits either. Apart from [`TimedTurn`]'s poll, as the helpers
    /// below are, so that it is compiled once per sleeper rather than once per result type.
    fn limit_of_attempt(&mut self, limited: bool) -> Option<Limit> {
        self.cut = None;
        if !limited {
            self.started = None;
            return None;
        }
        self.call.attempt_limit(self.started)
    }

    /// A timed attempt is pending: whether its limit's timer has fired. The timer is made
    /// at the attempt's first pending poll, so that an attempt ready at once makes none.
    fn fired(
        &self,
        limit: Option<Limit>,
        mut timer: Pin<&mut Option<S::Sleep>>,
        cx: &mut Context<'_>,
    ) -> bool {
        let Some(limit) = limit else {
            return false;
        };
        if timer.is_none() {
            timer.set(Some(self.call.sleeper().sleep(limit.timer)));
        }
        timer
            .as_pin_mut()
            .is_some_and(|timer| timer.poll(cx).is_ready())
    }

    /// After `limit` cut the attempt: `None` when it is run again, after the wait now
    /// scheduled; else the timeout to hand the caller.
    fn after_cut(&mut self, limit: Limit, access: Access) -> Option<TimedOut> {
        self.left = None;
        let timed_out = TimedOut::new(limit.limit, limit.reported, self.call.operation());
        self.cut = Some(limit.limit);
        let failure = Failure::with_class(FailureClass::MaybeExecuted, &timed_out);
        match self.next_delay(&failure, access) {
            Some(delay) => {
                self.wait_before_next(delay);
                None
            }
            None => Some(timed_out),
        }
    }

    /// Waits `delay` through the sleeper (on the heap: see `Call::wait`).
    pub fn sleep(&self, delay: Duration) -> core::pin::Pin<Box<S::Sleep>> {
        self.call.wait(delay)
    }
}

/// The future of [`Driver::turn`]: a plain struct rather than a state machine, holding
/// the attempt's future, so that a whole-body function adds one await point per attempt
/// and no state machine for the wait or the decision.
#[must_use = "futures do nothing unless polled"]
pub struct Turn<'t, 'a, S: Sleeper, F, E> {
    head: TurnHead<'t, 'a, S, E>,
    /// Pinned with the `Turn` (see `poll`); the other fields are not.
    attempt: F,
}

/// What a [`Turn`] holds beside its attempt: none of it depends on the attempt's type,
/// so that what polls it is compiled once per result type, not once per function.
struct TurnHead<'t, 'a, S: Sleeper, E> {
    driver: &'t mut Driver<'a, S>,
    plan: Plan<'t, 'a>,
    classify: for<'e> fn(&'e E) -> Failure<'e>,
}

/// A whole-body attempt as a turn polls it: behind a pointer with a vtable, so that only
/// this coercion is compiled once per function (each function's body is a type of its
/// own), and the wait, the scope and the decision once per result type. One indirect call
/// per poll, against a copy of the turn's code in every `read_only` and `idempotent`
/// function.
type PinnedAttempt<'p, T, E> = Pin<&'p mut (dyn Future<Output = Result<T, E>> + 'p)>;

impl<S, F, T, E> Future for Turn<'_, '_, S, F, E>
where
    S: Sleeper,
    F: Future<Output = Result<T, E>>,
{
    type Output = Option<Result<T, E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `attempt` is structurally pinned and nothing else is: through this
        // borrow it is only polled in place, never moved out; `Turn` has no `Drop` impl
        // and no `Unpin` impl of its own, so it is `Unpin` only when the attempt is.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: see above; `this.attempt` stays where it is until it is dropped.
        let attempt = unsafe { Pin::new_unchecked(&mut this.attempt) };
        this.head.poll(attempt, cx)
    }
}

impl<S: Sleeper, E> TurnHead<'_, '_, S, E> {
    /// One poll of a [`Turn`]: the scheduled wait, then the attempt.
    fn poll<T>(
        &mut self,
        attempt: PinnedAttempt<'_, T, E>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<T, E>>> {
        if self.driver.waiting.is_pending(cx) {
            return Poll::Pending;
        }
        self.attempt(attempt, cx)
    }

    /// The attempt, polled here rather than through a future of its own (one `poll` per
    /// function for its attempt, not two), then the decision once it is ready: the part
    /// of a poll that [`Turn`] and [`TimedTurn`] share after the wait.
    fn attempt<T>(
        &mut self,
        attempt: PinnedAttempt<'_, T, E>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<T, E>>> {
        match poll_inside(self.plan, attempt, &mut self.driver.left, cx) {
            Poll::Ready(result) => Poll::Ready(self.driver.after(result, self.plan, self.classify)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The future of [`Driver::turn_timed`]: a [`Turn`] raced against its limit, a plain
/// struct too, so that a function under time limits adds one await point per attempt and
/// no state machine for the race, the wait or the decision.
#[must_use = "futures do nothing unless polled"]
pub struct TimedTurn<'t, 'a, S: Sleeper, F, E> {
    head: TurnHead<'t, 'a, S, E>,
    /// Its timer is structurally pinned.
    race: TimedRace<S, E>,
    /// Structurally pinned, as in a `Turn`.
    attempt: F,
}

/// The race of a [`TimedTurn`]'s attempt against its limit; apart from the attempt, as a
/// [`TurnHead`] is.
struct TimedRace<S: Sleeper, E> {
    /// How a [`TimedOut`] becomes the caller's error; `None`: no limit applies.
    timed_out: Option<fn(TimedOut) -> E>,
    /// Set as the attempt starts, at the first poll after the wait.
    limit: Option<Limit>,
    started: bool,
    /// Structurally pinned; made at the attempt's first pending poll.
    timer: Timer<S>,
}

impl<S, F, T, E> Future for TimedTurn<'_, '_, S, F, E>
where
    S: Sleeper,
    F: Future<Output = Result<T, E>>,
{
    type Output = Option<Result<T, E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `attempt` and `race.timer` are structurally pinned and nothing else is:
        // through this borrow they are only polled or set in place, never moved out;
        // `TimedTurn` has no `Drop` impl and no `Unpin` impl of its own.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: see above.
        let attempt = unsafe { Pin::new_unchecked(&mut this.attempt) };
        // SAFETY: see above; `poll_timed` keeps the timer pinned.
        unsafe { this.race.poll_timed(&mut this.head, attempt, cx) }
    }
}

impl<S: Sleeper, E> TimedRace<S, E> {
    /// One poll of a [`TimedTurn`].
    ///
    /// # Safety
    ///
    /// `self` is part of a pinned `TimedTurn`: its timer is never moved out.
    unsafe fn poll_timed<T>(
        &mut self,
        turn: &mut TurnHead<'_, '_, S, E>,
        attempt: PinnedAttempt<'_, T, E>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<T, E>>> {
        if turn.driver.waiting.is_pending(cx) {
            return Poll::Pending;
        }
        if !self.started {
            self.started = true;
            self.limit = turn.driver.limit_of_attempt(self.timed_out.is_some());
        }
        let limit = match self.limit {
            // The deadline passed before the attempt: it is not made.
            Some(limit) if limit.timer.is_zero() => limit,
            limit => {
                if let Poll::Ready(decided) = turn.attempt(attempt, cx) {
                    return Poll::Ready(decided);
                }
                // SAFETY: the caller's promise: the timer stays where it is.
                let timer = unsafe { Pin::new_unchecked(&mut *self.timer) };
                match limit {
                    Some(limit) if turn.driver.fired(Some(limit), timer, cx) => limit,
                    _ => return Poll::Pending,
                }
            }
        };
        // Cut: the attempt is dropped with this future, once it is ready. A limit is only
        // set with `timed_out`.
        match (
            turn.driver.after_cut(limit, turn.plan.access()),
            self.timed_out,
        ) {
            (None, _) => Poll::Ready(None),
            (Some(cut), Some(into)) => Poll::Ready(Some(Err(into(cut)))),
            (Some(_), None) => Poll::Pending,
        }
    }
}

/// What the macro learned about a whole-body function: what decides whether an attempt
/// that failed may run again.
#[derive(Clone, Copy, Debug)]
pub enum Plan<'r, 'a> {
    /// `#[d1_retry(idempotent)]`: the user vouched that the body may run again.
    Idempotent,
    /// `#[d1_retry(read_only)]`: the body may run again as long as the dynamic SQL its
    /// attempts ran was read-only.
    ReadOnly(&'r Attempt<'a>),
}

impl Plan<'_, '_> {
    /// After a poll of a `read_only` attempt: a D1 call made within it that may have
    /// written (a nested `#[d1_retry]` function's, a `D1Retry`'s), counted since `writes`
    /// ([`scope::writes`]), is a write the next attempt would make again.
    ///
    /// It also keeps the balance of the executions that may write begun and settled
    /// within the attempt ([`InFlight`], since `marks`): one still in flight
    /// when the attempt is cut by a time limit, or dropped by it, may have run, and no
    /// count of writes saw it.
    ///
    /// An `idempotent` attempt counts as a write made, at each poll: the user vouched that
    /// the function may run again, not that an attempt around it may (a `read_only` body
    /// that calls it, or a `Retry`, runs it again with the rest of its attempt, whose
    /// reads may have chosen what it writes).
    fn after_poll(self, writes: u32, marks: InFlight) {
        if let Plan::Idempotent = self {
            scope::record_write();
        }
        if let Plan::ReadOnly(attempts) = self {
            if scope::writes() != writes {
                // Counted without a line of its own: the call that wrote logged its failure
                // if it failed, and the attempt's is withheld as `write_in_read_only`.
                attempts.dynamic_writes.fetch_add(1, Ordering::Relaxed);
            }
            attempts
                .in_flight
                .fetch_add(marks.since(), Ordering::Relaxed);
        }
    }

    /// The access of the attempt that just ran, given the dynamic SQL observed.
    pub fn access(&self) -> Access {
        match self {
            Plan::Idempotent => Access::Idempotent,
            Plan::ReadOnly(attempts)
                if attempts.dynamic_writes() == 0
                    && attempts.in_flight.load(Ordering::Relaxed) == 0 =>
            {
                Access::ReadOnly
            }
            Plan::ReadOnly(_) => Access::Unretryable,
        }
    }
}

/// Polls a whole-body attempt inside the scope that keeps the D1 calls within from
/// retrying on their own, tells `plan` of a write made within it (`Plan::after_poll`),
/// and keeps in `left` the least retryable class of the failures such calls left to it:
/// the one poll of [`Turn`] and [`TimedTurn`]. The attempt is polled through its vtable
/// ([`PinnedAttempt`]); the scope is entered and ended by [`PollInside`], out of line.
#[inline(always)]
fn poll_inside<T, E>(
    plan: Plan<'_, '_>,
    attempt: PinnedAttempt<'_, T, E>,
    left: &mut Option<FailureClass>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, E>> {
    let inside = PollInside::enter(plan);
    let poll = attempt.poll(cx);
    inside.end(plan, left);
    poll
}

/// The scope of one poll of a whole-body attempt, entered and ended out of line: inlined,
/// its thread-local updates and their guards' drops (for a poll that panics) were copied
/// into every `read_only` and `idempotent` function's state machine, about an eighth of the
/// instructions rustc spent on such a function in a release build
/// (`scripts/bench-compile-time.sh`). Two calls per poll instead; a whole-body attempt is
/// polled a few times per D1 round trip.
struct PollInside {
    /// The thread's writes before the poll, to tell a write made within it.
    writes: u32,
    marks: InFlight,
    /// Dropped in this order if the poll panics: the failures' slot, then the scope.
    leaving: Leaving,
    entered: Entered,
}

impl PollInside {
    /// Enters the scope for one poll of an attempt run under `plan`.
    #[inline(never)]
    fn enter(plan: Plan<'_, '_>) -> PollInside {
        let writes = scope::writes();
        let marks = InFlight::mark();
        let watched = match plan {
            Plan::Idempotent => None,
            Plan::ReadOnly(_) => Some(plan.access() != Access::ReadOnly),
        };
        let entered = Entered::attempt(watched);
        let leaving = Leaving::enter();
        PollInside {
            writes,
            marks,
            leaving,
            entered,
        }
    }

    /// Ends the scope after the poll: the failures left within it join `left`, and `plan`
    /// learns of a write made within it.
    #[inline(never)]
    fn end(self, plan: Plan<'_, '_>, left: &mut Option<FailureClass>) {
        let PollInside {
            writes,
            marks,
            entered,
            leaving,
        } = self;
        *left = scope::least_retryable(*left, leaving.end());
        drop(entered);
        plan.after_poll(writes, marks);
    }
}

/// The dynamic SQL a `read_only` function's attempts ran, observed as it is passed to
/// `prepare` or `exec`.
///
/// One record for all the attempts of a call, not one per attempt: an attempt that ran a
/// statement that may write is never followed by another (its access is
/// [`Unretryable`](Access::Unretryable)), so a count over all attempts decides exactly as
/// a count of the last attempt would, and the function holds one record, made once.
///
/// An atomic rather than a `Cell` so the user's future stays `Send` when it was.
#[derive(Debug)]
pub struct Attempt<'a> {
    operation: OperationName<'a>,
    dynamic_writes: AtomicU32,
    /// Executions that may write begun and not settled within the attempts (wrapping;
    /// 0 when none is in flight): see `Plan::after_poll`.
    in_flight: AtomicU32,
}

impl<'a> Attempt<'a> {
    /// A fresh record for a call of `operation`, declared `read_only`.
    pub const fn new(operation: OperationName<'a>) -> Self {
        Attempt {
            operation,
            dynamic_writes: AtomicU32::new(0),
            in_flight: AtomicU32::new(0),
        }
    }

    /// Scans dynamic SQL as it is passed to `exec`: text is judged, anything else counts as
    /// a write (and is logged: the function was declared `read_only`).
    pub fn observe(&self, sql: Option<&str>) {
        self.record(sql, sql.is_some_and(is_read_only));
    }

    /// [`observe`](Self::observe) for SQL passed to `prepare`, which D1 sends to SQLite
    /// whole (see [`is_read_only_prepared`]).
    pub fn observe_prepared(&self, sql: Option<&str>) {
        self.record(sql, sql.is_some_and(is_read_only_prepared));
    }

    /// [`observe_prepared`](Self::observe_prepared) where the statement `prepare` makes is
    /// handed to [`made_statement`](scope::made_statement): text is judged here; SQL that
    /// is not text (a generic `impl Into<String>`, a query type) leaves the statement to
    /// tell what it became. Either way the `prepare` is marked begun, which
    /// `made_statement` ends.
    pub fn observe_prepared_text(&self, sql: Option<&str>) {
        if sql.is_some() {
            self.observe_prepared(sql);
        }
        scope::prepare_begun(sql.is_none());
    }

    /// Judges SQL a `read_only` body runs but did not write out, by the access of what it
    /// holds when its execution begins: a statement made out of sight (passed in, kept in a
    /// field, returned by a helper; `statement_sql.rs`), or a `batch`'s list collected
    /// elsewhere (`batch_sql.rs`). Anything but read-only (SQL that may write, or that
    /// cannot be read) counts as a write, and the attempt is not run again.
    pub fn observe_held(&self, access: Access) {
        if access != Access::ReadOnly {
            self.record(Some(crate::log::OUT_OF_SIGHT), false);
        }
    }

    /// A statement that may write counts in the record, which decides this function's
    /// next attempt, and on the thread as a write made (`scope::wrote`), which an
    /// enclosing attempt reads: a `read_only` function that wrote and then succeeded
    /// leaves no failure behind, and an enclosing `read_only` body or `Retry` would
    /// otherwise run it, and its write, again. Counted as it is observed, before it runs,
    /// so that an enclosing attempt cut or dropped while it is in flight sees it too.
    fn record(&self, sql: Option<&str>, read_only: bool) {
        if !read_only {
            self.dynamic_writes.fetch_add(1, Ordering::Relaxed);
            scope::wrote(self.operation, sql);
        }
    }

    /// How many dynamic statements and statements made out of sight that may write the
    /// attempts ran, and nested D1 calls that may have written (`Plan::after_poll`).
    pub fn dynamic_writes(&self) -> u32 {
        self.dynamic_writes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{DbError, Waits};
    use core::cell::Cell;

    #[test]
    fn the_timer_is_made_at_the_attempts_first_pending_poll_only() {
        let waits = Waits::default();
        let policy = crate::fake::TIMEOUT_100_MS;
        let mut driver = Driver::new(&policy, &OperationName::Named("test"), &waits);
        crate::fake::timer_only_when_pending(&waits, |pending_first| {
            let attempt = crate::fake::succeeding(3, pending_first);
            match crate::fake::poll_to_end(driver.attempt(attempt)) {
                Ok(Ok(value)) => Some(value),
                _ => None,
            }
        });
    }

    /// A timed turn's timer follows the rule of every attempt's timer.
    #[test]
    fn a_timed_turn_makes_its_timer_at_the_attempts_first_pending_poll_only() {
        let waits = Waits::default();
        let policy = crate::fake::TIMEOUT_100_MS;
        let mut driver = Driver::new(&policy, &OperationName::Named("test"), &waits);
        let classify: for<'e> fn(&'e DbError) -> Failure<'e> = |error| Failure::from_error(error);
        crate::fake::timer_only_when_pending(&waits, |pending_first| {
            let attempt = crate::fake::succeeding(3, pending_first);
            let turn = driver.turn_timed(
                attempt,
                Plan::Idempotent,
                classify,
                Some(|_| DbError("cut")),
            );
            match crate::fake::poll_to_end(turn) {
                Some(Ok(value)) => Some(value),
                _ => None,
            }
        });
    }

    /// An attempt that never answers, cut at its timeout: a read is run again after the
    /// wait the turn scheduled (`None`), and its future dropped with the turn; an attempt
    /// that wrote is not, and the caller gets the timeout as its error. Without a way to
    /// hand the caller a timeout, no limit applies: the turn makes no timer and waits.
    #[test]
    fn a_timed_turn_cuts_a_hanging_attempt_and_decides_by_the_attempts_access() {
        let policy = crate::fake::TIMEOUT_100_MS;
        let classify: for<'e> fn(&'e DbError) -> Failure<'e> = |error| Failure::from_error(error);
        let into: Option<fn(TimedOut) -> DbError> = Some(|cut| {
            assert_eq!(cut.limit(), TimeLimit::Attempt);
            DbError("timed out")
        });
        let mut cx = Context::from_waker(core::task::Waker::noop());
        let dropped = Cell::new(0);
        let hanging = || {
            let guard = crate::fake::Dropped(&dropped);
            async move {
                let _guard = guard;
                core::future::pending::<Result<u32, DbError>>().await
            }
        };
        for wrote in [false, true] {
            let waits = Waits::default();
            let mut driver = Driver::new(&policy, &OperationName::Named("test"), &waits);
            let record = Attempt::new(OperationName::Named("test"));
            if wrote {
                record.observe(Some("DELETE FROM users"));
            }
            let plan = Plan::ReadOnly(&record);
            dropped.set(0);
            let mut turn = Box::pin(driver.turn_timed(hanging(), plan, classify, into));
            // The attempt is pending, and its timer too (pending once).
            assert!(turn.as_mut().poll(&mut cx).is_pending());
            assert_eq!(*waits.0.borrow(), [Duration::from_millis(100)]);
            let decided = turn.as_mut().poll(&mut cx);
            drop(turn);
            assert_eq!(
                dropped.get(),
                1,
                "wrote {wrote}: the cut attempt is dropped"
            );
            match decided {
                Poll::Ready(None) if !wrote => {
                    // The retry's wait, scheduled: the next turn waits first.
                    assert_eq!(waits.0.borrow().len(), 2);
                    let mut next = core::pin::pin!(driver.turn_timed(
                        crate::fake::succeeding(7, false),
                        plan,
                        classify,
                        into
                    ));
                    assert!(next.as_mut().poll(&mut cx).is_pending(), "the wait");
                    assert!(matches!(
                        next.as_mut().poll(&mut cx),
                        Poll::Ready(Some(Ok(7)))
                    ));
                }
                Poll::Ready(Some(Err(DbError("timed out")))) if wrote => {
                    assert_eq!(waits.0.borrow().len(), 1, "no wait");
                }
                other => panic!("wrote {wrote}: {other:?}"),
            }
        }

        let waits = Waits::default();
        let mut driver = Driver::new(&policy, &OperationName::Named("test"), &waits);
        let mut unlimited =
            core::pin::pin!(driver.turn_timed(hanging(), Plan::Idempotent, classify, None));
        for _ in 0..5 {
            assert!(unlimited.as_mut().poll(&mut cx).is_pending());
        }
        assert!(waits.0.borrow().is_empty(), "no limit, no timer");
    }

    /// The deadline has passed when an attempt is about to start: it is not made at all,
    /// and the caller gets the deadline's timeout.
    #[cfg(feature = "tokio")]
    #[tokio::test(start_paused = true)]
    async fn a_timed_turn_past_the_deadline_does_not_make_the_attempt() {
        let policy = RetryPolicy::DEFAULT
            .without_budget()
            .with_deadline(Duration::from_millis(100));
        let operation = OperationName::Named("test");
        let mut driver = Driver::new(&policy, &operation, crate::TokioSleeper);
        tokio::time::advance(Duration::from_millis(100)).await;
        let polled = Cell::new(false);
        let attempt = core::future::poll_fn(|_| {
            polled.set(true);
            Poll::Ready(Ok::<u32, DbError>(1))
        });
        let classify: for<'e> fn(&'e DbError) -> Failure<'e> = |error| Failure::from_error(error);
        let into: Option<fn(TimedOut) -> DbError> = Some(|cut| {
            assert_eq!(cut.limit(), TimeLimit::Deadline);
            DbError("deadline")
        });
        let turn = driver.turn_timed(attempt, Plan::Idempotent, classify, into);
        assert!(matches!(turn.await, Some(Err(DbError("deadline")))));
        assert!(!polled.get(), "the attempt was made past the deadline");
    }

    #[test]
    fn a_turn_makes_the_scheduled_wait_then_polls_the_attempt_inside_the_scope_and_decides() {
        use crate::fake::{DbError, LOST};
        let waits = Waits::default();
        let policy = RetryPolicy::DEFAULT.without_budget();
        let mut driver = Driver::new(&policy, &OperationName::Named("test"), &waits);
        let polled_nested = Cell::new(None);
        let attempt = |result: Result<u32, &'static str>| {
            let polled_nested = &polled_nested;
            core::future::poll_fn(move |_| {
                polled_nested.set(Some(crate::retry::scope::nested()));
                Poll::Ready(result.map_err(DbError))
            })
        };
        let classify: for<'e> fn(&'e DbError) -> Failure<'e> = |error| Failure::from_error(error);
        let record = Attempt::new(OperationName::Named("test"));
        let read = Plan::ReadOnly(&record);
        let mut cx = Context::from_waker(core::task::Waker::noop());

        // No wait scheduled: the first turn polls the attempt at once, inside the scope.
        let mut first = core::pin::pin!(driver.turn(attempt(Ok(1)), read, classify));
        assert!(matches!(
            first.as_mut().poll(&mut cx),
            Poll::Ready(Some(Ok(1)))
        ));
        assert_eq!(polled_nested.take(), Some(true));
        assert!(
            !crate::retry::scope::nested(),
            "the scope ends with the poll"
        );

        // A read that may have run: retried; the turn schedules the wait and says so.
        let mut failed = core::pin::pin!(driver.turn(attempt(Err(LOST)), read, classify));
        assert!(matches!(failed.as_mut().poll(&mut cx), Poll::Ready(None)));
        assert_eq!(polled_nested.take(), Some(true));
        assert_eq!(waits.0.borrow().len(), 1, "one wait scheduled");
        assert_eq!(driver.attempt, 2);

        // The scheduled wait comes first: the attempt is not polled until it is over.
        let mut second = core::pin::pin!(driver.turn(attempt(Ok(2)), read, classify));
        assert!(second.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polled_nested.take(), None, "not polled during the wait");
        assert!(matches!(
            second.as_mut().poll(&mut cx),
            Poll::Ready(Some(Ok(2)))
        ));
        assert_eq!(polled_nested.take(), Some(true));
        assert!(driver.waiting.is_none(), "a wait is made once");

        // The same failure after dynamic SQL that may write: handed back, no wait.
        let wrote = Attempt::new(OperationName::Named("test"));
        wrote.observe(Some("DELETE FROM users"));
        let write = Plan::ReadOnly(&wrote);
        let mut write = core::pin::pin!(driver.turn(attempt(Err(LOST)), write, classify));
        assert!(matches!(
            write.as_mut().poll(&mut cx),
            Poll::Ready(Some(Err(DbError(LOST))))
        ));
        assert_eq!(waits.0.borrow().len(), 1, "no other wait");
    }

    #[test]
    fn a_turn_whose_attempt_panics_leaves_the_scope_as_it_found_it() {
        use crate::retry::scope;
        let waits = Waits::default();
        let policy = RetryPolicy::DEFAULT.without_budget();
        let record = Attempt::new(OperationName::Named("test"));
        let classify: for<'e> fn(&'e DbError) -> Failure<'e> = |error| Failure::from_error(error);
        for plan in [Plan::Idempotent, Plan::ReadOnly(&record)] {
            let mut driver = Driver::new(&policy, &OperationName::Named("test"), &waits);
            // A failure left to the attempt, then a panic within its poll.
            let attempt = core::future::poll_fn(|_| -> Poll<Result<u32, DbError>> {
                assert!(scope::nested(), "polled inside the scope");
                scope::leave(FailureClass::Permanent);
                panic!("inside the attempt")
            });
            let turn = driver.turn(attempt, plan, classify);
            let caught = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| {
                crate::fake::poll_to_end(turn)
            }));
            assert!(caught.is_err());
            assert!(!scope::nested(), "{plan:?}: the scope ends with the panic");
            assert_eq!(
                scope::left_now(),
                None,
                "{plan:?}: the failure left within the attempt is not carried out of it"
            );
        }
    }

    #[test]
    fn a_plan_retries_an_idempotent_body_always_and_a_read_only_one_until_it_wrote() {
        assert_eq!(Plan::Idempotent.access(), Access::Idempotent);
        let record = Attempt::new(OperationName::Named("test"));
        let plan = Plan::ReadOnly(&record);
        assert_eq!(plan.access(), Access::ReadOnly);
        record.observe(Some("SELECT id FROM users WHERE id = ?1"));
        assert_eq!(
            plan.access(),
            Access::ReadOnly,
            "a read keeps the body retryable"
        );
        record.observe(Some("UPDATE users SET name = ?1"));
        assert_eq!(plan.access(), Access::Unretryable);
        record.observe(Some("SELECT 1"));
        assert_eq!(
            plan.access(),
            Access::Unretryable,
            "one record for the call: a write is never forgotten"
        );
        let unseen = Attempt::new(OperationName::Named("test"));
        unseen.observe(None);
        assert_eq!(Plan::ReadOnly(&unseen).access(), Access::Unretryable);
    }

    /// A write recorded while a `read_only` attempt is polled, through `Turn` or `TimedTurn`,
    /// in its first poll or a later one, makes the body a write; one recorded between polls
    /// is not the attempt's, and an `idempotent` body stays as declared (and counts as a
    /// write made, for an attempt around it).
    #[test]
    fn a_write_within_a_read_only_attempt_makes_it_a_write() {
        use crate::retry::scope::record_write;
        // Pending once, then ready; records a write in poll `writing` (0: none).
        let attempt = |writing: u32| {
            let mut polls = 0;
            core::future::poll_fn(move |cx| {
                polls += 1;
                if polls == writing {
                    record_write();
                }
                if polls == 1 {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                } else {
                    Poll::Ready(Ok::<u32, DbError>(1))
                }
            })
        };
        let mut cx = Context::from_waker(core::task::Waker::noop());
        let waits = Waits::default();
        let policy = RetryPolicy::DEFAULT;
        let classify: for<'e> fn(&'e DbError) -> Failure<'e> = |_| unreachable!("no failure");
        for writing in [0, 1, 2] {
            let wrote = writing != 0;
            let expected = if wrote {
                Access::Unretryable
            } else {
                Access::ReadOnly
            };
            let record = Attempt::new(OperationName::Named("test"));
            let mut driver = Driver::new(&policy, &OperationName::Named("test"), &waits);
            let mut turn =
                core::pin::pin!(driver.turn(attempt(writing), Plan::ReadOnly(&record), classify));
            assert!(turn.as_mut().poll(&mut cx).is_pending());
            record_write();
            assert!(matches!(
                turn.as_mut().poll(&mut cx),
                Poll::Ready(Some(Ok(1)))
            ));
            assert_eq!(
                Plan::ReadOnly(&record).access(),
                expected,
                "Turn, {writing}"
            );

            let record = Attempt::new(OperationName::Named("test"));
            let timed_out: Option<fn(TimedOut) -> DbError> = Some(|_| DbError("timed out"));
            let mut timed = core::pin::pin!(driver.turn_timed(
                attempt(writing),
                Plan::ReadOnly(&record),
                classify,
                timed_out
            ));
            assert!(timed.as_mut().poll(&mut cx).is_pending());
            record_write();
            assert!(matches!(
                timed.as_mut().poll(&mut cx),
                Poll::Ready(Some(Ok(1)))
            ));
            assert_eq!(
                Plan::ReadOnly(&record).access(),
                expected,
                "TimedTurn, {writing}"
            );

            let writes = crate::retry::scope::writes();
            let mut vouched =
                core::pin::pin!(driver.turn(attempt(writing), Plan::Idempotent, classify));
            assert!(vouched.as_mut().poll(&mut cx).is_pending());
            assert!(vouched.as_mut().poll(&mut cx).is_ready());
            assert_eq!(Plan::Idempotent.access(), Access::Idempotent);
            assert_ne!(
                crate::retry::scope::writes(),
                writes,
                "idempotent, {writing}"
            );
        }
    }

    /// SQL passed to `prepare` is judged whole, SQL passed to `exec` line by line: a comment
    /// over two lines keeps a body retryable only in the first.
    #[test]
    fn prepared_sql_is_observed_whole_and_exec_sql_by_line() {
        let commented = "SELECT id FROM users /* every\nuser */";
        let prepared = Attempt::new(OperationName::Named("test"));
        prepared.observe_prepared(Some(commented));
        assert_eq!(prepared.dynamic_writes(), 0);
        prepared.observe_prepared(Some("SELECT 1;\nDELETE FROM users"));
        prepared.observe_prepared(None);
        assert_eq!(prepared.dynamic_writes(), 2);

        let exec = Attempt::new(OperationName::Named("test"));
        exec.observe(Some(commented));
        assert_eq!(exec.dynamic_writes(), 1);
    }

    /// Where the statement is handed on to be observed once made, text is judged as it is
    /// handed, and SQL that is not text is left to the statement: not counted here, but
    /// marked for `made_statement`, which then observes that statement.
    #[test]
    fn prepared_sql_handed_on_leaves_what_is_not_text_to_the_statement() {
        let record = Attempt::new(OperationName::Named("test"));
        record.observe_prepared_text(Some("SELECT 1"));
        assert_eq!(record.dynamic_writes(), 0);
        assert_eq!(
            scope::made_statement("text", (), |_, ()| panic!("observed")),
            "text"
        );
        record.observe_prepared_text(Some("DELETE FROM users"));
        assert_eq!(record.dynamic_writes(), 1);
        assert_eq!(
            scope::made_statement("text", (), |_, ()| panic!("observed")),
            "text"
        );
        record.observe_prepared_text(None);
        assert_eq!(record.dynamic_writes(), 1, "left to the statement");
        let observed = core::cell::Cell::new(false);
        scope::made_statement("not text", &observed, |_, observed| observed.set(true));
        assert!(observed.get());
    }

    #[test]
    fn the_driver_counts_attempts_waits_on_the_schedule_and_gives_the_budget_back() {
        use crate::fake::{DbError, LOST};
        static TOKENS: crate::RetryTokens = crate::RetryTokens::new();
        let budget = crate::RetryBudget::new(&TOKENS).with_max_tokens(10);
        let policy = RetryPolicy::DEFAULT.with_budget(budget);
        let waits = Waits::default();
        let mut driver = Driver::new(&policy, &OperationName::Named("test"), &waits);
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
