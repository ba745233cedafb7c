//! Whether code runs inside an attempt that will be retried as a whole.
//!
//! `#[d1_retry(read_only)]`, `#[d1_retry(idempotent)]` and [`Retry`](crate::Retry) run
//! their attempt again after a failure. A D1 call made inside such an attempt (by a nested
//! `#[d1_retry]` function, an execution, or `D1Retry`) must not retry on its own too, or
//! the attempts multiply (5 outer × 5 inner = 25 D1 calls for one logical call). The outer
//! attempt is entered for each poll, the way `tracing`'s `Instrumented` enters its span:
//! a thread-local, set while the attempt's future is polled. It needs no `Send` bound,
//! works on wasm32 and across the threads of tokio's scheduler (a task is polled on one
//! thread at a time), and costs a thread-local write per poll.
//!
//! What escapes: a task spawned from the attempt, or a stream or future returned from it
//! and polled later, is polled outside the scope and retries on its own.
//!
//! A `Retry` whose attempt may write reruns it only after a failure that did not reach
//! D1, and never once a D1 call in it may have written, since running the attempt again
//! would make that call again. So such an attempt is [`Watched`]: each D1 call d1-retry
//! makes counts itself when it may have written ([`record_write`]), in a thread-local
//! count that only grows, and the attempt reads how much the count grew while it was
//! polled, which is its own doing, since a poll runs nothing else on its thread. Once it
//! grew, the `Retry` will not run the attempt again, so the calls after it in the attempt
//! retry on their own, as they would outside it. A `read_only` body's attempt, and a
//! `Retry` declared read-only, are watched the same way: once a D1 call in them may have
//! written, they are not run again. Only `idempotent` attempts, which run again whatever
//! they did, are not watched; they count as a write made in the attempt around them.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::cell::Cell;

use crate::FailureClass;
use crate::log;
use crate::read_only::{is_read_only, is_read_only_prepared};
use crate::retry::decide::Access;
use crate::retry::operation::OperationName;

/// The attempts being polled on this thread, as far as the D1 calls inside need to know.
#[derive(Clone, Copy)]
struct Scopes {
    /// Attempts being polled that run again after any failure they may retry, whatever
    /// they did: `idempotent` bodies, and `Retry`s declared idempotent.
    whole: u32,
    /// The innermost [`Watched`] attempt being polled: `writes` when its poll began, and
    /// whether it wrote in an earlier poll.
    watched: Option<(u32, bool)>,
    /// D1 calls made on this thread that may have written; wraps, as only differences
    /// are read.
    writes: u32,
    /// Executions that may write begun on this thread, and those of them settled (they
    /// succeeded, or gave up): an attempt cut by a time limit, or that dropped one in
    /// flight (`try_join!`, `select!`), may have left a write running that no count of
    /// [`writes`](Self::writes) saw. Both wrap; only differences are read.
    begun: u32,
    settled: u32,
    /// The least retryable class of the failures D1 calls left to the attempt around them
    /// ([`leave`]) while that attempt is polled: the attempt's own error may not say
    /// (`.map_err(|_| AppError::Database)?`). Each poll of a whole-body attempt reads it
    /// through a [`Leaving`] guard.
    left: Option<FailureClass>,
}

std::thread_local! {
    static SCOPES: Cell<Scopes> = const {
        Cell::new(Scopes {
            whole: 0,
            watched: None,
            writes: 0,
            begun: 0,
            settled: 0,
            left: None,
        })
    };
}

fn update(change: impl FnOnce(Scopes) -> Scopes) -> Scopes {
    SCOPES.with(|scopes| {
        let now = scopes.get();
        scopes.set(change(now));
        now
    })
}

/// Whether the current poll is inside an attempt that will run it again after a failure
/// it retries: a D1 call made now leaves that failure to the attempt.
///
/// A watched attempt in which a write was made will not run again; an attempt declared
/// read-only or idempotent enclosing it still would.
#[must_use]
pub fn nested() -> bool {
    let scopes = SCOPES.with(Cell::get);
    scopes.whole > 0
        || scopes
            .watched
            .is_some_and(|(since, wrote)| !wrote && scopes.writes == since)
}

