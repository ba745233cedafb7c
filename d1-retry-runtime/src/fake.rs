//! Test doubles shared by the unit tests: an error that carries a D1 message, and a sleeper
//! that records its waits.

use core::cell::RefCell;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use crate::Sleeper;

/// An error whose `Display` is a D1 message.
#[derive(Debug)]
pub(crate) struct DbError(pub(crate) &'static str);

impl core::fmt::Display for DbError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for DbError {}

/// A maybe-executed D1 message.
pub(crate) const LOST: &str = "D1_ERROR: Network connection lost.";

/// Records each wait instead of waiting; every wait stays pending for one poll, so a test
/// sees the execution stop there.
#[derive(Default)]
pub(crate) struct Waits(pub(crate) RefCell<Vec<Duration>>);

impl Sleeper for &Waits {
    type Sleep = OncePending;
    fn sleep(&self, duration: Duration) -> OncePending {
        self.0.borrow_mut().push(duration);
        OncePending::new()
    }
}

/// Pending on its first poll, ready on the next.
pub(crate) struct OncePending(bool);

impl OncePending {
    /// Not polled yet.
    pub(crate) fn new() -> Self {
        OncePending(false)
    }
}

impl Future for OncePending {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            Poll::Pending
        }
    }
}

/// Counts its drops into the cell: an attempt that holds one shows when it is dropped.
pub(crate) struct Dropped<'a>(pub(crate) &'a core::cell::Cell<u32>);

impl Drop for Dropped<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// An attempt that holds a [`Dropped`] on `dropped`.
pub(crate) type Guarded<'a> = Pin<Box<dyn Future<Output = Result<u32, DbError>> + 'a>>;

/// Makes attempts, counted in `made`, each holding a [`Dropped`] on `dropped`: the first
/// hangs, the others succeed with 2.
pub(crate) fn hanging_first<'a>(
    made: &'a core::cell::Cell<u32>,
    dropped: &'a core::cell::Cell<u32>,
) -> impl FnMut() -> Guarded<'a> {
    move || {
        made.set(made.get() + 1);
        let first = made.get() == 1;
        Box::pin(async move {
            let _guard = Dropped(dropped);
            if first {
                core::future::pending::<()>().await;
            }
            Ok(2)
        })
    }
}

/// Drives `execution`, a read whose attempts come from [`hanging_first`] under an attempt
/// timeout of `timeout`, on tokio's paused clock: the first attempt is cut and dropped at
/// once, not kept through the wait (dropping it is what lets go of its request, a
/// `JsFuture` in a Worker), and the second, made after the wait, succeeds.
#[cfg(feature = "tokio")]
pub(crate) async fn retried_after_its_cut(
    execution: impl Future<Output = Result<u32, DbError>>,
    timeout: Duration,
    made: &core::cell::Cell<u32>,
    dropped: &core::cell::Cell<u32>,
) {
    let mut execution = core::pin::pin!(execution);
    let mut cx = Context::from_waker(core::task::Waker::noop());
    assert!(execution.as_mut().poll(&mut cx).is_pending());
    assert_eq!(
        (made.get(), dropped.get()),
        (1, 0),
        "the first attempt runs"
    );
    tokio::time::advance(timeout).await;
    assert!(execution.as_mut().poll(&mut cx).is_pending());
    assert_eq!(made.get(), 1, "still waiting before the retry");
    assert_eq!(
        dropped.get(),
        1,
        "the cut attempt was dropped before the wait"
    );
    tokio::time::advance(Duration::from_secs(3)).await;
    assert!(matches!(
        execution.as_mut().poll(&mut cx),
        Poll::Ready(Ok(2))
    ));
    assert_eq!((made.get(), dropped.get()), (2, 2));
}

/// Polls `future` with a no-op waker until it is ready; a test double's wait is pending
/// once, so a few polls are enough, and a future still pending after 20 fails the test.
pub(crate) fn poll_to_end<F: Future>(future: F) -> F::Output {
    let mut future = core::pin::pin!(future);
    let mut cx = Context::from_waker(core::task::Waker::noop());
    for _ in 0..20 {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
    panic!("a future still pending after 20 polls");
}

/// An attempt that succeeds with `value`, at once or after one pending poll.
pub(crate) async fn succeeding(value: u32, pending_first: bool) -> Result<u32, DbError> {
    if pending_first {
        OncePending::new().await;
    }
    Ok(value)
}

/// A policy whose attempts time out after 100 ms, without a budget.
pub(crate) const TIMEOUT_100_MS: crate::RetryPolicy = crate::RetryPolicy::DEFAULT
    .without_budget()
    .with_attempt_timeout(Duration::from_millis(100));

/// The rule of every attempt's timer, checked through `attempt(pending_first)`, which makes
/// one attempt of [`succeeding`]`(3, pending_first)` under [`TIMEOUT_100_MS`] with `waits`
/// as the sleeper and returns its value: an attempt ready at once makes no timer, one
/// pending once makes one (at its first pending poll).
pub(crate) fn timer_only_when_pending(waits: &Waits, mut attempt: impl FnMut(bool) -> Option<u32>) {
    assert_eq!(attempt(false), Some(3));
    assert!(waits.0.borrow().is_empty(), "ready at once: no timer");
    assert_eq!(attempt(true), Some(3));
    assert_eq!(
        *waits.0.borrow(),
        [Duration::from_millis(100)],
        "pending once: one timer"
    );
}
