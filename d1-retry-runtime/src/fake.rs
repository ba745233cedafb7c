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
