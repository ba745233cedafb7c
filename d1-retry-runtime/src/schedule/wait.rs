//! The sleeps the retry loops hold across polls: the wait between a failed attempt and
//! the next ([`Wait`]), and an attempt's time-limit timer ([`Timer`]), each a [`Held`].
//!
//! Both drop out of line. Every retried call's future holds them, and dropping a
//! sleeper's future where it stands (tokio's timer entry and its handle, a Worker's
//! timeout) would put that code into every annotated function, for rustc and LLVM to
//! compile again (in the release build of `scripts/bench-compile-time.sh`, about a fifth of
//! what an annotated read added); when nothing is held, as after every call that
//! succeeded at once, the drop is one comparison.

use core::future::Future;
use core::mem::ManuallyDrop;
use core::ops::{Deref, DerefMut};
use core::pin::Pin;
use core::task::Context;

use crate::Sleeper;

/// A wait scheduled after a failure, or none. On the heap, since only a failure pays for
/// it (`Call::wait`).
pub(crate) type Wait<S> = Held<Pin<Box<<S as Sleeper>::Sleep>>>;

/// An attempt's time-limit timer, made at its first pending poll, or none. Structurally
/// pinned: it is polled, set and dropped in place, never moved.
pub(crate) type Timer<S> = Held<<S as Sleeper>::Sleep>;

/// A value held across polls, or none, dropped in place by a function compiled once per
/// type of value rather than at every holder.
///
/// Its holders either pin it with themselves (a [`Timer`]: set and polled only through
/// `Pin::set` and `as_pin_mut`) or hold a value that is `Unpin` (a [`Wait`]'s box), so it
/// is never moved once set while its holder is pinned, and is dropped where it lies.
pub(crate) struct Held<T>(ManuallyDrop<Option<T>>);

impl<T> Held<T> {
    /// Nothing held.
    #[inline(always)]
    pub(crate) fn none() -> Self {
        Held(ManuallyDrop::new(None))
    }
}

impl<T> Deref for Held<T> {
    type Target = Option<T>;

    #[inline(always)]
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// For the holders: a [`Wait`] is set and taken through this borrow; a pinned [`Timer`]
/// only ever set or polled in place through it (`Pin::set`, `as_pin_mut`).
impl<T> DerefMut for Held<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl<T> Drop for Held<T> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.0.is_some() {
            drop_held(&mut self.0);
        }
    }
}

impl<F: Future + ?Sized> Held<Pin<Box<F>>> {
    /// Polls the wait, if one is held, and lets it go once it is over: whether it is still
    /// pending. Every loop's wait is polled here (the call-site loop's, the shared loop's,
    /// a whole-body turn's). Out of line, so that it is compiled once per sleeper rather
    /// than inlined, with the sleeper's poll, into each retried future's poll.
    #[inline(never)]
    pub(crate) fn is_pending(&mut self, cx: &mut Context<'_>) -> bool {
        if let Some(wait) = &mut *self.0 {
            if wait.as_mut().poll(cx).is_pending() {
                return true;
            }
            *self.0 = None;
        }
        false
    }
}

/// Drops a value that is still held, where it lies: compiled once per type of value.
#[inline(never)]
fn drop_held<T>(held: &mut Option<T>) {
    // SAFETY: the value is not moved: a pinned one is dropped where it was pinned, as its
    // holder is being dropped; `set` drops it in place and leaves `None`, which needs no
    // drop.
    unsafe { Pin::new_unchecked(held) }.set(None);
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;
    use core::future::Future;
    use core::marker::PhantomPinned;
    use core::task::{Context, Poll};
    use core::time::Duration;

    /// Sleeps that never end, each counting its drop and whether it was dropped where it
    /// was first polled (a pinned future must not move before it drops).
    struct Sleeps<'a> {
        dropped: &'a Cell<u32>,
        moved: &'a Cell<bool>,
    }

    struct Sleep<'a> {
        sleeps: &'a Sleeps<'a>,
        polled_at: Option<usize>,
        _pinned: PhantomPinned,
    }

    impl<'a> Sleeper for &'a Sleeps<'a> {
        type Sleep = Sleep<'a>;
        fn sleep(&self, _: Duration) -> Sleep<'a> {
            Sleep {
                sleeps: self,
                polled_at: None,
                _pinned: PhantomPinned,
            }
        }
    }

    impl Future for Sleep<'_> {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            // SAFETY: only a plain field is written; nothing is moved.
            let this = unsafe { self.get_unchecked_mut() };
            this.polled_at = Some(core::ptr::from_mut(this) as usize);
            Poll::Pending
        }
    }

    impl Drop for Sleep<'_> {
        fn drop(&mut self) {
            self.sleeps.dropped.set(self.sleeps.dropped.get() + 1);
            if self
                .polled_at
                .is_some_and(|at| at != core::ptr::from_mut(self) as usize)
            {
                self.sleeps.moved.set(true);
            }
        }
    }

    #[test]
    fn a_held_wait_drops_once_with_its_holder_and_none_drops_nothing() {
        let (dropped, moved) = (Cell::new(0), Cell::new(false));
        let sleeps = Sleeps {
            dropped: &dropped,
            moved: &moved,
        };
        drop(Wait::<&Sleeps>::none());
        assert_eq!(dropped.get(), 0);

        let mut wait = Wait::<&Sleeps>::none();
        *wait = Some(Box::pin((&sleeps).sleep(Duration::ZERO)));
        let mut cx = Context::from_waker(core::task::Waker::noop());
        assert!(wait.as_mut().unwrap().as_mut().poll(&mut cx).is_pending());
        assert_eq!(dropped.get(), 0, "held while its holder lives");
        drop(wait);
        assert_eq!(dropped.get(), 1, "dropped with its holder, once");
        assert!(!moved.get());
    }

    #[test]
    fn a_held_timer_drops_where_it_lies_once_and_none_drops_nothing() {
        let (dropped, moved) = (Cell::new(0), Cell::new(false));
        let sleeps = Sleeps {
            dropped: &dropped,
            moved: &moved,
        };
        drop(Timer::<&Sleeps>::none());
        assert_eq!(dropped.get(), 0);

        let mut timer = Box::pin(Timer::<&Sleeps>::none());
        // SAFETY: the timer is set and polled in place, through the pin, as its holders do.
        let mut slot = unsafe { Pin::new_unchecked(&mut **timer.as_mut().get_unchecked_mut()) };
        slot.set(Some((&sleeps).sleep(Duration::ZERO)));
        let mut cx = Context::from_waker(core::task::Waker::noop());
        assert!(slot.as_pin_mut().unwrap().poll(&mut cx).is_pending());
        assert!(timer.is_some(), "what it holds is read through it");
        assert_eq!(dropped.get(), 0, "held while its holder lives");
        drop(timer);
        assert_eq!(dropped.get(), 1, "dropped with its holder, once");
        assert!(!moved.get(), "dropped where it was polled, not moved first");
    }
}