/// Runs `attempt` as an attempt that is retried as a whole: D1 calls inside it do not
/// retry on their own.
pub async fn scoped<F: Future>(attempt: F) -> F::Output {
    let mut attempt = core::pin::pin!(attempt);
    core::future::poll_fn(|cx| {
        let _inside = Inside::enter();
        attempt.as_mut().poll(cx)
    })
    .await
}

/// Counts an execution of `access` as it begins, if it may write ([`settle_write`] when
/// it ends).
pub(crate) fn begin_write(access: Access) {
    if access.may_write() {
        update(|scopes| Scopes {
            begun: scopes.begun.wrapping_add(1),
            ..scopes
        });
    }
}

/// Counts an execution of `access` as it ends, if it may write: it succeeded (and counted
/// its write), or gave up (and counted it if it may have run).
pub(crate) fn settle_write(access: Access) {
    if access.may_write() {
        update(|scopes| Scopes {
            settled: scopes.settled.wrapping_add(1),
            ..scopes
        });
    }
}

/// An execution goes on with another statement than it began on (`follow.rs`): it is
/// counted in flight as the statement it runs now.
pub(crate) fn switch_write(from: Access, to: Access) {
    settle_write(from);
    begin_write(to);
}

/// The executions that may write begun and settled on this thread when it was taken: an
/// attempt takes one before each poll, and learns after it how many of its own executions
/// the poll left in flight ([`since`](Self::since)).
#[derive(Clone, Copy)]
pub(crate) struct InFlight {
    begun: u32,
    settled: u32,
}

impl InFlight {
    pub(crate) fn mark() -> InFlight {
        let scopes = SCOPES.with(Cell::get);
        InFlight {
            begun: scopes.begun,
            settled: scopes.settled,
        }
    }

    /// Executions begun since the mark less those settled since (wrapping: a poll may
    /// settle one an earlier poll began).
    pub(crate) fn since(self) -> u32 {
        let now = InFlight::mark();
        now.begun
            .wrapping_sub(self.begun)
            .wrapping_sub(now.settled.wrapping_sub(self.settled))
    }
}

/// Counts a D1 call that may have written: one that completed, or failed in a way that
/// may have run it, whose SQL may write. Called inside a scope or not (outside, nothing
/// reads it), so that the call needs no second thread-local read to ask.
pub(crate) fn record_write() {
    update(|scopes| Scopes {
        writes: scopes.writes.wrapping_add(1),
        ..scopes
    });
}

/// A D1 call a `#[d1_retry]` function left as written (a future that must have one type
/// with another site's, one returned), of `access`: made once, not retried, and unless it
/// reads, a write that an attempt around the function must not make again. Counted as the
/// future is made, before it runs: once made, it may run.
pub fn left_as_written(access: Access) {
    if access != Access::ReadOnly {
        record_write();
    }
}

/// A statement a `read_only` body ran where it could not borrow its attempt's record (an
/// `async` block, a closure), judged by the SQL it holds (`access`): unless it reads, it
/// counts as a write made (`record_write`), which the attempt polling it reads as a nested
/// call's write, and is logged as the record logs it, under `operation`, the function's
/// name. Counted before it runs, as the record counts dynamic SQL: once made, it may have
/// written.
pub fn record_held(access: Access, operation: OperationName<'_>) {
    if access != Access::ReadOnly {
        wrote(operation, Some(log::OUT_OF_SIGHT));
    }
}

/// Dynamic SQL a `read_only` body hands to `exec` where it could not borrow its attempt's
/// record (as for [`record_held`]): unless it is read-only text, it counts as a write made,
/// judged and logged as the attempt's own record
/// ([`Attempt::observe`](crate::retry::driver::Attempt::observe)) does.
pub fn record_sql(sql: Option<&str>, operation: OperationName<'_>) {
    if !sql.is_some_and(is_read_only) {
        wrote(operation, sql);
    }
}

