//! The SQL a D1 statement holds, read when it runs, for a statement whose SQL `#[d1_retry]`
//! could not see where it is made: one kept in a field, passed in, returned by a helper,
//! or chosen by an arm out of sight.
//!
//! Such a statement used to count as a write for good, so a read lost its retry after a
//! failure that may have run it. But a D1 statement carries its text: workerd's
//! `D1PreparedStatement` keeps it in its `statement` property, which is what `first`,
//! `all`, `run` and `raw` send to `/query` (and `bind` copies), and the testing kit's keeps
//! it too. Read from the statement the execution runs, the text is the one D1 runs,
//! whoever built the statement, so it is judged as SQL handed to `prepare` is
//! ([`is_read_only_prepared`]).
//!
//! The expansion asks only where the SQL was out of sight (`Access::Unseen`): SQL seen at
//! compile time costs nothing when it runs. A statement of any other type (a wrapper of
//! the user's, a generic receiver) cannot be read and stays a write, as does a statement
//! whose property is missing or not text (another `workerd`).

use core::mem::ManuallyDrop;
use std::cell::{Ref, RefMut};
use std::rc::Rc;
use std::sync::{Arc, MutexGuard, RwLockReadGuard, RwLockWriteGuard};

use crate::decide::Access;
#[cfg(any(feature = "worker", feature = "testing", test))]
use crate::is_read_only_prepared;

/// A D1 statement whose SQL can be read where it runs.
pub trait StatementSql {
    /// Whether the statement's SQL is read-only, as a prepared statement's; `None` when
    /// the text cannot be read.
    fn sql_read_only(&self) -> Option<bool>;
}

impl<T: StatementSql + ?Sized> StatementSql for &T {
    fn sql_read_only(&self) -> Option<bool> {
        T::sql_read_only(self)
    }
}

impl<T: StatementSql + ?Sized> StatementSql for &mut T {
    fn sql_read_only(&self) -> Option<bool> {
        T::sql_read_only(self)
    }
}

/// The wrappers [`D1Receiver`](crate::D1Receiver) sees through, which run the statement
/// they hold.
macro_rules! through {
    ($($wrapper:ty),* $(,)?) => {
        $(
            impl<T: StatementSql + ?Sized> StatementSql for $wrapper {
                fn sql_read_only(&self) -> Option<bool> {
                    T::sql_read_only(self)
                }
            }
        )*
    };
}

crate::receiver::through_pointers!(through);

#[cfg(feature = "worker")]
impl<T: StatementSql> StatementSql for worker::send::SendWrapper<T> {
    fn sql_read_only(&self) -> Option<bool> {
        T::sql_read_only(self)
    }
}

/// workerd's statement keeps its text in `statement` (`D1PreparedStatement` in workerd's
/// `d1-api`), the text its executions send. Reading it copies the text out of JavaScript,
/// which is why this runs only for statements out of sight, once per execution.
#[cfg(feature = "worker")]
impl StatementSql for worker::D1PreparedStatement {
    fn sql_read_only(&self) -> Option<bool> {
        use worker::wasm_bindgen::JsValue;
        let text = worker::js_sys::Reflect::get(self.inner(), &JsValue::from_str("statement"))
            .ok()?
            .as_string()?;
        Some(is_read_only_prepared(&text))
    }
}

#[cfg(feature = "testing")]
impl StatementSql for crate::testing::D1PreparedStatement {
    fn sql_read_only(&self) -> Option<bool> {
        Some(is_read_only_prepared(self.sql()))
    }
}

/// The receiver of an execution whose SQL was out of sight, probed for a statement whose
/// SQL can be read.
pub struct StatementProbe<'r, R: ?Sized>(pub &'r R);

/// Picked for a statement whose SQL can be read (`StatementSql`).
pub trait ViaStatementSql {
    /// `seen`, or, when it is [`Access::Unseen`], the access of the SQL the statement
    /// holds, if it can be read.
    fn d1_access(&self, seen: Access) -> Access;
}

impl<R: StatementSql + ?Sized> ViaStatementSql for &StatementProbe<'_, R> {
    #[inline]
    fn d1_access(&self, seen: Access) -> Access {
        match seen {
            Access::Unseen => read(self.0),
            seen => seen,
        }
    }
}

