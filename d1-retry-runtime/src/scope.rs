//! Whether code runs inside an attempt that will be retried as a whole.
//!
//! `#[d1_retry(read_only)]`, `#[d1_retry(idempotent)]` and [`Retry`](crate::Retry) run
//! their attempt again after a failure. A D1 call made inside such an attempt (by a nested
//! `#[d1_retry]` function, an execution, or `D1Retry`) must not retry on its own too, or
//! the attempts multiply (5 outer × 5 inner = 25 D1 calls for one logical call). The outer
//! attempt is entered for each poll, the way `tracing`'s `Instrumented` enters its span:
//! a thread-local depth, raised while the attempt's future is polled. It needs no `Send`
//! bound, works on wasm32 and across the threads of tokio's scheduler (a task is polled on
//! one thread at a time), and costs one thread-local increment per poll.
//!
//! What escapes: a task spawned from the attempt, or a stream or future returned from it
//! and polled later, is polled outside the scope and retries on its own.

use core::future::Future;
use std::cell::Cell;

std::thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether the current poll is inside an attempt that is retried as a whole.
#[must_use]
pub fn nested() -> bool {
    DEPTH.with(Cell::get) > 0
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

/// A pinned attempt polled inside the scope: what the whole-body expansion awaits. A plain
/// struct rather than an `async fn`, so that each annotated function adds no state machine
/// for it.
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct Scoped<'a, F> {
    attempt: core::pin::Pin<&'a mut F>,
}

impl<'a, F: Future> Scoped<'a, F> {
    /// Polls `attempt` inside the scope.
    pub fn new(attempt: core::pin::Pin<&'a mut F>) -> Self {
        Scoped { attempt }
    }
}

impl<F: Future> Future for Scoped<'_, F> {
    type Output = F::Output;

    fn poll(
        self: core::pin::Pin<&mut Self>,
        cx: &mut core::task::Context<'_>,
    ) -> core::task::Poll<F::Output> {
        let _inside = Inside::enter();
        self.get_mut().attempt.as_mut().poll(cx)
    }
}

/// The depth raised while it lives, lowered again when it drops (even if the poll
/// panics). A guard rather than a function taking the poll as a closure, so that the
/// thread-local access is compiled once, not once per annotated function.
pub(crate) struct Inside;

impl Inside {
    /// Raises the depth until the guard drops.
    pub(crate) fn enter() -> Inside {
        DEPTH.with(|depth| depth.set(depth.get().saturating_add(1)));
        Inside
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::task::{Context, Poll, Waker};

    fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
        let mut future = core::pin::pin!(future);
        future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
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
    fn a_pinned_attempt_is_polled_inside_the_scope() {
        let mut attempt = core::pin::pin!(async { nested() });
        assert_eq!(poll_once(Scoped::new(attempt.as_mut())), Poll::Ready(true));
        assert!(!nested());
    }

    #[test]
    fn a_panicking_poll_leaves_the_scope() {
        let caught = std::panic::catch_unwind(|| {
            let _ = poll_once(scoped(async { panic!("inside") }));
        });
        assert!(caught.is_err());
        assert!(!nested());
    }
}
