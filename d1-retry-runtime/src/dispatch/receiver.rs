//! Which method calls are D1 executions: the [`D1Receiver`] mark, and the compile-time
//! dispatch the `#[d1_retry]` expansion goes through.
//!
//! The attribute runs before types are known. It rewrites every call *named* like a D1
//! execution (`first`, `all`, `run`, `raw`, `raw_js_value`, `batch`, `exec`, `dump`, or
//! an `.await` on a statement) into `(&&Receiver::of(&recv)).d1_retry_site()`, and autoref
//! specialisation picks the site at compile time: [`Retrying`] when the receiver's type
//! carries the mark, [`Plain`] otherwise. `slice.first()`, `Iterator::all(f)` or a user's
//! `Job::run()` go through [`Plain`], which makes the call exactly as written.

use core::future::Future;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::sync::atomic::{AtomicU8, Ordering};
use std::cell::{Ref, RefMut};
use std::rc::Rc;
use std::sync::{Arc, MutexGuard, RwLockReadGuard, RwLockWriteGuard};

use crate::classify::failure::Failure;
use crate::retry::call::{Call, MakeAttempt, TimedCall, execute, execute_timed};
use crate::retry::decide::Access;
use crate::retry::driver::Attempt;
use crate::retry::follow::{Follow, Following};
use crate::retry::operation::OperationName;
use crate::schedule::timeout::TimedOut;
use crate::{Sleeper, is_read_only, is_read_only_prepared};

/// Marks a type whose `first`, `all`, `run`, `raw`, `raw_js_value`, `batch`, `exec` and
/// `dump` methods (and `.await`, if it is `IntoFuture`) run a D1 statement, so that
/// `#[d1_retry]` retries those calls.
///
/// Implemented for the `worker` crate's `D1Database`, `D1DatabaseSession` and
/// `D1PreparedStatement` (feature `worker`), for the testing kit's types (feature
/// `testing`), and through `&`, `&mut`, `Box`, `Rc`, `Arc`, `ManuallyDrop`, `RefCell`'s and
/// locks' guards and `worker::send::SendWrapper`, which have no such methods of their own.
/// Not implemented for `D1Retry`, which retries on its own. A wrapper of your own, another D1 client or a test
/// double takes one line:
///
/// ```
/// # struct MyStatement;
/// impl d1_retry_runtime::D1Receiver for MyStatement {}
/// ```
///
/// What the mark promises: those methods take `&self` and arguments that can be cloned,
/// and return a future of `Result<T, E>`; an `IntoFuture` receiver is `Clone`; and each
/// makes one D1 call, since a call that fails before D1 is reached is made again whole (a
/// `run` of yours that writes an audit row and then runs the statement would write the
/// audit row again when the statement's call fails before it is sent). A call on a
/// type without the mark is made once, as written, and never retried. A generic receiver
/// counts only when its bounds include `D1Receiver`.
///
/// The mark says nothing of `prepare`: the SQL handed to a `prepare` is trusted only on
/// D1's database and session and a reference to one, and on a database type of yours
/// marked [`D1Prepare`](crate::D1Prepare). A statement prepared anywhere else (through an
/// `Rc` or a guard, in a generic function, by a helper) is judged by the SQL it holds when
/// its execution begins: D1's statements tell it, and a statement of any other type
/// counts as a write.
///
/// On the `worker` and testing types, only the calls each type has count: `batch`, `exec`
/// and `dump` on a database, `batch` on a session, the others and `.await` on a statement.
/// A method of your own of one of those names on a type without it (an extension trait's
/// `first` on `D1Database`) may make several D1 calls, so it is made once, and its failure
/// is not retried. On a type you mark, every call of those names counts.
pub trait D1Receiver {
    /// The calls the type has as its own; every call unless it says otherwise. A call of
    /// another of those names on it is a method of the user's, made once as written.
    #[doc(hidden)]
    const D1_CALLS: D1Calls = D1Calls::EVERY;

    /// Whether the SQL this statement holds is read-only, read where its execution
    /// begins, for a statement whose SQL `#[d1_retry]` could not see where it was made
    /// (`statement_sql.rs`); `None`, a write, when it cannot be read, as on any type but
    /// D1's statements.
    #[doc(hidden)]
    fn d1_held_sql_read_only(&self) -> Option<bool> {
        None
    }
}

/// Forwards the mark through references, pointers and guards, which have no execution
/// methods of their own, so that a call on them is the inner type's (by auto-deref) and has
/// its calls, and the statement they hold is read through them.
macro_rules! forward {
    ($($ty:ty),+ $(,)?) => {$(
        impl<T: D1Receiver + ?Sized> D1Receiver for $ty {
            const D1_CALLS: D1Calls = T::D1_CALLS;
            fn d1_held_sql_read_only(&self) -> Option<bool> {
                T::d1_held_sql_read_only(self)
            }
        }
    )+};
}

/// Calls `$then!` with the pointers and guards (over a `T`) that pass the mark on: one list
/// for [`forward!`] here and for the check that a call on one is D1's
/// (`pointer_call.rs`), so that a pointer added here is checked there too.
macro_rules! with_pointers {
    ($then:ident) => {
        $then!(
            Box<T>,
            Rc<T>,
            Arc<T>,
            ManuallyDrop<T>,
            Ref<'_, T>,
            RefMut<'_, T>,
            MutexGuard<'_, T>,
            RwLockReadGuard<'_, T>,
            RwLockWriteGuard<'_, T>,
        );
    };
}
pub(crate) use with_pointers;

// References pass the mark on too; the check in `pointer_call.rs` looks through a reference
// to a pointer, not at the reference itself.
forward!(&T, &mut T);
with_pointers!(forward);
#[cfg(feature = "worker")]
impl<T: D1Receiver> D1Receiver for worker::send::SendWrapper<T> {
    const D1_CALLS: D1Calls = T::D1_CALLS;
    fn d1_held_sql_read_only(&self) -> Option<bool> {
        T::d1_held_sql_read_only(self)
    }
}

// Each D1 type's own calls, as `worker` 0.8.7 defines them (the testing kit's types mirror
// them): a call of another name on one is a method of the user's.
#[cfg(feature = "worker")]
impl D1Receiver for worker::D1Database {
    const D1_CALLS: D1Calls = D1Calls::DATABASE;
}
#[cfg(feature = "worker")]
impl D1Receiver for worker::D1DatabaseSession {
    const D1_CALLS: D1Calls = D1Calls::SESSION;
}
#[cfg(feature = "worker")]
impl D1Receiver for worker::D1PreparedStatement {
    const D1_CALLS: D1Calls = D1Calls::STATEMENT;
    fn d1_held_sql_read_only(&self) -> Option<bool> {
        crate::dispatch::statement_sql::worker_statement_read_only(self)
    }
}

