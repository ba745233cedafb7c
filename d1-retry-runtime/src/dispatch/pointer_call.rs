//! The check that an execution `#[d1_retry]` judges by its receiver's type is D1's own
//! call, when the receiver is a pointer to a D1 type.
//!
//! Whether a call is D1's is decided by the receiver's type ([`D1Receiver::D1_CALLS`]),
//! which `Arc`, `Rc`, `Box`, `ManuallyDrop`, `RefCell`'s and locks' guards and
//! `worker::send::SendWrapper` pass on from the type they point to, since they have no
//! execution methods of their own. But Rust's method lookup finds a method of a trait
//! implemented *for the pointer* (an extension trait's `batch(&self, ..)` for
//! `Arc<D1Database>`) before D1's own, which it reaches only through `Deref`: in scope where
//! `db.batch(list)` is written, such a method runs instead of D1's. It may make several D1
//! calls (a batch split into chunks), or write before its D1 call (an audit row): retried
//! whole as if it were D1's one call, its first calls ran again.
//!
//! The expansion repeats the lookup, in code that never runs, on the receiver itself when
//! its type is one of those pointers to a [`D1Receiver`], or a reference to one, and in the
//! same scope: `(&&PointerOf(&db)).d1_retry_pointer().batch(())` with
//! [`D1CallThroughAPointer`] imported. That trait's methods borrow the pointer, so they are
//! found at the same step as such a method of the user's: with one, the call is ambiguous,
//! a compile error (E0034) at the user's method that names both traits; without one, the
//! lookup picks this trait and nothing happens. Any other receiver is looked up on
//! [`NotAPointer`] instead, whose methods of those names are its own (inherent), found
//! before any trait's, so that nothing of the user's is ever refused there.
//!
//! Not caught: a method of the user's that takes the pointer by value (`fn batch(self, ..)`
//! for `Arc<D1Database>`), which the lookup finds before one that borrows, or by `&mut`,
//! found after; a method for a pointer inside another pointer (`Arc<Box<D1Database>>`),
//! where the lookup stops at the outer one; a method for a reference reached through
//! another (`&self` for `&D1Database`, called on a `&&D1Database`), or for a D1 type by
//! `&mut self` reached through a `&mut`, since a reference to a D1 type is not looked up
//! (with one `&`, D1's own method is found first, and looking it up would refuse a
//! method of yours that the call does not make); in a `read_only` body, a call with another
//! number of arguments than D1's (`run(label)`), which is not looked up (elsewhere such a
//! call is not retried at all, but a `first()` without its column is looked up); and a
//! receiver of a generic type, whose bounds name the method.
//!
//! [`D1Receiver`]: crate::D1Receiver
//! [`D1Receiver::D1_CALLS`]: crate::D1Receiver

use core::mem::ManuallyDrop;
use std::cell::{Ref, RefMut};
use std::rc::Rc;
use std::sync::{Arc, MutexGuard, RwLockReadGuard, RwLockWriteGuard};

use crate::D1Receiver;

/// D1's calls on a pointer to a D1 type, which `#[d1_retry]` retries as D1's: the
/// attribute's check that no method of yours of the same name, for the pointer itself, is
/// called instead (see the module). Not meant to be called.
///
/// A compile error that names this trait beside one of yours (E0034, "multiple applicable
/// items in scope") means that your method, for a pointer such as `Arc<D1Database>` or
/// `Arc<D1PreparedStatement>`, is the one your call makes, not D1's, which Rust reaches
/// only through the pointer's `Deref`. `#[d1_retry]` would have retried it whole as if it
/// were D1's one call, making its first D1 calls (or any write before them) again. Write
/// the call you mean:
///
/// - yours, by its trait's path: `ChunkedBatch::batch(&db, list)`. It is then made once, as
///   written, and a failure of it is not retried (the D1 calls it makes inside are not
///   rewritten either).
/// - D1's, through the pointer: `(*db).batch(list)` or `db.as_ref().batch(list)`, retried
///   as D1's call.
///
/// Only a method that borrows the pointer (`&self`) is caught: one that takes it by value
/// (`fn batch(self, ..)`) or by `&mut self` is not, so do not name such a method like a D1
/// call.
pub trait D1CallThroughAPointer {
    /// Stands for D1's `first(column)`; only ever named in code that never runs.
    #[inline(always)]
    fn first<C>(&self, _column: C) {}
    /// Stands for D1's `all()`; only ever named in code that never runs.
    #[inline(always)]
    fn all(&self) {}
    /// Stands for D1's `run()`; only ever named in code that never runs.
    #[inline(always)]
    fn run(&self) {}
    /// Stands for D1's `raw()`; only ever named in code that never runs.
    #[inline(always)]
    fn raw(&self) {}
    /// Stands for D1's `raw_js_value()`; only ever named in code that never runs.
    #[inline(always)]
    fn raw_js_value(&self) {}
    /// Stands for D1's `batch(statements)`; only ever named in code that never runs.
    #[inline(always)]
    fn batch<L>(&self, _statements: L) {}
    /// Stands for D1's `exec(sql)`; only ever named in code that never runs.
    #[inline(always)]
    fn exec<S>(&self, _sql: S) {}
    /// Stands for D1's `dump()`; only ever named in code that never runs.
    #[inline(always)]
    fn dump(&self) {}
}

/// What the lookup runs on when the receiver is not a pointer to a D1 type: its methods of
/// D1's names are its own, found before any trait's (a blanket `impl<T>` of yours
/// included), so the lookup always picks them.
pub struct NotAPointer;

