//! The type of the column handed to D1's `first(col_name)`, given where the expansion
//! evaluates it.
//!
//! `#[d1_retry]` evaluates an execution's arguments once, before the call, so that each
//! retry gets a clone: `match (Some(&column),) { kept => .. stmt.first(kept.0) .. }`. There,
//! no parameter type guides the expression, and `Some(&column)` with a `String` column is an
//! `Option<&String>`, which `first(col_name: Option<&str>)` refuses (E0308). Written as the
//! call, the parameter's type reaches inside the `Some(..)` and `&column` is coerced to
//! `&str`. The expansion hands the argument through [`ViaFirstColumn::d1_retry_column`]
//! instead: its parameter is `first`'s own, picked by the receiver's type without
//! evaluating the receiver ([`probed`](crate::dispatch::receiver::probed)), so the
//! argument is checked against `Option<&str>` as the call would check it. On any other
//! receiver ([`ViaOtherColumn`]) the argument passes through as it is, typed by itself, as
//! before: a method of the user's named `first` takes what it takes.

use core::mem::ManuallyDrop;
use std::cell::{Ref, RefMut};
use std::rc::Rc;
use std::sync::{Arc, MutexGuard, RwLockReadGuard, RwLockWriteGuard};

use crate::dispatch::receiver::{Receiver, with_pointers};

/// The types whose `first` takes the column as `Option<&str>`: D1's prepared statements
/// (`worker`'s, the testing kit's, `D1Retry`'s `D1RetryStatement`),
/// and references, pointers and guards to them, whose `first` is theirs by auto-deref.
pub trait FirstColumn {}

#[cfg(feature = "worker")]
impl FirstColumn for worker::D1PreparedStatement {}
#[cfg(feature = "worker")]
impl FirstColumn for crate::worker::D1RetryStatement {}
#[cfg(feature = "worker")]
impl<T: FirstColumn> FirstColumn for worker::send::SendWrapper<T> {}
#[cfg(feature = "testing")]
impl FirstColumn for crate::testing::D1PreparedStatement {}

/// Passes [`FirstColumn`] on through the pointers [`D1Receiver`](crate::D1Receiver) is
/// passed on through.
macro_rules! forward {
    ($($ty:ty),+ $(,)?) => {$(
        impl<T: FirstColumn + ?Sized> FirstColumn for $ty {}
    )+};
}

forward!(&T, &mut T);
with_pointers!(forward);

/// Picked for a receiver whose `first` is D1's: the column, typed as `first` takes it.
pub trait ViaFirstColumn {
    /// `column`, checked against `first`'s parameter type.
    fn d1_retry_column<'a>(&self, column: Option<&'a str>) -> Option<&'a str>;
}

impl<R: FirstColumn + ?Sized> ViaFirstColumn for &Receiver<R> {
    #[inline(always)]
    fn d1_retry_column<'a>(&self, column: Option<&'a str>) -> Option<&'a str> {
        column
    }
}

/// Picked for every other receiver: the argument as it is.
pub trait ViaOtherColumn {
    /// `argument`, unchanged.
    fn d1_retry_column<A>(&self, argument: A) -> A;
}

impl<R: ?Sized> ViaOtherColumn for Receiver<R> {
    #[inline(always)]
    fn d1_retry_column<A>(&self, argument: A) -> A {
        argument
    }
}