#[cfg(feature = "testing")]
impl D1Receiver for crate::testing::D1Database {
    const D1_CALLS: D1Calls = D1Calls::DATABASE;
}
#[cfg(feature = "testing")]
impl D1Receiver for crate::testing::D1PreparedStatement {
    const D1_CALLS: D1Calls = D1Calls::STATEMENT;
    fn d1_held_sql_read_only(&self) -> Option<bool> {
        Some(is_read_only_prepared(self.sql()))
    }
}

/// Which of the calls `#[d1_retry]` retries a [`D1Receiver`] type has as its own, one bit
/// each.
///
/// The attribute retries a call by its name, and a method of the user's own can carry one
/// of those names on a D1 type that has no method of that name: an extension trait's
/// `first` on `D1Database`, which may make several D1 calls of its own, the first of which
/// a retry of the whole method would make again. Such a call is made once, as written.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct D1Calls(u16);

impl D1Calls {
    /// `first(..)`.
    pub const FIRST: D1Calls = D1Calls(1);
    /// `all()`.
    pub const ALL: D1Calls = D1Calls(1 << 1);
    /// `run()`.
    pub const RUN: D1Calls = D1Calls(1 << 2);
    /// `raw()`.
    pub const RAW: D1Calls = D1Calls(1 << 3);
    /// `raw_js_value()`.
    pub const RAW_JS_VALUE: D1Calls = D1Calls(1 << 4);
    /// `batch(..)`.
    pub const BATCH: D1Calls = D1Calls(1 << 5);
    /// `exec(..)`.
    pub const EXEC: D1Calls = D1Calls(1 << 6);
    /// `dump()`.
    pub const DUMP: D1Calls = D1Calls(1 << 7);
    /// `.await` on the value itself (`IntoFuture`).
    pub const AWAIT: D1Calls = D1Calls(1 << 8);
    /// Every call: a type of the user's own marked [`D1Receiver`], whose calls the mark
    /// vouches for.
    pub const EVERY: D1Calls = D1Calls(u16::MAX);
    /// A database's: `batch`, `exec`, `dump`.
    pub const DATABASE: D1Calls = D1Calls::BATCH.with(D1Calls::EXEC).with(D1Calls::DUMP);
    /// A session's: `batch`.
    pub const SESSION: D1Calls = D1Calls::BATCH;
    /// A prepared statement's: `first`, `all`, `run`, `raw`, `raw_js_value`, `.await`.
    pub const STATEMENT: D1Calls = D1Calls::FIRST
        .with(D1Calls::ALL)
        .with(D1Calls::RUN)
        .with(D1Calls::RAW)
        .with(D1Calls::RAW_JS_VALUE)
        .with(D1Calls::AWAIT);

    /// Both sets.
    #[must_use]
    pub const fn with(self, other: D1Calls) -> D1Calls {
        D1Calls(self.0 | other.0)
    }

    /// Whether every call of `calls` is in this set.
    #[must_use]
    pub const fn has(self, calls: D1Calls) -> bool {
        self.0 & calls.0 == calls.0
    }

    /// Whether the call decodes the rows D1 returned into the caller's type in the same
    /// call (`first`, `raw`), so that its error may be a row's text.
    #[must_use]
    pub const fn decodes_rows(self) -> bool {
        self.0 != 0 && D1Calls::FIRST.with(D1Calls::RAW).has(self)
    }
}

/// A call `#[d1_retry]` retries, as a type: the expansion hands [`Retrying::access`] one of
/// [`calls`]' unit structs rather than a [`D1Calls`] value, so that whether the receiver's
/// type has the call is a constant of the two types, with no code for rustc to compile at
/// each site.
pub trait D1Call {
    /// The call's bit.
    const CALL: D1Calls;
}

/// The calls `#[d1_retry]` retries, one unit struct each, for [`Retrying::access`].
pub mod calls {
    use super::{D1Call, D1Calls};

    macro_rules! calls {
        ($($(#[$doc:meta])* $name:ident = $bit:ident;)+) => {$(
            $(#[$doc])*
            #[derive(Clone, Copy, Debug)]
            pub struct $name;

            impl D1Call for $name {
                const CALL: D1Calls = D1Calls::$bit;
            }
        )+};
    }

    calls! {
        /// `first(..)`.
        First = FIRST;
        /// `all()`.
        All = ALL;
        /// `run()`.
        Run = RUN;
        /// `raw()`.
        Raw = RAW;
        /// `raw_js_value()`.
        RawJsValue = RAW_JS_VALUE;
        /// `batch(..)`.
        Batch = BATCH;
        /// `exec(..)`.
        Exec = EXEC;
        /// `dump()`.
        Dump = DUMP;
        /// `.await` on the value itself.
        Await = AWAIT;
    }
}

/// The receiver's type, without a borrow that outlives the probe.
pub struct Receiver<R: ?Sized>(PhantomData<fn(&R)>);

impl<R: ?Sized> Receiver<R> {
    /// Probes `receiver`'s type.
    #[inline(always)]
    pub fn of(_receiver: &R) -> Self {
        Receiver(PhantomData)
    }

    /// Probes the type `R` itself: the type a path such as `D1Database::prepare` names,
    /// whose function is called whatever the argument's type.
    #[inline(always)]
    pub fn named() -> Self {
        Receiver(PhantomData)
    }
}

/// The receiver's type, from a closure that probes it and is never called: known without
/// evaluating, reading or moving anything. The probe is inside the closure, so a borrow of
/// a temporary (a constant, a unit struct) ends there.
#[inline(always)]
pub fn probed<R: ?Sized>(_probe: impl FnOnce() -> Receiver<R>) -> Receiver<R> {
    Receiver(PhantomData)
}

/// `value`, once `_observed`, an observation of what the call that made it was handed, was
/// made: the argument order is the evaluation order. A call rather than a tuple's field, so
/// that a method call of the user's in a statement of its own (`self.audit(..);`) stays a
/// call, which clippy's `unnecessary_operation` does not lay at the user's door.
#[inline(always)]
pub fn observed_then<T>(_observed: (), value: T) -> T {
    value
}

/// Picked for receivers marked [`D1Receiver`].
pub trait ViaD1Receiver {
    /// The site that retries.
    fn d1_retry_site(&self) -> Retrying;
}

impl<R: D1Receiver + ?Sized> ViaD1Receiver for &Receiver<R> {
    #[inline(always)]
    fn d1_retry_site(&self) -> Retrying {
        Retrying
    }
}

/// Picked for every other receiver.
pub trait ViaOtherReceiver {
    /// The site that makes the call as written.
    fn d1_retry_site(&self) -> Plain;
}

impl<R: ?Sized> ViaOtherReceiver for Receiver<R> {
    #[inline(always)]
    fn d1_retry_site(&self) -> Plain {
        Plain
    }
}

/// The error of an execution on a [`D1Receiver`], read by the classifier: any
/// `std::error::Error + 'static`, with its `source()` chain (`worker::Error`, the testing
/// kit's error, your own).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is the error of a D1 execution, but d1-retry cannot read it: it is not `std::error::Error + 'static`",
    label = "the error this call returns",
    note = "a `D1Receiver`'s executions return `Result<T, E>` with `E: std::error::Error + 'static`; implement `Display`, `Debug` and `std::error::Error` for it"
)]
pub trait ExecutionError {
    /// The failure the driver decides with.
    fn d1_failure(&self) -> Failure<'_>;
}

