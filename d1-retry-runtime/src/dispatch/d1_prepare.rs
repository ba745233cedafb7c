//! Whose `prepare` the attribute judges by the SQL handed to it: D1's own database and
//! session, and nothing else.
//!
//! `#[d1_retry]` sees `db.prepare("SELECT ..")` before types are known, and a read judged
//! by its `SELECT` is retried after a failure that may have run it. That is only safe if
//! the `prepare` Rust calls there is D1's, which prepares the text it is handed. Rust's
//! method lookup tries the receiver's type, then each type it dereferences to, and at each
//! a method that takes the value, then one that borrows it; D1's `prepare(&self)` is an
//! inherent method of the database, found first only where the receiver is the database or
//! a reference to it. Anywhere else a trait of the user's can be found before it:
//!
//! - through a pointer or a guard (`Box`, `Rc`, `Arc`, `&mut`, a `RefCell`'s or a lock's
//!   guard, `SendWrapper`, a reference to a reference), a trait's `prepare` for that type;
//! - in a generic function (`D: D1Receiver + MyPrepare`), only a bound's `prepare` can be
//!   called, never D1's;
//! - on a type of the user's own, its own `prepare`.
//!
//! Such a `prepare` may return any statement (an archiving insert for the rows its
//! argument selects), so the attribute does not judge it by its argument: the statement
//! is out of sight, and its execution reads the SQL the statement holds when it begins
//! ([`statement_sql`](crate::dispatch::statement_sql)), the text D1 runs whoever prepared it.
//!
//! The probe is autoref dispatch on the receiver's type, as for the execution site
//! (`receiver.rs`), on a mark of its own, [`D1Prepare`], implemented for the concrete types
//! alone. A generic `D` cannot prove it from a `D1Receiver` bound, so its dispatch picks
//! [`ViaOtherPrepare`] when the function is type-checked, whatever `D` turns out to be. (A
//! constant of `D1Receiver` would not do: it is evaluated for the concrete type.) The one
//! `prepare` left on those types that is not D1's, a trait's that takes the database by
//! value, is refused at compile time (`by_value_prepare.rs`).

use crate::dispatch::receiver::Receiver;
use crate::retry::decide::Access;

/// Marks a database type whose `prepare(sql)` prepares `sql` as it is, so that
/// `#[d1_retry]` judges a statement `value.prepare(sql)` makes by `sql`, at compile time.
///
/// Implemented for D1's database and session (the `worker` crate's, and the testing
/// kit's) and a reference to one: there D1's `prepare(&self)` is the method Rust's lookup
/// finds first. It is not implemented through pointers, guards or a second reference
/// (`Rc<D1Database>`, `&&D1Database`), and a generic `D: D1Receiver` cannot prove it: there a
/// trait's `prepare` of yours can be the one called (`impl MyPrepare for Arc<D1Database>`,
/// or a bound's in a generic function), which may return any statement. A statement made
/// there is judged by the SQL it holds when its execution begins, which D1's statements
/// tell (a statement of another type counts as a write).
///
/// A database type of your own marked [`D1Receiver`](crate::D1Receiver) (a test double) whose own `prepare`
/// prepares its argument can say so, for the type and for a reference to it if you call
/// `prepare` through one:
///
/// ```
/// # struct MyDb;
/// impl d1_retry_runtime::D1Receiver for MyDb {}
/// impl d1_retry_runtime::D1Prepare for MyDb {}
/// impl d1_retry_runtime::D1Prepare for &MyDb {}
/// ```
///
/// A wrong mark makes a write prepared through it be retried as the read its argument
/// shows.
pub trait D1Prepare {}

/// Calls `$then!` with D1's database and session types, each under the feature that
/// brings it: the one list of the types whose `prepare` is D1's, for [`D1Prepare`] and for
/// the by-value check (`by_value_prepare.rs`), so that the two cannot drift.
macro_rules! d1_databases {
    ($then:ident) => {
        $then!(
            #[cfg(feature = "worker")]
            worker::D1Database,
            #[cfg(feature = "worker")]
            worker::D1DatabaseSession,
            #[cfg(feature = "testing")]
            crate::testing::D1Database,
            #[cfg(feature = "testing")]
            crate::testing::D1DatabaseSession,
        );
    };
}
pub(crate) use d1_databases;