/// [`record_sql`] for SQL handed to `prepare`, which D1 sends to SQLite whole.
pub fn record_sql_prepared(sql: Option<&str>, operation: OperationName<'_>) {
    if !sql.is_some_and(is_read_only_prepared) {
        wrote(operation, sql);
    }
}

/// [`record_sql_prepared`] where the statement `prepare` makes is handed to the site's
/// [`made_statement`] (see
/// [`Attempt::observe_prepared_text`](crate::retry::driver::Attempt::observe_prepared_text)).
pub fn record_sql_prepared_text(sql: Option<&str>, operation: OperationName<'_>) {
    if sql.is_some() {
        record_sql_prepared(sql, operation);
    }
    prepare_begun(sql.is_none());
}

std::thread_local! {
    /// For each `read_only` body's `prepare` of dynamic SQL begun on this thread and not yet
    /// handed to [`made_statement`], whether its SQL was not text: a stack, since the
    /// conversion a `prepare` makes of such SQL is the user's code, which may prepare
    /// another statement in between (a query type rendered by a closure of the body). Bit
    /// 0 is the innermost; the depth is how many are pending.
    static PENDING: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
}

/// How many pending `prepare`s the stack holds bits for; past it, every statement is
/// observed until the stack is empty again.
const DEPTH: u32 = u64::BITS;

/// A `prepare` of dynamic SQL begins; `not_text` if that SQL could not be read. Out of
/// line, as [`prepare_ended`] is: called at every such site.
#[inline(never)]
pub(crate) fn prepare_begun(not_text: bool) {
    PENDING.with(|pending| {
        let (bits, depth) = pending.get();
        pending.set(((bits << 1) | u64::from(not_text), depth.saturating_add(1)));
    });
}

/// The statement a `read_only` body's `prepare` of dynamic SQL made, on its way to the
/// body: where that SQL was not text, `observe` judges the statement by the SQL it holds
/// (`Retrying::observe_made`), since the argument could not be read, and tells `by` (the
/// attempt's record, or the function's name where the record cannot be borrowed).
///
/// `observe` is a `fn` pointer, not a generic closure, so that this is one function per
/// statement type and `by`'s type, not one per `prepare` of the body.
#[inline]
pub fn made_statement<S, B>(statement: S, by: B, observe: fn(&S, B)) -> S {
    if prepare_ended() {
        observe(&statement, by);
    }
    statement
}

/// The innermost pending `prepare` made its statement: whether that statement must be
/// observed ([`made_statement`]). Where the stack cannot tell (none pending, or deeper than
/// its bits), it must: observing a statement whose text was judged already judges it
/// again, by its own text.
#[inline(never)]
fn prepare_ended() -> bool {
    PENDING.with(|pending| {
        let (bits, depth) = pending.get();
        pending.set((bits >> 1, depth.saturating_sub(1)));
        depth == 0 || depth > DEPTH || bits & 1 == 1
    })
}

/// A write a `read_only` body made, logged under `operation` and counted on the thread.
/// Out of line: the three callers above are inlined into each site.
#[inline(never)]
pub(crate) fn wrote(operation: OperationName<'_>, sql: Option<&str>) {
    log::write_in_read_only(operation, sql);
    record_write();
}

/// A [`Retry`](crate::Retry)'s attempt, polled inside the scope and, when it may write,
/// watched for D1 calls that may have written ([`record_write`]). Awaited by `&mut`, so
/// that the `Retry` can ask [`wrote`](Self::wrote) once the attempt is over.
#[must_use = "futures do nothing unless polled"]
pub(crate) struct Watched<'a, F> {
    attempt: Pin<&'a mut F>,
    /// Whether the attempt is watched: else it runs again whatever it did (declared
    /// idempotent), and is entered as an `idempotent` body's attempt is.
    watch: bool,
    wrote: bool,
    /// Executions that may write begun and not settled within the attempt (wrapping): one
    /// dropped in flight (a `try_join!` whose other branch failed) may have run.
    in_flight: u32,
    /// The failures D1 calls within the attempt left to it ([`leave`]).
    left: Option<FailureClass>,
}