impl<E: std::error::Error + 'static> ExecutionError for E {
    #[inline]
    fn d1_failure(&self) -> Failure<'_> {
        Failure::of(self)
    }
}

/// An execution on a [`D1Receiver`]: retried through the call's schedule.
#[derive(Clone, Copy, Debug, Default)]
pub struct Retrying;

/// A call on any other receiver: made once, as written.
#[derive(Clone, Copy, Debug, Default)]
pub struct Plain;

/// The attempt of a retrying execution, waiting for the classifier of its error type
/// (a second step, so the error type is known when the classifier is type-checked).
#[must_use]
pub struct Pending<'c, K, A, F> {
    call: &'c K,
    access: Access,
    args: A,
    attempt: F,
}

impl Retrying {
    /// Makes `attempt(args)`, retried as `access` allows on the call's schedule: the
    /// whole site in one call, so that each execution instantiates one runtime future.
    /// An inherent method (not the probe's trait), so the future does not borrow the probe.
    #[inline(always)]
    pub fn run<'c, S, A, F, Fut, T, E>(
        self,
        call: &'c Call<'c, S>,
        args: A,
        access: Access,
        attempt: F,
    ) -> impl Future<Output = Result<T, E>> + use<'c, S, A, F, Fut, T, E>
    where
        S: Sleeper,
        A: Clone,
        F: FnMut(A) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: ExecutionError,
    {
        execute(call, access, args, attempt, E::d1_failure)
    }

    /// [`run`](Self::run) for a statement in a field: `attempt` is also handed the
    /// [`Follow`] it tells the receiver it is made on ([`follow`](Self::follow)), so that
    /// an attempt on another statement is judged by that statement's SQL.
    #[inline(always)]
    pub fn run_following<'c, S, A, F, Fut, T, E>(
        self,
        call: &'c Call<'c, S>,
        args: A,
        access: Access,
        attempt: F,
    ) -> impl Future<Output = Result<T, E>> + use<'c, S, A, F, Fut, T, E>
    where
        S: Sleeper,
        A: Clone,
        F: FnMut(A, &mut Follow) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: ExecutionError,
    {
        execute(call, access, args, Following::new(attempt), E::d1_failure)
    }

    /// [`execute`](Self::execute) for a statement in a field (see
    /// [`run_following`](Self::run_following)).
    #[inline(always)]
    pub fn execute_following<'c, K, A, F, Fut>(
        self,
        call: &'c K,
        args: A,
        access: Access,
        attempt: F,
    ) -> Pending<'c, K, A, Following<F>>
    where
        F: FnMut(A, &mut Follow) -> Fut,
    {
        Pending {
            call,
            access,
            args,
            attempt: Following::new(attempt),
        }
    }

    /// Makes `attempt(args)`, retried as `access` allows.
    #[inline(always)]
    pub fn execute<'c, K, A, F, Fut>(
        self,
        call: &'c K,
        args: A,
        access: Access,
        attempt: F,
    ) -> Pending<'c, K, A, F>
    where
        // Stated here, so the closure's parameter takes the arguments' types and each
        // argument still coerces where the method is called (`&String` to `&str`).
        F: FnMut(A) -> Fut,
    {
        Pending {
            call,
            access,
            args,
            attempt,
        }
    }
}

impl<'c, K, A, F> Pending<'c, K, A, F> {
    /// The call, the access, the arguments and the attempt, for the untimed
    /// `classify_timed` (`retry::limits`).
    #[inline(always)]
    pub(crate) fn into_parts(self) -> (&'c K, Access, A, F) {
        (self.call, self.access, self.args, self.attempt)
    }
}

impl<'c, S, A, F> Pending<'c, TimedCall<'c, S>, A, F> {
    /// The future of the execution, within the policy's time limits when
    /// `timeouts` finds a conversion of a [`TimedOut`] into the call's error type (the
    /// limits cannot apply without one).
    pub fn classify_timed<Fut, T, E, C>(
        self,
        classify: C,
        timeouts: impl FnOnce(PhantomData<E>) -> Option<fn(TimedOut) -> E>,
    ) -> impl Future<Output = Result<T, E>>
    where
        S: Sleeper,
        A: Clone,
        F: MakeAttempt<A, Future = Fut>,
        Fut: Future<Output = Result<T, E>>,
        C: for<'e> FnMut(&'e E) -> Failure<'e>,
    {
        execute_timed(
            self.call,
            self.access,
            self.args,
            self.attempt,
            classify,
            timeouts(PhantomData),
        )
    }
}

/// The plain call, made as written.
#[must_use]
pub struct Unretried<R>(R);

/// The access of a call that decodes the rows D1 returned (`first`, `raw`): SQL that may
/// write becomes [`Access::DecodedWrite`], never retried, since the call's error may be a
/// row's own text read like D1's (see there). A read stays a read: running it again
/// writes nothing, whatever its error said.
pub(crate) const fn decoded(access: Access) -> Access {
    match access {
        Access::Write | Access::Unseen => Access::DecodedWrite,
        other => other,
    }
}