/// Out of line: compiled once per statement type, not at every site.
fn read<R: StatementSql + ?Sized>(statement: &R) -> Access {
    match statement.sql_read_only() {
        Some(read_only) => Access::judged(read_only),
        None => Access::Unseen,
    }
}

/// Picked for every other receiver: what was seen stands.
pub trait ViaOtherStatement {
    /// `seen`, unchanged.
    fn d1_access(&self, seen: Access) -> Access;
}

impl<R: ?Sized> ViaOtherStatement for StatementProbe<'_, R> {
    #[inline(always)]
    fn d1_access(&self, seen: Access) -> Access {
        seen
    }
}

#[cfg(test)]
// The borrows are the autoref dispatch under test.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;

    struct Held(&'static str);

    impl StatementSql for Held {
        fn sql_read_only(&self) -> Option<bool> {
            Some(is_read_only_prepared(self.0))
        }
    }

    struct Hidden;

    impl StatementSql for Hidden {
        fn sql_read_only(&self) -> Option<bool> {
            None
        }
    }

    /// What the statement holds decides only where the SQL was out of sight; a type that
    /// cannot be read, or holds no readable text, stays out of sight.
    #[test]
    fn only_an_unseen_statement_is_read() {
        let read = Held("SELECT id FROM users");
        let write = Held("INSERT INTO users (id) VALUES (1)");
        let cases = [
            (
                (&&StatementProbe(&read)).d1_access(Access::Unseen),
                Access::ReadOnly,
            ),
            (
                (&&StatementProbe(&write)).d1_access(Access::Unseen),
                Access::Write,
            ),
            (
                (&&StatementProbe(&read)).d1_access(Access::Write),
                Access::Write,
            ),
            (
                (&&StatementProbe(&write)).d1_access(Access::ReadOnly),
                Access::ReadOnly,
            ),
            (
                (&&StatementProbe(&Hidden)).d1_access(Access::Unseen),
                Access::Unseen,
            ),
            (
                (&&StatementProbe(&"SELECT 1")).d1_access(Access::Unseen),
                Access::Unseen,
            ),
        ];
        for (i, (got, expected)) in cases.into_iter().enumerate() {
            assert_eq!(got, expected, "case {i}");
        }
    }

    /// Through the wrappers a receiver is reached by, the statement inside is read.
    #[test]
    #[allow(clippy::vec_init_then_push)]
    fn wrappers_are_seen_through() {
        let read = || Held("SELECT 1");
        let unseen = Access::Unseen;
        let cell = core::cell::RefCell::new(read());
        let lock = std::sync::Mutex::new(read());
        let rw = std::sync::RwLock::new(read());
        // One statement each: in one `vec![..]` every guard would live to its end, and a
        // `RefCell` borrowed both ways, or a lock held twice, would not pass its own checks.
        let mut got = Vec::new();
        got.push((&&StatementProbe(&&read())).d1_access(unseen));
        got.push((&&StatementProbe(&&mut read())).d1_access(unseen));
        got.push((&&StatementProbe(&Box::new(read()))).d1_access(unseen));
        got.push((&&StatementProbe(&Rc::new(read()))).d1_access(unseen));
        got.push((&&StatementProbe(&Arc::new(read()))).d1_access(unseen));
        got.push((&&StatementProbe(&ManuallyDrop::new(read()))).d1_access(unseen));
        got.push((&&StatementProbe(&cell.borrow())).d1_access(unseen));
        got.push((&&StatementProbe(&cell.borrow_mut())).d1_access(unseen));
        got.push((&&StatementProbe(&lock.lock().unwrap())).d1_access(unseen));
        got.push((&&StatementProbe(&rw.read().unwrap())).d1_access(unseen));
        got.push((&&StatementProbe(&rw.write().unwrap())).d1_access(unseen));
        assert_eq!(got, [Access::ReadOnly; 11]);
    }

    #[cfg(feature = "testing")]
    #[test]
    fn the_testing_kit_s_statement_is_read_as_prepared() {
        let db = crate::testing::D1Database::open_in_memory().unwrap();
        let multi_line = db.prepare("SELECT id,\n  replace FROM users");
        assert_eq!(
            (&&StatementProbe(&multi_line)).d1_access(Access::Unseen),
            Access::ReadOnly
        );
        let write = db.prepare("DELETE FROM users");
        assert_eq!(
            (&&StatementProbe(&write)).d1_access(Access::Unseen),
            Access::Write
        );
    }
}
