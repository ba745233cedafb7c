//! The check that a `prepare` the attribute judges by its SQL is D1's own, when the
//! database is a value the call could take by value.
//!
//! `#[d1_retry]` judges a statement by the SQL handed to `prepare` when the receiver is D1's
//! database or session, or a reference to one (`d1_prepare.rs`), where D1's `prepare(&self)`
//! is found before any trait's that borrows. But Rust's method lookup tries a method that
//! takes the receiver by value before one that borrows it:
//! a trait of the user's with `fn prepare(self, ..)` for `D1Database`, in scope where
//! `env.d1("DB")?.prepare("SELECT ..")` is written, runs instead of D1's `prepare(&self)`,
//! and may return any statement. Judged a read by its `SELECT`, a write it returned was run
//! again after a failure that may have run it.
//!
//! The expansion repeats the lookup, in code that never runs, on a value of the same type
//! when it is one of D1's database types, and in the same scope:
//! `(&&ByValue::of(&db)).database().prepare(())` with [`PrepareTakingTheDatabaseByValue`]
//! imported. That trait takes the database by value too, so it is found at the same step as
//! such a method of the user's: with one, the call is ambiguous, a compile error (E0034) at
//! the user's `prepare` that names both traits; without one, the lookup picks this trait and
//! nothing happens. A `prepare` that borrows the database, D1's own or a trait's for
//! `&D1Database`, is found a step later, after D1's, and changes nothing, as in the user's
//! call.
//!
//! Only the database types themselves are looked up on. Through a reference, a method that
//! takes the database by value cannot be called (it would move it out), so the user's call
//! could not pick one; but the lookup here would, and fail to compile where the user's code
//! is fine. Through a `Box`, which a method can move out of, and any other pointer or
//! guard, the statement is not judged by its argument at all (`d1_prepare.rs` says why),
//! so there is nothing to check. Any other receiver is looked up on
//! [`NotADatabase`] instead, where only a `prepare` of the user's for every type (a blanket
//! `impl<T>`) is found beside this trait's: that one would run for any receiver, and is
//! refused alike. (A by-value `prepare` that `worker::query!` calls is not caught: the
//! attribute does not rewrite that call.)

use core::marker::PhantomData;

/// A `prepare` that takes a D1 database by value, for D1's database types (and the
/// stand-in [`NotADatabase`]): the attribute's check that no `prepare` of the user's does
/// (see the module). Not meant to be
/// called; a compile error that names it means a `prepare` of yours takes a D1 database by
/// value where `#[d1_retry]` would judge its statement by its argument. Rename that method,
/// or call it by its trait's path (`MyTrait::prepare(db, sql)`), whose statement is then
/// judged by the SQL it holds when it runs.
pub trait PrepareTakingTheDatabaseByValue: Sized {
    /// Returns the database; only ever named in code that never runs.
    #[inline(always)]
    fn prepare<A>(self, _sql: A) -> Self {
        self
    }
}

/// What [`PrepareTakingTheDatabaseByValue`] is looked up on when the receiver is not one of
/// D1's database types.
pub struct NotADatabase;

impl PrepareTakingTheDatabaseByValue for NotADatabase {}

/// The receiver's type, for the autoref dispatch that picks what the lookup runs on:
/// `(&&ByValue::of(&db)).database()`.
pub struct ByValue<T: ?Sized>(PhantomData<T>);

impl<T: ?Sized> ByValue<T> {
    /// The type of `receiver`, which is not read.
    #[inline(always)]
    pub fn of(_receiver: &T) -> Self {
        ByValue(PhantomData)
    }
}

/// Picked for D1's database types: a value of the type itself.
pub trait ViaD1Database {
    /// The database type.
    type Database;
    /// A database, for the lookup in code that never runs.
    fn database(&self) -> Self::Database;
}

/// Picked for every other receiver: [`NotADatabase`].
pub trait ViaOtherDatabase {
    /// The stand-in, for the lookup in code that never runs.
    fn database(&self) -> NotADatabase;
}

impl<T: ?Sized> ViaOtherDatabase for ByValue<T> {
    #[inline(always)]
    fn database(&self) -> NotADatabase {
        NotADatabase
    }
}

macro_rules! databases {
    ($($(#[$cfg:meta])* $database:ty),* $(,)?) => {
        $(
            $(#[$cfg])*
            impl PrepareTakingTheDatabaseByValue for $database {}

            $(#[$cfg])*
            impl ViaD1Database for &ByValue<$database> {
                type Database = $database;
                fn database(&self) -> $database {
                    unreachable!("d1-retry: only named in code that never runs")
                }
            }
        )*
    };
}

crate::dispatch::d1_prepare::d1_databases!(databases);

#[cfg(test)]
mod tests {
    use super::*;

    /// The lookup the expansion repeats: with the trait in scope, a database taken by value
    /// finds the trait's `prepare` (its type says so), one borrowed finds its own.
    #[test]
    fn a_by_value_prepare_is_found_before_a_borrowing_one() {
        struct Database;
        impl Database {
            fn prepare(&self, _sql: &str) -> &'static str {
                "the database's own"
            }
        }
        impl PrepareTakingTheDatabaseByValue for Database {}
        let by_value: Database = Database.prepare("SELECT 1");
        // The borrow is the point: without it, the trait's `prepare` is found first.
        #[allow(clippy::needless_borrow)]
        let own = (&by_value).prepare("SELECT 1");
        assert_eq!(own, "the database's own");
    }
}