impl Retrying {
    /// The access of making `call` on `receiver`, whose statements' access is `seen`:
    ///
    /// - [`Access::NotD1Call`], never retried, when `call` is not one of the type's own
    ///   ([`D1Receiver::D1_CALLS`]);
    /// - else, where `seen` is [`Access::Unseen`], the access of the SQL the receiver holds
    ///   when it is a D1 statement (`statement_sql.rs`), read now, once per execution;
    /// - else `seen`.
    ///
    /// Asked of the site the probe picked, not by a second probe: `R` is the type the
    /// probe found marked. `begin_on` and `begin_timed_on` ask it in the one call an
    /// awaited site makes; a stored execution asks it before its closure is made.
    #[inline(always)]
    pub fn access<R: D1Receiver + ?Sized, C: D1Call>(
        self,
        seen: Access,
        receiver: &R,
        _call: C,
    ) -> Access {
        // A constant of `R` and `C`: the function is a copy of the verdict in every
        // codegen unit that uses it, with no call or branch for rustc to compile there.
        let own = const {
            if R::D1_CALLS.has(C::CALL) {
                Access::ReadOnly
            } else {
                Access::NotD1Call
            }
        };
        let access = crate::dispatch::statement_sql::held(seen.and(own), receiver);
        if const { C::CALL.decodes_rows() } {
            decoded(access)
        } else {
            access
        }
    }

    /// In a `#[d1_retry(read_only)]` attempt, a statement a `prepare` made in sight of SQL
    /// that is not text (a generic `impl Into<String>`, a query type it converts; see
    /// `scope::made_statement`): `attempt` learns whether the SQL it became may write
    /// ([`Attempt::observe_held`]), as for a statement made out of sight, and where it was
    /// made (the text `bind` copies is the one its executions run).
    #[inline(always)]
    pub fn observe_made<R: D1Receiver + ?Sized>(self, attempt: &Attempt<'_>, statement: &R) {
        observe_made(attempt, statement);
    }

    /// [`observe_made`](Self::observe_made) where the attempt's record cannot be borrowed
    /// (see [`observe_unborrowed`](Self::observe_unborrowed)).
    #[inline(always)]
    pub fn observe_made_unborrowed<R: D1Receiver + ?Sized>(
        self,
        statement: &R,
        operation: OperationName<'_>,
    ) {
        record_made(statement, operation);
    }

    /// In a `#[d1_retry(read_only)]` attempt, before an execution whose statement the body
    /// did not make in sight: `attempt` learns whether the SQL `receiver` holds may write
    /// ([`Attempt::observe_held`]), so that an attempt that ran such a statement is not run
    /// again. Only where `call` is one of the type's own ([`D1Receiver::D1_CALLS`]).
    #[inline(always)]
    pub fn observe<R: D1Receiver + ?Sized, C: D1Call>(
        self,
        attempt: &Attempt<'_>,
        receiver: &R,
        _call: C,
    ) {
        if const { R::D1_CALLS.has(C::CALL) } {
            attempt.observe_held(crate::dispatch::statement_sql::read(receiver));
        } else {
            unseen::<C>();
        }
    }

    /// [`observe`](Self::observe) where the attempt's record cannot be borrowed: in an
    /// `async` block or a closure of a `read_only` body, which may have to own all it
    /// holds (a task's future) or become a `fn` pointer. A statement that may write, or
    /// whose SQL cannot be read, is counted as a write made on this thread
    /// ([`scope::record_held`](crate::retry::scope::record_held)), which the attempt reads after
    /// each of its polls, as it reads a nested call's write: run while the body is polled,
    /// it keeps the attempt from running again; run by a task spawned from it, it escapes,
    /// as the task escapes the attempt. Logged under `operation`, the function's name, as
    /// the record logs it.
    #[inline(always)]
    pub fn observe_unborrowed<R: D1Receiver + ?Sized, C: D1Call>(
        self,
        receiver: &R,
        _call: C,
        operation: OperationName<'_>,
    ) {
        if const { R::D1_CALLS.has(C::CALL) } {
            crate::retry::scope::record_held(
                crate::dispatch::statement_sql::read(receiver),
                operation,
            );
        } else {
            unseen::<C>();
        }
    }

    /// In a `read_only` attempt, a statement lent or received where the body hands it to
    /// code of the user's that may run it (`audit(&self.insert)`, `self.insert.timed()`):
    /// observed as an `.await` on it is ([`observe`](Self::observe)), but only on a type
    /// whose calls are a statement's, D1's own behind any reference or pointer. A type of
    /// the user's marked `D1Receiver` has every call, a database's as well as a
    /// statement's, and a database lent to a helper runs nothing of itself.
    #[inline(always)]
    pub fn observe_lent<R: D1Receiver + ?Sized>(self, attempt: &Attempt<'_>, receiver: &R) {
        if const { R::D1_CALLS.0 == D1Calls::STATEMENT.0 } {
            attempt.observe_held(crate::dispatch::statement_sql::read(receiver));
        }
    }

    /// [`observe_lent`](Self::observe_lent) where the attempt's record cannot be borrowed
    /// (see [`observe_unborrowed`](Self::observe_unborrowed)).
    #[inline(always)]
    pub fn observe_lent_unborrowed<R: D1Receiver + ?Sized>(
        self,
        receiver: &R,
        operation: OperationName<'_>,
    ) {
        if const { R::D1_CALLS.0 == D1Calls::STATEMENT.0 } {
            crate::retry::scope::record_held(
                crate::dispatch::statement_sql::read(receiver),
                operation,
            );
        }
    }
}

/// [`Retrying::observe_made`]'s observation: the SQL `statement` holds, read now. Out of line: a
/// path taken only for SQL that is not text, compiled once per statement type rather than
/// at every site.
#[inline(never)]
fn observe_made<R: D1Receiver + ?Sized>(attempt: &Attempt<'_>, statement: &R) {
    attempt.observe_held(crate::dispatch::statement_sql::read(statement));
}

/// [`Retrying::observe_made_unborrowed`]'s observation, counted on the thread.
#[inline(never)]
fn record_made<R: D1Receiver + ?Sized>(statement: &R, operation: OperationName<'_>) {
    crate::retry::scope::record_held(crate::dispatch::statement_sql::read(statement), operation);
}

/// An execution named `C` on a receiver that is not D1's, or on a D1 type without that call
/// (a method of the user's): its output is judged instead (`unseen_output.rs`). Not for
/// `.await` on a value that is not D1's statement (any future of the body's).
#[inline(always)]
fn unseen<C: D1Call>() {
    if const { C::CALL.0 != D1Calls::AWAIT.0 } {
        crate::dispatch::unseen_output::note_unseen();
    }
}

