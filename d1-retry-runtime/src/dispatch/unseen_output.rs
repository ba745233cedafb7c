//! A `read_only` body's execution on a receiver whose type is not marked D1's, told by what
//! the call returned.
//!
//! The expansion judges `x.run()` by `x`'s type ([`Receiver`](super::receiver::Receiver)):
//! D1's statement, or one of the wrappers `D1Receiver` forwards (references, `Box`, `Rc`,
//! `Arc`, std's guards), is observed by the SQL it holds; any other type is taken for a
//! call of the user's own (`Iterator::all`, a job's `run`), and nothing is learned. But
//! method calls see through `Deref`: on a `Pin<Box<D1PreparedStatement>>`, a `Cow`, a
//! `LazyCell`, tokio's `MutexGuard` or a newtype of the user's that derefs to the
//! statement, `x.run()` is D1's own `run`, and its write went unseen, so the body ran
//! again after a later failure, and the write with it.
//!
//! So such a call is judged a second time, by its output: a call named like D1's
//! executions, on a receiver of an unmarked type, that returns a future of a `Result` is
//! taken for a D1 execution whose SQL cannot be read, a write, and the attempt is not run
//! again. `Iterator::all` returns a `bool` and stays a call of the user's; a method of the
//! user's named `run` that returns a future of a `Result` costs the body its retries, the
//! conservative side.
//!
//! The receiver's judgement is made inside the call's expression, where the expansion
//! cannot keep what it learned without changing how long the call's temporaries live; so
//! the unmarked receivers are counted on the thread ([`note_unseen`]), and the output is
//! judged when the count grew between the [`mark`](unseen_mark) taken before the call and
//! its end. A count that grew for another call in between (one nested in the receiver or
//! the arguments) makes the outer call's output judged too: conservative as well.

use core::future::IntoFuture;
use core::marker::PhantomData;
use std::cell::Cell;

use crate::retry::decide::Access;

std::thread_local! {
    /// Executions on receivers of unmarked types, made on this thread; wraps, as only
    /// differences are read.
    static UNSEEN: Cell<u32> = const { Cell::new(0) };
}

/// Counts an execution on a receiver of an unmarked type.
pub(crate) fn note_unseen() {
    UNSEEN.with(|unseen| unseen.set(unseen.get().wrapping_add(1)));
}

/// The count before a call whose output may have to be judged: see the module.
#[derive(Clone, Copy, Debug)]
#[must_use]
pub struct UnseenMark(u32);

/// Takes an [`UnseenMark`] before an execution is evaluated.
#[inline]
pub fn unseen_mark() -> UnseenMark {
    UnseenMark(UNSEEN.with(Cell::get))
}

/// The output of an execution, handed on as it is; `judge` is called with it when the
/// execution's receiver was of an unmarked type (the count grew since `mark`). `judge` is
/// the expansion's closure, which probes the output's type ([`Output`]) where its type is
/// known and tells the attempt.
#[inline]
pub fn unseen_output<F>(mark: UnseenMark, output: F, judge: impl FnOnce(&F)) -> F {
    if UNSEEN.with(Cell::get) != mark.0 {
        judge(&output);
    }
    output
}

/// The output of an execution, probed by its type alone:
/// `(&&Output::of(&output)).d1_retry_output()`.
pub struct Output<'a, F>(PhantomData<&'a F>);

impl<'a, F> Output<'a, F> {
    /// The probe for `output`'s type.
    #[inline(always)]
    pub fn of(_output: &'a F) -> Self {
        Output(PhantomData)
    }
}

/// The probe's choice for a future of a `Result`: what a D1 execution returns.
///
/// The probe needs the output's type where the call is made: a method of the user's whose
/// result type is inferred only later is taken for this choice, and fails to compile
/// (``Vec<i64>` is not a future``) until its type is written there.
pub trait ViaResultFuture {
    /// [`Access::Unseen`]: a D1 execution whose SQL cannot be read, a write.
    fn d1_retry_output(&self) -> Access;
}

impl<F, T, E> ViaResultFuture for &Output<'_, F>
where
    F: IntoFuture<Output = Result<T, E>>,
{
    #[inline(always)]
    fn d1_retry_output(&self) -> Access {
        Access::Unseen
    }
}

/// The probe's fallback: anything else, a call of the user's own.
pub trait ViaOtherOutput {
    /// [`Access::ReadOnly`]: nothing for the attempt to learn.
    fn d1_retry_output(&self) -> Access;
}

impl<F> ViaOtherOutput for Output<'_, F> {
    #[inline(always)]
    fn d1_retry_output(&self) -> Access {
        Access::ReadOnly
    }
}

#[cfg(test)]
// The probe is autoref specialization: the borrows pick the impl.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;

    fn judged<F>(output: F, note: bool, judge: impl FnOnce(&F) -> Access) -> Option<Access> {
        let mark = unseen_mark();
        if note {
            note_unseen();
        }
        let mut seen = None;
        unseen_output(mark, output, |output| seen = Some(judge(output)));
        seen
    }

    #[test]
    fn only_an_unmarked_receiver_s_output_is_judged_and_only_a_result_future_counts() {
        let future = || async { Ok::<u8, ()>(1) };
        assert_eq!(
            judged(future(), true, |o| (&&Output::of(o)).d1_retry_output()),
            Some(Access::Unseen)
        );
        assert_eq!(
            judged(true, true, |o| (&&Output::of(o)).d1_retry_output()),
            Some(Access::ReadOnly),
            "a bool (Iterator::all) is the user's"
        );
        assert_eq!(
            judged(async { 1 }, true, |o| (&&Output::of(o)).d1_retry_output()),
            Some(Access::ReadOnly),
            "a future of something else is the user's"
        );
        assert_eq!(
            judged(future(), false, |o| (&&Output::of(o)).d1_retry_output()),
            None,
            "a marked receiver was judged by its SQL"
        );
    }
}
