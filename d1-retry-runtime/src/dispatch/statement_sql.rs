//! The SQL a D1 statement holds, read when its execution begins, for a statement whose SQL
//! `#[d1_retry]` could not see where it was made: one kept in a field, passed in, returned
//! by a helper, chosen by an arm out of sight, or prepared by a `prepare` the attribute
//! cannot vouch for (one of the user's, any `prepare` reached through a pointer or in a
//! generic function: `d1_prepare.rs`).
//!
//! Such a statement used to count as a write for good, so a read lost its retry after a
//! failure that may have run it. But a D1 statement carries its text: workerd's
//! `D1PreparedStatement` keeps it in its `statement` property, which is what `first`,
//! `all`, `run` and `raw` send to `/query` (and `bind` copies), and the testing kit's keeps
//! it too. Read from the statement the execution runs, the text is the one D1 runs,
//! whoever built the statement, so it is judged as SQL handed to `prepare` is
//! ([`is_read_only_prepared`]).
//!
//! The runtime reads it only where the access the expansion hands it is `Access::Unseen`
//! ([`Retrying::access`](crate::dispatch::receiver::Retrying::access)): SQL seen at compile time
//! costs nothing when it runs, and where it was, the `Unseen` branch folds away. The text
//! comes through [`D1Receiver`]'s hidden method, which D1's statement types implement and
//! every pointer and guard forwards; a statement of any other type (a wrapper of the
//! user's) cannot be read and stays a write, as does a statement whose property is missing
//! or not text (another `workerd`).

use crate::D1Receiver;
#[cfg(feature = "worker")]
use crate::is_read_only_prepared;
use crate::retry::decide::Access;

/// `access`, or, when it is [`Access::Unseen`], the access of the SQL `statement` holds, if
/// it can be read.
///
/// Every retried site asks this (`Retrying::access`). In an optimised build it inlines and
/// folds away where the access is a constant; it is not `#[inline(always)]`, which would
/// also copy the branch into every site of a debug build, for rustc to compile there
/// (BENCHMARKS.md, section 4, twenty-second round).
#[inline]
pub(crate) fn held<R: D1Receiver + ?Sized>(access: Access, statement: &R) -> Access {
    match access {
        Access::Unseen => read(statement),
        access => access,
    }
}

/// The access of the SQL `statement` holds, [`Access::Unseen`] if it cannot be read. Out of
/// line: compiled once per statement type, not at every site.
pub(crate) fn read<R: D1Receiver + ?Sized>(statement: &R) -> Access {
    match statement.d1_held_sql_read_only() {
        Some(read_only) => Access::judged(read_only),
        None => Access::Unseen,
    }
}

/// workerd's statement keeps its text in `statement` (`D1PreparedStatement` in workerd's
/// `d1-api`), the text its executions send. Reading it copies the text out of JavaScript,
/// which is why this runs only for statements out of sight, once per execution.
#[cfg(feature = "worker")]
pub(crate) fn worker_statement_read_only(statement: &worker::D1PreparedStatement) -> Option<bool> {
    use worker::wasm_bindgen::JsValue;
    let text = worker::js_sys::Reflect::get(statement.inner(), &JsValue::from_str("statement"))
        .ok()?
        .as_string()?;
    Some(is_read_only_prepared(&text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::ManuallyDrop;
    use std::rc::Rc;
    use std::sync::Arc;

    use crate::is_read_only_prepared;

    struct Held(&'static str);

    impl D1Receiver for Held {
        fn d1_held_sql_read_only(&self) -> Option<bool> {
            Some(is_read_only_prepared(self.0))
        }
    }

    /// A statement that holds no text it can tell.
    struct Hidden;

    impl D1Receiver for Hidden {
        fn d1_held_sql_read_only(&self) -> Option<bool> {
            None
        }
    }

    /// A type of the user's, marked with the defaults.
    struct Marked;

    impl D1Receiver for Marked {}

    /// What the statement holds decides only where the SQL was out of sight; a type that
    /// cannot be read, or holds no readable text, stays out of sight.
    #[test]
    fn only_an_unseen_statement_is_read() {
        let read = Held("SELECT id FROM users");
        let write = Held("INSERT INTO users (id) VALUES (1)");
        let cases = [
            (held(Access::Unseen, &read), Access::ReadOnly),
            (held(Access::Unseen, &write), Access::Write),
            (held(Access::Write, &read), Access::Write),
            (held(Access::ReadOnly, &write), Access::ReadOnly),
            (held(Access::NotD1Call, &read), Access::NotD1Call),
            (held(Access::Unseen, &Hidden), Access::Unseen),
            (held(Access::Unseen, &Marked), Access::Unseen),
        ];
        for (i, (got, expected)) in cases.into_iter().enumerate() {
            assert_eq!(got, expected, "case {i}");
        }
    }

    /// Through the pointers and guards a receiver is reached by, the statement inside is
    /// read.
    #[test]
    #[allow(clippy::vec_init_then_push)]
    fn pointers_and_guards_are_seen_through() {
        let read = || Held("SELECT 1");
        let unseen = Access::Unseen;
        let cell = core::cell::RefCell::new(read());
        let lock = std::sync::Mutex::new(read());
        let rw = std::sync::RwLock::new(read());
        // One statement each: in one `vec![..]` every guard would live to its end, and a
        // `RefCell` borrowed both ways, or a lock held twice, would not pass its own checks.
        let mut got = Vec::new();
        got.push(held(unseen, &&read()));
        got.push(held(unseen, &&&read()));
        got.push(held(unseen, &&mut read()));
        got.push(held(unseen, &Box::new(read())));
        got.push(held(unseen, &Rc::new(read())));
        got.push(held(unseen, &Arc::new(read())));
        got.push(held(unseen, &ManuallyDrop::new(read())));
        got.push(held(unseen, &cell.borrow()));
        got.push(held(unseen, &cell.borrow_mut()));
        got.push(held(unseen, &lock.lock().unwrap()));
        got.push(held(unseen, &rw.read().unwrap()));
        got.push(held(unseen, &rw.write().unwrap()));
        assert_eq!(got, [Access::ReadOnly; 12]);
        assert_eq!(held(unseen, &Rc::new(Hidden)), Access::Unseen);
        #[cfg(feature = "worker")]
        {
            let sent = worker::send::SendWrapper(Held("INSERT INTO t VALUES (1)"));
            assert_eq!(held(unseen, &sent), Access::Write);
            assert_eq!(
                held(unseen, &worker::send::SendWrapper(read())),
                Access::ReadOnly
            );
        }
    }

    #[cfg(feature = "testing")]
    #[test]
    fn the_testing_kit_s_statement_is_read_as_prepared() {
        let db = crate::testing::D1Database::open_in_memory().unwrap();
        let multi_line = db.prepare("SELECT id,\n  replace FROM users");
        assert_eq!(held(Access::Unseen, &multi_line), Access::ReadOnly);
        let write = db.prepare("DELETE FROM users");
        assert_eq!(held(Access::Unseen, &write), Access::Write);
        // The database holds no statement.
        assert_eq!(held(Access::Unseen, &db), Access::Unseen);
    }
}