impl Plain {
    /// A statement that is not D1's, made of SQL that is not text: nothing can be read, so
    /// it counts as a write (see [`Retrying::observe_made`]).
    #[inline(always)]
    pub fn observe_made<R: ?Sized>(self, attempt: &Attempt<'_>, _statement: &R) {
        attempt.observe_held(Access::Unseen);
    }

    /// The same (see [`observe_made`](Self::observe_made)).
    #[inline(always)]
    pub fn observe_made_unborrowed<R: ?Sized>(self, _statement: &R, operation: OperationName<'_>) {
        crate::retry::scope::record_held(Access::Unseen, operation);
    }

    /// A call on a receiver that is not D1's: nothing for a `read_only` attempt to learn
    /// from it, but it may reach D1's own call through `Deref`, so the call's output is
    /// judged instead (`unseen_output.rs`).
    #[inline(always)]
    pub fn observe<R: ?Sized, C: D1Call>(self, _attempt: &Attempt<'_>, _receiver: &R, _call: C) {
        unseen::<C>();
    }

    /// The same (see [`observe`](Self::observe)).
    #[inline(always)]
    pub fn observe_unborrowed<R: ?Sized, C: D1Call>(
        self,
        _receiver: &R,
        _call: C,
        _operation: OperationName<'_>,
    ) {
        unseen::<C>();
    }

    /// A value lent that is not D1's: nothing to learn ([`Retrying::observe_lent`]).
    #[inline(always)]
    pub fn observe_lent<R: ?Sized>(self, _attempt: &Attempt<'_>, _receiver: &R) {}

    /// The same (see [`observe_lent`](Self::observe_lent)).
    #[inline(always)]
    pub fn observe_lent_unborrowed<R: ?Sized>(self, _receiver: &R, _operation: OperationName<'_>) {}

    /// Nothing read: a call on this receiver is made once, as written, whatever its
    /// access.
    #[inline(always)]
    pub fn access<R: ?Sized, C>(self, seen: Access, _receiver: &R, _call: C) -> Access {
        seen
    }

    /// Makes `attempt(args)` once: the call as written.
    #[inline(always)]
    pub fn run<S, A, R>(
        self,
        _call: &Call<'_, S>,
        args: A,
        _access: Access,
        attempt: impl FnOnce(A) -> R,
    ) -> R {
        attempt(args)
    }

    /// Makes `attempt(args)` once.
    #[inline(always)]
    pub fn execute<K, A, R>(
        self,
        _call: &K,
        args: A,
        _access: Access,
        attempt: impl FnOnce(A) -> R,
    ) -> Unretried<R> {
        Unretried(attempt(args))
    }

    /// Makes `attempt(args)` once, with nothing to follow.
    #[inline(always)]
    pub fn run_following<S, A, R>(
        self,
        _call: &Call<'_, S>,
        args: A,
        _access: Access,
        attempt: impl FnOnce(A, &mut Follow) -> R,
    ) -> R {
        attempt(args, &mut Follow::default())
    }

    /// Makes `attempt(args)` once, with nothing to follow.
    #[inline(always)]
    pub fn execute_following<K, A, R>(
        self,
        _call: &K,
        args: A,
        _access: Access,
        attempt: impl FnOnce(A, &mut Follow) -> R,
    ) -> Unretried<R> {
        Unretried(attempt(args, &mut Follow::default()))
    }
}

impl<R> Unretried<R> {
    /// The call's own value; there is no error to classify, and no time limit applies.
    #[inline(always)]
    pub fn classify_timed(
        self,
        _classify: impl for<'e> FnOnce(&'e Never) -> Failure<'e>,
        _timeouts: impl FnOnce(PhantomData<Never>) -> Option<fn(TimedOut) -> Never>,
    ) -> R {
        self.0
    }
}

/// The error of a call that is never classified: it has no values.
#[derive(Debug)]
pub enum Never {}

impl core::fmt::Display for Never {
    fn fmt(&self, _: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {}
    }
}

impl std::error::Error for Never {}

/// The access of dynamic SQL, scanned where it is handed to `prepare` or `exec` and read
/// at the execution (a workers-rs statement cannot tell its SQL afterwards cheaply), and
/// the verdicts of `prepare` receivers probed as they are evaluated.
///
/// Starts read-only; scanning SQL that may write, or SQL that is not text, makes it a
/// write for good; a `prepare` whose statement the attribute cannot vouch for makes it
/// out of sight ([`Access::Unseen`]) for good, which the runtime resolves by reading the
/// SQL the statement holds ([`Retrying::access`]). An atomic, so a `Send` future stays
/// `Send`.
#[derive(Debug, Default)]
pub struct SqlSlot(AtomicU8);

// In the order of `Access::and`: a state only ever rises.
const READ: u8 = 0;
const WRITE: u8 = 1;
const UNSEEN: u8 = 2;

impl SqlSlot {
    /// A slot that has seen no SQL yet.
    pub const fn new() -> Self {
        SqlSlot(AtomicU8::new(READ))
    }

    /// Records `sql`'s verdict.
    pub fn record(&self, read_only: bool) {
        if !read_only {
            self.0.fetch_max(WRITE, Ordering::Relaxed);
        }
    }

    /// Records the access a `prepare` receiver's probe found: read-only adds nothing,
    /// `Unseen` leaves the statement to be judged by the SQL it holds, anything else is a
    /// write.
    pub fn join(&self, access: Access) {
        match access {
            Access::ReadOnly => {}
            Access::Unseen => {
                self.0.fetch_max(UNSEEN, Ordering::Relaxed);
            }
            _ => {
                self.0.fetch_max(WRITE, Ordering::Relaxed);
            }
        }
    }

    /// The access of every verdict recorded so far.
    pub fn access(&self) -> Access {
        match self.0.load(Ordering::Relaxed) {
            READ => Access::ReadOnly,
            WRITE => Access::Write,
            _ => Access::Unseen,
        }
    }
}

/// SQL on its way to `prepare`, probed for text it can scan.
pub struct SqlProbe<'s, Q: ?Sized>(pub &'s Q);

/// Picked for SQL that is std's text (`&str`, `String`, `Cow<str>`, `Box<str>`, `Rc<str>`,
/// `Arc<str>`, and borrows of them).
pub trait ViaSqlText {
    /// The SQL's text.
    fn d1_retry_text(&self) -> Option<&str>;
}