impl<'a, F: Future> Watched<'a, F> {
    /// Polls `attempt` inside the scope, watched when `watch`: the attempt is not run
    /// again once it may have written.
    pub(crate) fn new(attempt: Pin<&'a mut F>, watch: bool) -> Self {
        Watched {
            attempt,
            watch,
            wrote: false,
            in_flight: 0,
            left: None,
        }
    }
}

impl<F> Watched<'_, F> {
    /// Whether a D1 call made in the attempt may have written, or an execution that may
    /// write was left in flight by it.
    pub(crate) fn wrote(&self) -> bool {
        self.wrote || self.in_flight != 0
    }

    /// The least retryable class of the failures D1 calls within the attempt left to it.
    pub(crate) fn left(&self) -> Option<FailureClass> {
        self.left
    }
}

impl<F: Future> Future for Watched<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let marks = InFlight::mark();
        let before = writes();
        let poll = {
            let _entered = Entered::attempt(this.watch.then_some(this.wrote));
            let leaving = Leaving::enter();
            let poll = this.attempt.as_mut().poll(cx);
            this.left = least_retryable(this.left, leaving.end());
            poll
        };
        this.wrote |= writes() != before;
        this.in_flight = this.in_flight.wrapping_add(marks.since());
        poll
    }
}

/// An attempt entered for one poll (a whole body's, a `Retry`'s): an `idempotent` one as an
/// attempt that runs again whatever it did ([`Inside`]); any other watched, since it is
/// not run again once a D1 call in it may have written (`wrote`: it did so in an earlier
/// poll), so that the calls after such a write retry on their own, as they would outside
/// it (a nested `idempotent` function among them).
pub(crate) enum Entered {
    Whole(#[allow(dead_code)] Inside),
    Watched(#[allow(dead_code)] Watching),
}

impl Entered {
    /// `watched`: `Some(wrote)` for a `read_only` attempt, `None` for an `idempotent` one.
    pub(crate) fn attempt(watched: Option<bool>) -> Entered {
        match watched {
            None => Entered::Whole(Inside::enter()),
            Some(wrote) => Entered::Watched(Watching::enter(wrote)),
        }
    }
}

/// The innermost watched attempt set while it lives, the one it enclosed set back when it
/// drops (even if the poll panics).
pub(crate) struct Watching {
    outer: Option<(u32, bool)>,
}

impl Watching {
    fn enter(wrote: bool) -> Watching {
        let outer = update(|scopes| Scopes {
            watched: Some((scopes.writes, wrote)),
            ..scopes
        });
        Watching {
            outer: outer.watched,
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let outer = self.outer;
        update(|scopes| Scopes {
            watched: outer,
            ..scopes
        });
    }
}

/// The writes recorded so far on this thread ([`record_write`]): a whole-body attempt
/// compares the count before and after each poll to learn whether a D1 call made within
/// it may have written, which a `read_only` function's next attempt would make again.
pub(crate) fn writes() -> u32 {
    SCOPES.with(Cell::get).writes
}

/// One more whole attempt counted while it lives, one less when it drops (even if the
/// poll panics). A guard rather than a function taking the poll as a closure, so that the
/// thread-local access is compiled once, not once per annotated function.
pub(crate) struct Inside;

impl Inside {
    /// Counts a whole attempt until the guard drops.
    pub(crate) fn enter() -> Inside {
        update(|scopes| Scopes {
            whole: scopes.whole.saturating_add(1),
            ..scopes
        });
        Inside
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        update(|scopes| Scopes {
            whole: scopes.whole.saturating_sub(1),
            ..scopes
        });
    }
}

/// A D1 call failed inside an attempt that decides for it ([`nested`]): `class` is what
/// the failure may have done, for that attempt to read if its own error does not say.
pub(crate) fn leave(class: FailureClass) {
    update(|scopes| Scopes {
        left: least_retryable(scopes.left, Some(class)),
        ..scopes
    });
}

/// The failures left to the attempt being polled, as [`Leaving::end`] would read them.
#[cfg(test)]
pub(crate) fn left_now() -> Option<FailureClass> {
    SCOPES.with(Cell::get).left
}

/// Of two failures left to one attempt, the one whose class allows the fewest retries:
/// which of them the attempt's error stands for cannot be told (one may have been
/// swallowed, `join!` may have returned either), so the least retryable decides, as it
/// does among the links of an error's chain.
pub(crate) fn least_retryable(
    a: Option<FailureClass>,
    b: Option<FailureClass>,
) -> Option<FailureClass> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.retryability() < a.retryability() {
            b
        } else {
            a
        }),
        (one, other) => one.or(other),
    }
}