macro_rules! d1_prepare {
    ($($(#[$cfg:meta])* $database:ty),* $(,)?) => {$(
        $(#[$cfg])*
        impl D1Prepare for $database {}
        $(#[$cfg])*
        impl D1Prepare for &$database {}
    )*};
}

d1_databases!(d1_prepare);

/// Picked for D1's database and session ([`D1Prepare`]).
pub trait ViaD1Prepare {
    /// What a `prepare(sql)` on this receiver adds to the access of `sql`: nothing, since
    /// D1's `prepare` prepares the text it is given.
    fn d1_retry_prepare(&self) -> Access;
}

impl<R: D1Prepare + ?Sized> ViaD1Prepare for &Receiver<R> {
    #[inline(always)]
    fn d1_retry_prepare(&self) -> Access {
        Access::ReadOnly
    }
}

/// Picked for every other receiver.
pub trait ViaOtherPrepare {
    /// What a `prepare(sql)` on this receiver adds to the access of `sql`: the statement
    /// is out of sight ([`Access::Unseen`]), judged by the SQL it holds when it runs.
    fn d1_retry_prepare(&self) -> Access;
}

impl<R: ?Sized> ViaOtherPrepare for Receiver<R> {
    #[inline(always)]
    fn d1_retry_prepare(&self) -> Access {
        Access::Unseen
    }
}

#[cfg(test)]
// The borrows are the autoref dispatch under test.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;
    use crate::D1Receiver;

    /// What a `prepare` on `$receiver` adds to its statement's access, as the expansion
    /// asks. A macro, not a function: the dispatch must see each concrete type.
    macro_rules! prepare_access {
        ($receiver:expr) => {
            (&&Receiver::of(&$receiver)).d1_retry_prepare()
        };
    }

    /// A type of the user's, marked with every call.
    struct Marked;
    impl D1Receiver for Marked {}

    /// In a generic function, the dispatch is picked for the type parameter, whatever it
    /// turns out to be: never D1's.
    fn generic<D: D1Receiver>(database: &D) -> Access {
        prepare_access!(*database)
    }

    #[test]
    fn a_type_of_the_user_s_is_never_d1_s() {
        assert_eq!(prepare_access!(Marked), Access::Unseen);
        assert_eq!(prepare_access!(&Marked), Access::Unseen);
        assert_eq!(generic(&Marked), Access::Unseen);
    }

    /// Only D1's database and session, and a reference to one, have D1's `prepare`
    /// wherever it is called: not through a pointer or a guard, a second reference, or a
    /// type parameter.
    #[cfg(feature = "testing")]
    #[test]
    fn only_d1_s_database_and_session_are_d1_s() {
        use core::cell::RefCell;
        use core::mem::ManuallyDrop;
        use std::rc::Rc;
        use std::sync::{Arc, Mutex, RwLock};

        use crate::testing::D1Database;

        let db = D1Database::open_in_memory().unwrap();
        let session = db.with_session(None).unwrap();
        assert_eq!(prepare_access!(db), Access::ReadOnly);
        assert_eq!(prepare_access!(&db), Access::ReadOnly);
        assert_eq!(prepare_access!(session), Access::ReadOnly);
        assert_eq!(prepare_access!(&session), Access::ReadOnly);
        assert_eq!(
            prepare_access!(D1Database::prepare(&db, "SELECT 1")),
            Access::Unseen,
            "a statement's `prepare` is the user's"
        );

        let cell = RefCell::new(db.clone());
        let lock = Mutex::new(db.clone());
        let rw = RwLock::new(db.clone());
        let pointers = [
            prepare_access!(&&db),
            prepare_access!(&&&db),
            prepare_access!(&mut db.clone()),
            prepare_access!(Box::new(db.clone())),
            prepare_access!(Rc::new(db.clone())),
            prepare_access!(Arc::new(db.clone())),
            prepare_access!(&Arc::new(db.clone())),
            prepare_access!(Rc::new(&db)),
            prepare_access!(ManuallyDrop::new(db.clone())),
            prepare_access!(cell.borrow()),
            prepare_access!(lock.lock().unwrap()),
            prepare_access!(rw.read().unwrap()),
            generic(&db),
            generic(&session),
        ];
        assert_eq!(pointers, [Access::Unseen; 14]);
        // Apart: in the array above, the shared borrow would live to its end.
        assert_eq!(prepare_access!(cell.borrow_mut()), Access::Unseen);
    }

    #[cfg(feature = "worker")]
    #[test]
    fn worker_s_database_and_session_are_d1_s() {
        assert_eq!(
            (&&Receiver::<&worker::D1DatabaseSession>::named()).d1_retry_prepare(),
            Access::ReadOnly
        );
        assert_eq!(
            (&&Receiver::<worker::send::SendWrapper<worker::D1Database>>::named())
                .d1_retry_prepare(),
            Access::Unseen
        );
        assert_eq!(
            (&&Receiver::<worker::D1Database>::named()).d1_retry_prepare(),
            Access::ReadOnly
        );
    }
}