impl<Q: Text + ?Sized> ViaSqlText for &SqlProbe<'_, Q> {
    #[inline]
    fn d1_retry_text(&self) -> Option<&str> {
        Some(self.0.text())
    }
}

/// std's text types: what `prepare` makes of them through `Into<String>` (or `exec` through
/// `&str`) is the text they show. A type of the user's may show one text through
/// `AsRef<str>` and convert to another (a query type that renders an `INSERT` around the
/// `SELECT` it holds), so it is not read here ([`ViaSqlOther`]).
pub trait Text {
    /// The text, as `prepare` and `exec` receive it.
    fn text(&self) -> &str;
}

impl Text for str {
    #[inline]
    fn text(&self) -> &str {
        self
    }
}

impl Text for String {
    #[inline]
    fn text(&self) -> &str {
        self
    }
}

impl Text for std::borrow::Cow<'_, str> {
    #[inline]
    fn text(&self) -> &str {
        self
    }
}

impl Text for Box<str> {
    #[inline]
    fn text(&self) -> &str {
        self
    }
}

impl Text for Rc<str> {
    #[inline]
    fn text(&self) -> &str {
        self
    }
}

impl Text for Arc<str> {
    #[inline]
    fn text(&self) -> &str {
        self
    }
}

impl<T: Text + ?Sized> Text for &T {
    #[inline]
    fn text(&self) -> &str {
        T::text(self)
    }
}

impl<T: Text + ?Sized> Text for &mut T {
    #[inline]
    fn text(&self) -> &str {
        T::text(self)
    }
}

/// Picked for anything else handed to `prepare` (a generic `impl Into<String>`, an enum or
/// a query type of the user's): it is not read here. Handed to `exec`, it counts as a
/// write; to `prepare`, its statement is judged by the text it holds
/// ([`SqlSlot::scan_prepared`]).
pub trait ViaSqlOther {
    /// No text to read.
    fn d1_retry_text(&self) -> Option<&str>;
}

impl<Q: ?Sized> ViaSqlOther for SqlProbe<'_, Q> {
    #[inline]
    fn d1_retry_text(&self) -> Option<&str> {
        None
    }
}

impl SqlSlot {
    /// Scans SQL handed to `exec`: text is judged, anything else is a write.
    pub fn scan(&self, sql: Option<&str>) {
        self.record(sql.is_some_and(is_read_only));
    }

    /// Scans SQL handed to `prepare`, which D1 sends to SQLite whole (see
    /// [`is_read_only_prepared`]): text is judged; anything else (a generic
    /// `impl Into<String>`, a query type of the user's) leaves the statement out of sight,
    /// to be judged by the text it holds once `prepare` converted it, which is what D1 runs
    /// ([`statement_sql`](crate::dispatch::statement_sql); a statement that cannot tell
    /// its text counts as a write there).
    pub fn scan_prepared(&self, sql: Option<&str>) {
        match sql {
            Some(sql) => self.record(is_read_only_prepared(sql)),
            None => self.join(Access::Unseen),
        }
    }
}