/// The failures left ([`leave`]) during one poll of a whole-body attempt, kept apart from
/// those of the attempt around it: entering clears the slot, [`end`](Self::end) reads it
/// and both, or a drop in a panic, set back the enclosing attempt's.
pub(crate) struct Leaving {
    outer: Option<FailureClass>,
}

impl Leaving {
    pub(crate) fn enter() -> Leaving {
        let outer = update(|scopes| Scopes {
            left: None,
            ..scopes
        });
        Leaving { outer: outer.left }
    }

    /// The least retryable class of the failures left during the poll, if one was.
    pub(crate) fn end(self) -> Option<FailureClass> {
        SCOPES.with(Cell::get).left
    }
}

impl Drop for Leaving {
    fn drop(&mut self) {
        let outer = self.outer;
        update(|scopes| Scopes {
            left: outer,
            ..scopes
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The function whose SQL is logged when it writes.
    const NAME: OperationName<'static> = OperationName::Named("users.find");
    use core::task::Waker;

    fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
        let mut future = core::pin::pin!(future);
        future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
    }

    /// Dynamic SQL judged where the attempt's record cannot be borrowed: anything but
    /// read-only text counts one write on the thread, `exec`'s by line, `prepare`'s whole.
    #[test]
    fn dynamic_sql_out_of_the_record_s_reach_counts_its_writes() {
        let counted = |record: &dyn Fn()| {
            let before = writes();
            record();
            writes().wrapping_sub(before)
        };
        assert_eq!(counted(&|| record_sql(Some("SELECT 1"), NAME)), 0);
        assert_eq!(counted(&|| record_sql(Some("DELETE FROM t"), NAME)), 1);
        assert_eq!(counted(&|| record_sql(None, NAME)), 1);
        assert_eq!(counted(&|| record_sql_prepared(Some("SELECT 1"), NAME)), 0);
        assert_eq!(counted(&|| record_sql_prepared(Some("VACUUM"), NAME)), 1);
        assert_eq!(counted(&|| record_sql_prepared(None, NAME)), 1);
        // A string over two lines: one text to `prepare`, two lines to `exec`.
        let two_lines = "SELECT 'a\nb'";
        assert_eq!(counted(&|| record_sql_prepared(Some(two_lines), NAME)), 0);
        assert_eq!(counted(&|| record_sql(Some(two_lines), NAME)), 1);
    }

    #[test]
    fn the_scope_is_entered_for_each_poll_only() {
        assert!(!nested());
        let inside = poll_once(scoped(async { nested() }));
        assert_eq!(inside, Poll::Ready(true));
        assert!(!nested());
        let twice = poll_once(scoped(scoped(async { nested() })));
        assert_eq!(twice, Poll::Ready(true));
        assert!(!nested());
    }

    #[test]
    // The attempt returns a future on purpose: one that escapes the scope.
    #[allow(clippy::async_yields_async)]
    fn a_future_created_inside_and_polled_outside_escapes() {
        let escaped = match poll_once(scoped(async { async { nested() } })) {
            Poll::Ready(future) => future,
            Poll::Pending => panic!("the attempt should be ready"),
        };
        assert_eq!(poll_once(escaped), Poll::Ready(false));
    }

    #[test]
    fn a_watched_attempt_sees_the_writes_made_while_it_is_polled_only() {
        let mut quiet = core::pin::pin!(async { nested() });
        let mut watched = Watched::new(quiet.as_mut(), true);
        assert_eq!(poll_once(&mut watched), Poll::Ready(true));
        assert!(!watched.wrote());

        // A write outside the watched poll is not the attempt's.
        record_write();
        let mut writing = core::pin::pin!(async { record_write() });
        let mut watched = Watched::new(writing.as_mut(), true);
        record_write();
        assert_eq!(poll_once(&mut watched), Poll::Ready(()));
        assert!(watched.wrote());
        assert!(!nested());
    }

    #[test]
    fn a_write_in_either_of_two_polls_is_the_attempts() {
        for writing_poll in [1, 2] {
            let mut polls = 0;
            let mut attempt = core::pin::pin!(core::future::poll_fn(|cx| {
                polls += 1;
                if polls == writing_poll {
                    record_write();
                }
                if polls == 1 {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                // The calls after a write retry on their own, whichever poll wrote.
                Poll::Ready(nested())
            }));
            let mut watched = Watched::new(attempt.as_mut(), true);
            assert_eq!(poll_once(&mut watched), Poll::Pending);
            assert_eq!(watched.wrote(), writing_poll == 1);
            assert_eq!(poll_once(&mut watched), Poll::Ready(false));
            assert!(watched.wrote(), "written in poll {writing_poll}");
        }
    }

    /// Whether a D1 call would leave its failure to the attempt, before and after a write.
    async fn nested_around_a_write() -> (bool, bool) {
        let before = nested();
        record_write();
        (before, nested())
    }

    #[test]
    fn calls_after_a_write_in_a_watched_attempt_retry_on_their_own() {
        let mut attempt = core::pin::pin!(nested_around_a_write());
        let watched = Watched::new(attempt.as_mut(), true);
        assert_eq!(poll_once(watched), Poll::Ready((true, false)));
        assert!(!nested());
    }

    #[test]
    fn of_two_failures_left_the_least_retryable_stands_in_either_order() {
        use FailureClass::{MaybeExecuted, NotExecuted, Permanent};
        for (a, b, least) in [
            (NotExecuted, Permanent, Permanent),
            (Permanent, NotExecuted, Permanent),
            (NotExecuted, MaybeExecuted, MaybeExecuted),
            (MaybeExecuted, NotExecuted, MaybeExecuted),
            (MaybeExecuted, Permanent, Permanent),
            (NotExecuted, NotExecuted, NotExecuted),
        ] {
            assert_eq!(least_retryable(Some(a), Some(b)), Some(least), "{a} {b}");
            assert_eq!(least_retryable(Some(a), None), Some(a));
            assert_eq!(least_retryable(None, Some(b)), Some(b));
        }
        assert_eq!(least_retryable(None, None), None);
    }

    #[test]
    fn a_retry_s_attempt_keeps_the_failures_left_across_its_polls() {
        let mut yielded = false;
        let mut attempt = core::pin::pin!(async {
            leave(FailureClass::NotExecuted);
            core::future::poll_fn(|_| {
                if core::mem::replace(&mut yielded, true) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            leave(FailureClass::MaybeExecuted);
        });
        let mut watched = Watched::new(attempt.as_mut(), true);
        let waker = core::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(Pin::new(&mut watched).poll(&mut cx).is_pending());
        assert_eq!(watched.left(), Some(FailureClass::NotExecuted));
        assert!(Pin::new(&mut watched).poll(&mut cx).is_ready());
        assert_eq!(watched.left(), Some(FailureClass::MaybeExecuted));
        assert_eq!(
            SCOPES.with(Cell::get).left,
            None,
            "set back outside the attempt"
        );
    }

    #[test]
    fn each_attempt_reads_the_failures_left_in_its_own_polls() {
        let left = || SCOPES.with(Cell::get).left;
        leave(FailureClass::NotExecuted);
        let outer = Leaving::enter();
        assert_eq!(left(), None, "entering clears the slot");
        leave(FailureClass::MaybeExecuted);
        let inner = Leaving::enter();
        leave(FailureClass::Permanent);
        leave(FailureClass::NotExecuted);
        assert_eq!(
            inner.end(),
            Some(FailureClass::Permanent),
            "the least retryable"
        );
        assert_eq!(
            left(),
            Some(FailureClass::MaybeExecuted),
            "the outer's, set back"
        );
        assert_eq!(outer.end(), Some(FailureClass::MaybeExecuted));
        assert_eq!(left(), Some(FailureClass::NotExecuted));
        let quiet = Leaving::enter();
        assert_eq!(quiet.end(), None);
        update(|scopes| Scopes {
            left: None,
            ..scopes
        });
    }

    #[test]
    fn an_attempt_that_runs_again_whatever_it_did_keeps_its_calls_nested() {
        // A `Retry` declared read-only or idempotent.
        let mut attempt = core::pin::pin!(nested_around_a_write());
        let vouched = Watched::new(attempt.as_mut(), false);
        assert_eq!(poll_once(vouched), Poll::Ready((true, true)));
        // A watched attempt inside a whole-body one, which would still run it again.
        let mut attempt = core::pin::pin!(nested_around_a_write());
        let inner = Watched::new(attempt.as_mut(), true);
        assert_eq!(poll_once(scoped(inner)), Poll::Ready((true, true)));
        assert!(!nested());
    }

    #[test]
    fn an_attempt_watched_inside_one_that_wrote_decides_until_it_writes() {
        let mut outer = core::pin::pin!(async {
            record_write();
            let after_outer_write = nested();
            let mut inner = core::pin::pin!(nested_around_a_write());
            let inner = Watched::new(inner.as_mut(), true).await;
            (after_outer_write, inner, nested())
        });
        let outer = Watched::new(outer.as_mut(), true);
        assert_eq!(poll_once(outer), Poll::Ready((false, (true, false), false)));
        assert!(!nested());
    }

    #[test]
    fn a_panicking_poll_leaves_the_scope() {
        let caught = std::panic::catch_unwind(|| {
            let _ = poll_once(scoped(async { panic!("inside") }));
        });
        assert!(caught.is_err());
        assert!(!nested());
        let caught = std::panic::catch_unwind(|| {
            let mut attempt = core::pin::pin!(async { panic!("inside") });
            let _: Poll<()> = poll_once(Watched::new(attempt.as_mut(), true));
        });
        assert!(caught.is_err());
        assert!(!nested());
    }

    /// A statement made of SQL that is not text is observed once, when it is made; one made
    /// of text is not (its SQL was judged as it was handed).
    #[test]
    fn a_statement_made_of_sql_that_is_not_text_is_observed_once() {
        record_sql_prepared_text(Some("SELECT 1"), OperationName::Named("f"));
        assert!(!prepare_ended(), "text: judged as it was handed");
        record_sql_prepared_text(None, OperationName::Named("f"));
        assert!(prepare_ended(), "not text: observed");
        // A `prepare` begun inside another's conversion (a query type rendered by a
        // closure that prepares a text) ends first and takes its own mark, not the outer
        // one's (which a single flag lost: the outer write went unobserved).
        record_sql_prepared_text(None, OperationName::Named("f"));
        record_sql_prepared_text(Some("SELECT 1"), OperationName::Named("f"));
        assert!(!prepare_ended(), "the inner text");
        assert!(prepare_ended(), "the outer SQL that is not text");
        // None pending: the statement is observed rather than trusted.
        assert!(prepare_ended());
    }

    /// Past the stack's bits, every statement is observed until it is empty again.
    #[test]
    fn a_stack_deeper_than_its_bits_observes_every_statement() {
        for _ in 0..DEPTH + 2 {
            prepare_begun(false);
        }
        let observed = (0..DEPTH + 2).filter(|_| prepare_ended()).count();
        assert_eq!(observed, 2, "the two past the bits");
        prepare_begun(false);
        assert!(!prepare_ended(), "empty again: text is trusted");
    }
}
