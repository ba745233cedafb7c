//! A statement in a field, followed across the attempts of an execution kept and awaited
//! later (`let rows = self.jobs.stmt.all(); .. rows.await`, or joined).
//!
//! Each attempt makes the call as written, so it evaluates the field again, and through a
//! `Deref` of the user's on the way (`self.jobs` a cursor) the field may name another
//! statement by then than the one the execution's access was judged on. Retried under
//! that access, a write could run twice: a read's retry that sends an `INSERT`, whose own
//! failure after it ran would be retried as the read's. So the attempt hands its receiver
//! to [`Retrying::follow`] as it is made, and a statement other than the last attempt's is
//! judged by the SQL it holds, read then; the retry loop goes on with that access.
//!
//! An execution awaited where it is made does the same through its loop
//! (`Execution::again_at`).

use crate::dispatch::receiver::{D1Call, D1Receiver, Plain, Retrying};
use crate::retry::decide::Access;

/// Where the field pointed at the last attempt, and the access of the statement it names,
/// once that changed.
#[derive(Debug, Default)]
pub struct Follow {
    /// The address of the receiver the last attempt was made on; 0 before the first
    /// (no reference has that address).
    at: usize,
    /// The access of the statement the field names now, not yet taken by the loop.
    moved: Option<Access>,
}

impl Follow {
    /// The access of the statement the field named at the attempt just made, if it was
    /// another than the attempt's before; once.
    pub(crate) fn take_moved(&mut self) -> Option<Access> {
        self.moved.take()
    }
}

impl Retrying {
    /// As an attempt is made on `receiver`: see [`moved`].
    #[inline(always)]
    pub fn follow<R: D1Receiver + ?Sized, C: D1Call>(
        self,
        follow: &mut Follow,
        receiver: &R,
        own: C,
    ) {
        if let Some(access) = moved(&mut follow.at, receiver, own) {
            follow.moved = Some(access);
        }
    }
}

/// Whether `receiver` is another place than the last attempt's, whose address `at` holds
/// (0 before the first: nothing to compare); then `at` becomes its address, and its
/// statement's access is judged now, as `begin` judged the first (by
/// [`Retrying::access`], the SQL it holds read, since the site's own verdict was for
/// another statement).
pub(crate) fn moved<R: D1Receiver + ?Sized, C: D1Call>(
    at: &mut usize,
    receiver: &R,
    own: C,
) -> Option<Access> {
    let now = core::ptr::from_ref(receiver).addr();
    let before = core::mem::replace(at, now);
    (before != 0 && before != now).then(|| Retrying.access(Access::Unseen, receiver, own))
}

impl Plain {
    /// Nothing to follow: a call on this receiver is made once, as written.
    #[inline(always)]
    pub fn follow<R: ?Sized, C>(self, _follow: &mut Follow, _receiver: &R, _own: C) {}
}

/// The attempts of an execution whose closure is also handed the [`Follow`].
pub struct Following<F> {
    pub(crate) attempt: F,
    pub(crate) follow: Follow,
}

impl<F> Following<F> {
    /// `attempt`, with nothing followed yet.
    pub(crate) fn new(attempt: F) -> Self {
        Following {
            attempt,
            follow: Follow::default(),
        }
    }
}