#[cfg(test)]
// The borrows are the autoref dispatch under test.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;

    /// The function whose SQL is logged when it writes.
    const NAME: OperationName<'static> = OperationName::Named("users.find");

    struct Marked;
    impl D1Receiver for Marked {}

    struct Unmarked;

    #[test]
    fn dispatch_follows_the_mark_through_pointers() {
        fn is_retrying<T: core::any::Any>(_: T) -> bool {
            core::any::TypeId::of::<T>() == core::any::TypeId::of::<Retrying>()
        }
        let marked = Marked;
        assert!(is_retrying((&&Receiver::of(&marked)).d1_retry_site()));
        assert!(is_retrying((&&Receiver::of(&&marked)).d1_retry_site()));
        assert!(is_retrying(
            (&&Receiver::of(&Box::new(Marked))).d1_retry_site()
        ));
        assert!(is_retrying(
            (&&Receiver::of(&Rc::new(Marked))).d1_retry_site()
        ));
        assert!(is_retrying(
            (&&Receiver::of(&Arc::new(Marked))).d1_retry_site()
        ));
        assert!(!is_retrying((&&Receiver::of(&Unmarked)).d1_retry_site()));
        assert!(!is_retrying((&&Receiver::of(&[1, 2])).d1_retry_site()));
    }

    /// A call counts as D1's only when the receiver's type has it as its own, through
    /// every wrapper; a type of the user's marked `D1Receiver` has every call, and an
    /// unmarked one is never retried whatever its calls.
    #[test]
    fn a_call_is_d1_s_only_when_the_type_has_it() {
        // As the expansion asks: the site the probe picks, then the call on it.
        macro_rules! call_access {
            ($receiver:expr, $call:expr) => {{
                let site = (&&Receiver::of(&$receiver)).d1_retry_site();
                site.access(Access::ReadOnly, &$receiver, $call)
            }};
        }
        struct Statement;
        impl D1Receiver for Statement {
            const D1_CALLS: D1Calls = D1Calls::STATEMENT;
        }
        struct Database;
        impl D1Receiver for Database {
            const D1_CALLS: D1Calls = D1Calls::DATABASE;
        }
        let own = |access| access == Access::ReadOnly;

        // A macro, not a loop: each call is a type of its own.
        macro_rules! statement_calls {
            ($($call:ident),+) => {$(
                let call = calls::$call;
                assert!(own(call_access!(Statement, call)), "{call:?}");
                assert!(own(call_access!(Rc::new(&Statement), call)));
                assert_eq!(call_access!(Database, call), Access::NotD1Call, "{call:?}");
                assert_eq!(call_access!(Box::new(&Database), call), Access::NotD1Call);
                assert!(own(call_access!(Marked, call)));
                assert!(own(call_access!(Unmarked, call)));
            )+};
        }
        statement_calls!(First, All, Run, Raw, RawJsValue, Await);
        macro_rules! database_calls {
            ($($call:ident),+) => {$(
                let call = calls::$call;
                assert!(own(call_access!(Database, call)), "{call:?}");
                assert_eq!(call_access!(Statement, call), Access::NotD1Call, "{call:?}");
                assert!(own(call_access!(Marked, call)));
            )+};
        }
        database_calls!(Batch, Exec, Dump);
        assert!(D1Calls::SESSION.has(D1Calls::BATCH));
        assert!(!D1Calls::SESSION.has(D1Calls::EXEC));
        assert!(!D1Calls::SESSION.has(D1Calls::FIRST));
        assert!(!D1Calls::STATEMENT.has(D1Calls::BATCH.with(D1Calls::FIRST)));
        assert_eq!(D1Calls::STATEMENT.with(D1Calls::FIRST), D1Calls::STATEMENT);
        assert!(D1Calls::EVERY.has(D1Calls::DATABASE.with(D1Calls::STATEMENT)));
        #[cfg(feature = "worker")]
        {
            assert_eq!(
                call_access!(worker::send::SendWrapper(Database), calls::Run),
                Access::NotD1Call
            );
            assert_eq!(
                <worker::D1DatabaseSession as D1Receiver>::D1_CALLS,
                D1Calls::SESSION
            );
            assert_eq!(
                <worker::D1Database as D1Receiver>::D1_CALLS,
                D1Calls::DATABASE
            );
            assert_eq!(
                <worker::D1PreparedStatement as D1Receiver>::D1_CALLS,
                D1Calls::STATEMENT
            );
        }
    }

    #[test]
    fn the_slot_scans_text_and_leaves_the_rest_to_the_statement_or_a_write() {
        let slot = SqlSlot::new();
        assert_eq!(slot.access(), Access::ReadOnly);
        slot.scan((&&SqlProbe(&"SELECT 1")).d1_retry_text());
        slot.scan((&&SqlProbe(&String::from("SELECT 2"))).d1_retry_text());
        assert_eq!(slot.access(), Access::ReadOnly);
        slot.scan((&&SqlProbe(&"DELETE FROM t")).d1_retry_text());
        assert_eq!(slot.access(), Access::Write);
        slot.scan((&&SqlProbe(&"SELECT 3")).d1_retry_text());
        assert_eq!(slot.access(), Access::Write, "a write is never forgotten");

        // Handed to `exec`, what is not text is a write; handed to `prepare`, it leaves the
        // statement to the text it holds, and no scanned write is forgotten before that.
        let opaque = SqlSlot::new();
        opaque.scan((&&SqlProbe(&42_u32)).d1_retry_text());
        assert_eq!(opaque.access(), Access::Write);
        let prepared = SqlSlot::new();
        prepared.scan_prepared((&&SqlProbe(&42_u32)).d1_retry_text());
        assert_eq!(prepared.access(), Access::Unseen);
        prepared.scan_prepared((&&SqlProbe(&"SELECT 4")).d1_retry_text());
        assert_eq!(prepared.access(), Access::Unseen);
        let prepared = SqlSlot::new();
        prepared.scan_prepared((&&SqlProbe(&"SELECT 5")).d1_retry_text());
        assert_eq!(prepared.access(), Access::ReadOnly);
        prepared.scan_prepared((&&SqlProbe(&"DELETE FROM t")).d1_retry_text());
        assert_eq!(prepared.access(), Access::Write);
    }

    /// A statement a `read_only` body's `prepare` made of SQL that is not text is judged by
    /// the SQL it holds: a write counts in the attempt's record, or on the thread where the
    /// record cannot be borrowed, and a read does not; one that cannot tell its SQL (not
    /// D1's) counts as a write either way.
    #[test]
    fn a_statement_made_of_sql_that_is_not_text_is_judged_by_what_it_holds() {
        struct Held(&'static str);
        impl D1Receiver for Held {
            fn d1_held_sql_read_only(&self) -> Option<bool> {
                Some(is_read_only_prepared(self.0))
            }
        }
        let record = Attempt::new(NAME);
        Retrying.observe_made(&record, &Held("SELECT 1"));
        assert_eq!(record.dynamic_writes(), 0);
        Retrying.observe_made(&record, &Held("INSERT INTO t VALUES (1)"));
        assert_eq!(record.dynamic_writes(), 1);
        Plain.observe_made(&record, &Unmarked);
        assert_eq!(record.dynamic_writes(), 2, "nothing to read: a write");

        let on_thread = crate::retry::scope::writes();
        Retrying.observe_made_unborrowed(&Held("SELECT 1"), NAME);
        assert_eq!(crate::retry::scope::writes(), on_thread);
        Retrying.observe_made_unborrowed(&Held("DELETE FROM t"), NAME);
        assert_eq!(crate::retry::scope::writes(), on_thread.wrapping_add(1));
        Plain.observe_made_unborrowed(&Unmarked, NAME);
        assert_eq!(crate::retry::scope::writes(), on_thread.wrapping_add(2));
    }

    /// Where the access handed to the site is out of sight, the statement's own SQL decides,
    /// read where the execution begins; a call the type does not have is never retried.
    #[test]
    fn an_unseen_statement_is_read_where_its_execution_begins() {
        struct Held(&'static str);
        impl D1Receiver for Held {
            const D1_CALLS: D1Calls = D1Calls::STATEMENT;
            fn d1_held_sql_read_only(&self) -> Option<bool> {
                Some(is_read_only_prepared(self.0))
            }
        }
        let read = Held("SELECT 1");
        let write = Held("DELETE FROM t");
        let unseen = Access::Unseen;
        assert_eq!(Retrying.access(unseen, &read, calls::Run), Access::ReadOnly);
        assert_eq!(Retrying.access(unseen, &write, calls::Run), Access::Write);
        // `first` and `raw` decode the rows: a write's error may be a row's text.
        assert_eq!(
            Retrying.access(unseen, &write, calls::First),
            Access::DecodedWrite
        );
        assert_eq!(
            Retrying.access(unseen, &write, calls::Raw),
            Access::DecodedWrite
        );
        assert_eq!(
            Retrying.access(Access::Write, &read, calls::Raw),
            Access::DecodedWrite
        );
        assert_eq!(
            Retrying.access(unseen, &read, calls::First),
            Access::ReadOnly
        );
        assert_eq!(
            Retrying.access(unseen, &write, calls::RawJsValue),
            Access::Write
        );
        assert_eq!(
            Retrying.access(unseen, &&read, calls::All),
            Access::ReadOnly
        );
        assert_eq!(
            Retrying.access(Access::ReadOnly, &write, calls::Run),
            Access::ReadOnly,
            "SQL in sight stands"
        );
        assert_eq!(
            Retrying.access(unseen, &read, calls::Batch),
            Access::NotD1Call
        );
        assert_eq!(Retrying.access(unseen, &Marked, calls::Run), unseen);
        assert_eq!(Plain.access(unseen, &read, calls::Run), unseen);
    }

    /// In a `read_only` attempt, a statement made out of sight counts as a write unless the
    /// SQL it holds is read and reads; a call the type does not have, and a receiver that is
    /// not D1's, tell the attempt nothing.
    #[test]
    fn a_read_only_attempt_learns_the_sql_a_statement_holds() {
        struct Held(Option<&'static str>);
        impl D1Receiver for Held {
            const D1_CALLS: D1Calls = D1Calls::STATEMENT;
            fn d1_held_sql_read_only(&self) -> Option<bool> {
                self.0.map(is_read_only_prepared)
            }
        }
        let writes = |observe: &dyn Fn(&Attempt<'_>)| {
            let attempt = Attempt::new(crate::retry::operation::OperationName::Named("t"));
            observe(&attempt);
            attempt.dynamic_writes()
        };
        let read = Held(Some("SELECT 1"));
        let write = Held(Some("DELETE FROM t"));
        let unreadable = Held(None);
        assert_eq!(writes(&|a| Retrying.observe(a, &read, calls::Run)), 0);
        assert_eq!(writes(&|a| Retrying.observe(a, &&read, calls::First)), 0);
        assert_eq!(writes(&|a| Retrying.observe(a, &write, calls::Run)), 1);
        assert_eq!(writes(&|a| Retrying.observe(a, &unreadable, calls::All)), 1);
        assert_eq!(writes(&|a| Retrying.observe(a, &write, calls::Batch)), 0);
        assert_eq!(writes(&|a| Plain.observe(a, &write, calls::Run)), 0);
        // A batch's list, judged as a whole (`batch_sql.rs`).
        assert_eq!(writes(&|a| a.observe_held(Access::ReadOnly)), 0);
        assert_eq!(writes(&|a| a.observe_held(Access::Write)), 1);
        assert_eq!(writes(&|a| a.observe_held(Access::Unseen)), 1);

        // Where the record cannot be borrowed, the same verdicts, counted on the thread.
        let counted = |observe: &dyn Fn()| {
            let before = crate::retry::scope::writes();
            observe();
            crate::retry::scope::writes().wrapping_sub(before)
        };
        assert_eq!(
            counted(&|| Retrying.observe_unborrowed(&read, calls::Run, NAME)),
            0
        );
        assert_eq!(
            counted(&|| Retrying.observe_unborrowed(&write, calls::Run, NAME)),
            1
        );
        assert_eq!(
            counted(&|| Retrying.observe_unborrowed(&unreadable, calls::All, NAME)),
            1
        );
        assert_eq!(
            counted(&|| Retrying.observe_unborrowed(&write, calls::Batch, NAME)),
            0
        );
        assert_eq!(
            counted(&|| Plain.observe_unborrowed(&write, calls::Run, NAME)),
            0
        );
        assert_eq!(
            counted(&|| crate::retry::scope::record_held(Access::ReadOnly, NAME)),
            0
        );
        assert_eq!(
            counted(&|| crate::retry::scope::record_held(Access::Write, NAME)),
            1
        );
        assert_eq!(
            counted(&|| crate::retry::scope::record_held(Access::Unseen, NAME)),
            1
        );
    }

    /// A probed `prepare` receiver's verdict: read-only adds nothing, out of sight stays out
    /// of sight (for the runtime to read the statement) whatever comes before or after, and
    /// anything else is a write.
    #[test]
    fn the_slot_keeps_a_receiver_out_of_sight() {
        let slot = SqlSlot::new();
        slot.join(Access::ReadOnly);
        assert_eq!(slot.access(), Access::ReadOnly);
        slot.join(Access::Unseen);
        assert_eq!(slot.access(), Access::Unseen);
        slot.record(false);
        slot.join(Access::Write);
        slot.join(Access::ReadOnly);
        assert_eq!(slot.access(), Access::Unseen, "never lowered");

        let written = SqlSlot::new();
        written.join(Access::NotD1Call);
        assert_eq!(written.access(), Access::Write);
        written.join(Access::Unseen);
        assert_eq!(written.access(), Access::Unseen);
    }

    /// SQL handed to `prepare` is judged whole: a comment over two lines is a read there,
    /// and a write for `exec`, which runs each line on its own.
    #[test]
    fn the_slot_judges_prepared_sql_whole_and_exec_sql_by_line() {
        let commented = "SELECT 1 /* a\nb */";
        let prepared = SqlSlot::new();
        prepared.scan_prepared((&&SqlProbe(&commented)).d1_retry_text());
        assert_eq!(prepared.access(), Access::ReadOnly);
        prepared.scan_prepared((&&SqlProbe(&"SELECT 1;\nDELETE FROM t")).d1_retry_text());
        assert_eq!(prepared.access(), Access::Write);

        // Not text: judged by what the statement holds, as one out of sight.
        let opaque = SqlSlot::new();
        opaque.scan_prepared((&&SqlProbe(&42_u32)).d1_retry_text());
        assert_eq!(opaque.access(), Access::Unseen);

        let exec = SqlSlot::new();
        exec.scan((&&SqlProbe(&commented)).d1_retry_text());
        assert_eq!(exec.access(), Access::Write);
    }

    /// std's text types are read as the text they hold, borrowed or not; a type of the
    /// user's is not, though it shows text through `AsRef<str>`: it may convert into
    /// another.
    #[test]
    fn only_std_text_is_read() {
        use std::borrow::Cow;
        macro_rules! text {
            ($sql:expr) => {{
                #[allow(unused_imports)]
                use super::{ViaSqlOther as _, ViaSqlText as _};
                (&&SqlProbe(&$sql)).d1_retry_text().map(str::to_owned)
            }};
        }
        let sql = "SELECT 7";
        let owned = String::from(sql);
        let texts = [
            text!(sql),
            text!(*sql),
            text!(owned.clone()),
            text!(&owned),
            text!(&mut owned.clone()),
            text!(Cow::<str>::Borrowed(sql)),
            text!(Cow::<str>::Owned(owned.clone())),
            text!(Box::<str>::from(sql)),
            text!(Rc::<str>::from(sql)),
            text!(Arc::<str>::from(sql)),
            text!(&&Arc::<str>::from(sql)),
        ];
        for (index, text) in texts.iter().enumerate() {
            assert_eq!(text.as_deref(), Some(sql), "text {index}");
        }

        struct Shown(&'static str);
        impl AsRef<str> for Shown {
            fn as_ref(&self) -> &str {
                self.0
            }
        }
        assert_eq!(text!(Shown(sql)), None);
        assert_eq!(text!(&Shown(sql)), None);
    }
}