impl NotAPointer {
    /// Found before any trait's `first`.
    #[inline(always)]
    pub fn first<C>(&self, _column: C) {}
    /// Found before any trait's `all`.
    #[inline(always)]
    pub fn all(&self) {}
    /// Found before any trait's `run`.
    #[inline(always)]
    pub fn run(&self) {}
    /// Found before any trait's `raw`.
    #[inline(always)]
    pub fn raw(&self) {}
    /// Found before any trait's `raw_js_value`.
    #[inline(always)]
    pub fn raw_js_value(&self) {}
    /// Found before any trait's `batch`.
    #[inline(always)]
    pub fn batch<L>(&self, _statements: L) {}
    /// Found before any trait's `exec`.
    #[inline(always)]
    pub fn exec<S>(&self, _sql: S) {}
    /// Found before any trait's `dump`.
    #[inline(always)]
    pub fn dump(&self) {}
}

/// A pointer to a [`D1Receiver`] that passes on its calls, or a reference to one: what the
/// lookup runs on itself.
pub trait ThroughAPointer {}

impl<P: ThroughAPointer + ?Sized> ThroughAPointer for &P {}
impl<P: ThroughAPointer + ?Sized> ThroughAPointer for &mut P {}

/// The receiver, borrowed for the autoref dispatch that picks what the lookup runs on:
/// `(&&PointerOf(&db)).d1_retry_pointer()`. Built by its constructor and asked without an argument,
/// so that the dispatch is no call but the method's, at every execution the attribute
/// checks.
pub struct PointerOf<'r, R: ?Sized>(pub &'r R);

/// Picked for a pointer to a D1 type: the receiver itself.
pub trait ViaPointer<'r> {
    /// The receiver's type.
    type Receiver: ?Sized;
    /// The receiver, for the lookup in code that never runs.
    fn d1_retry_pointer(&self) -> &'r Self::Receiver;
}

impl<'r, R: ThroughAPointer + ?Sized> ViaPointer<'r> for &PointerOf<'r, R> {
    type Receiver = R;
    #[inline(always)]
    fn d1_retry_pointer(&self) -> &'r R {
        self.0
    }
}

/// Picked for every other receiver: [`NotAPointer`].
pub trait ViaOtherPointer {
    /// The stand-in, for the lookup in code that never runs.
    fn d1_retry_pointer(&self) -> &'static NotAPointer;
}

impl<R: ?Sized> ViaOtherPointer for PointerOf<'_, R> {
    #[inline(always)]
    fn d1_retry_pointer(&self) -> &'static NotAPointer {
        &NotAPointer
    }
}

macro_rules! pointers {
    ($($(#[$cfg:meta])* $pointer:ty),+ $(,)?) => {$(
        $(#[$cfg])*
        impl<T: D1Receiver + ?Sized> ThroughAPointer for $pointer {}
        $(#[$cfg])*
        impl<T: D1Receiver + ?Sized> D1CallThroughAPointer for $pointer {}
    )+};
}

crate::dispatch::receiver::with_pointers!(pointers);

#[cfg(feature = "worker")]
impl<T: D1Receiver> ThroughAPointer for worker::send::SendWrapper<T> {}
#[cfg(feature = "worker")]
impl<T: D1Receiver> D1CallThroughAPointer for worker::send::SendWrapper<T> {}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{D1CallThroughAPointer, NotAPointer, PointerOf};
    use crate::D1Receiver;

    struct Statement;
    impl Statement {
        fn run(&self) -> &'static str {
            "the statement's own"
        }
    }
    impl D1Receiver for Statement {}

    /// The lookup the expansion repeats, without the check's trait in scope: a method for
    /// the pointer that borrows it is found before the pointee's own (the check's trait,
    /// found at that same step, makes the call ambiguous).
    mod users_lookup {
        use std::sync::Arc;

        use super::Statement;

        #[test]
        fn a_method_for_the_pointer_is_found_before_the_pointees() {
            trait Audited {
                fn run(&self) -> &'static str;
            }
            impl Audited for Arc<Statement> {
                fn run(&self) -> &'static str {
                    "the pointer's"
                }
            }
            let statement = Arc::new(Statement);
            assert_eq!(statement.run(), "the pointer's");
            assert_eq!((*statement).run(), "the statement's own");
        }
    }

    /// The dispatch: a pointer to a D1 type (or a reference to one) is looked up on
    /// itself, anything else on the stand-in, whose own methods are found before any
    /// trait's; with no method of the user's, the check's trait is picked through
    /// references.
    #[test]
    // The borrows are the point: the autoref dispatch and a lookup through references.
    #[allow(clippy::needless_borrow)]
    fn the_dispatch_picks_the_pointer_or_the_stand_in() {
        #[allow(unused_imports)]
        use super::{ViaOtherPointer as _, ViaPointer as _};
        let pointer = Arc::new(Statement);
        let through: &Arc<Statement> = (&&PointerOf(&pointer)).d1_retry_pointer();
        let (): () = through.batch(());
        let (): () = (&&through).run();
        let reference = &pointer;
        let _: &&Arc<Statement> = (&&PointerOf(&reference)).d1_retry_pointer();
        let other = Statement;
        let stand_in: &NotAPointer = (&&PointerOf(&other)).d1_retry_pointer();
        stand_in.run();
        let plain = Arc::new(0_u8);
        let _: &NotAPointer = (&&PointerOf(&plain)).d1_retry_pointer();
    }

    /// The trait is implemented for the pointers the mark passes through.
    #[test]
    fn the_pointers_have_the_stand_ins() {
        fn stands_in<P: D1CallThroughAPointer + ?Sized>() {}
        stands_in::<Arc<Statement>>();
        stands_in::<std::rc::Rc<Statement>>();
        stands_in::<Box<Statement>>();
        stands_in::<std::sync::MutexGuard<'_, Statement>>();
    }
}
