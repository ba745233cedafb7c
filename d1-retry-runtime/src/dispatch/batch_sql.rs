//! The SQL of a `batch`'s statements, read when the batch begins, for a list `#[d1_retry]`
//! could not see where it was written: collected by an iterator, built by a helper, passed
//! in (`db.batch(statements).await`).
//!
//! Such a list used to count as a write for good, so a batch of reads lost its retry after
//! a failure that may have run it. But the list holds D1 statements, and each tells the SQL
//! it holds (`statement_sql.rs`), so the batch is judged by what it will run, as a batch
//! written out is: read-only only if every statement reads. The read stops at the first
//! statement that may write (a batch of inserts reads one text); a statement whose SQL
//! cannot be read leaves the batch out of sight, a write.
//!
//! The expansion asks this where a batch's one argument has been evaluated and the
//! execution has not begun (the attribute's `executions/finder/execution.rs`: in the loop
//! of a batch awaited where it is written, or before a stored batch's arguments are handed
//! over), and for a `read_only` body's batch (`Attempt::observe_held`); a list of any
//! other type than D1's statements (a wrapper of the user's) is not read.

use crate::D1Receiver;
use crate::retry::decide::Access;

/// A `batch`'s list of statements, probed for D1 statements whose SQL can be read.
pub struct HeldBatch<'a, L: ?Sized>(pub &'a L);

/// Picked for a `Vec` or an array of [`D1Receiver`] statements.
pub trait ViaD1Statements {
    /// The access of the statements the list holds.
    fn d1_retry_batch_access(&self) -> Access;
}

impl<S: D1Receiver> ViaD1Statements for &HeldBatch<'_, Vec<S>> {
    #[inline]
    fn d1_retry_batch_access(&self) -> Access {
        statements(self.0)
    }
}

impl<S: D1Receiver, const N: usize> ViaD1Statements for &HeldBatch<'_, [S; N]> {
    #[inline]
    fn d1_retry_batch_access(&self) -> Access {
        statements(self.0)
    }
}

/// Picked for any other list: out of sight.
pub trait ViaOtherStatements {
    /// [`Access::Unseen`]: nothing is read.
    fn d1_retry_batch_access(&self) -> Access;
}

impl<L: ?Sized> ViaOtherStatements for HeldBatch<'_, L> {
    #[inline(always)]
    fn d1_retry_batch_access(&self) -> Access {
        Access::Unseen
    }
}

/// Read-only if every statement holds SQL that reads; a write at the first that may write;
/// out of sight if one cannot be read (and none writes).
fn statements<S: D1Receiver>(list: &[S]) -> Access {
    let mut access = Access::ReadOnly;
    for statement in list {
        match crate::dispatch::statement_sql::read(statement) {
            Access::ReadOnly => {}
            Access::Write => return Access::Write,
            _ => access = Access::Unseen,
        }
    }
    access
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::is_read_only_prepared;
    use core::cell::Cell;

    /// A statement that counts how often its SQL is read.
    struct Held<'c>(Option<&'static str>, &'c Cell<u32>);

    impl D1Receiver for Held<'_> {
        fn d1_held_sql_read_only(&self) -> Option<bool> {
            self.1.set(self.1.get() + 1);
            self.0.map(is_read_only_prepared)
        }
    }

    #[test]
    fn a_batch_is_read_only_only_if_every_statement_reads() {
        let reads = Cell::new(0);
        let held = |sql| Held(sql, &reads);
        let all_read = vec![held(Some("SELECT 1")), held(Some("SELECT 2"))];
        assert_eq!(
            (&&HeldBatch(&all_read)).d1_retry_batch_access(),
            Access::ReadOnly
        );
        assert_eq!(reads.replace(0), 2, "every statement read");

        let write_first = [held(Some("DELETE FROM t")), held(Some("SELECT 1"))];
        assert_eq!(
            (&&HeldBatch(&write_first)).d1_retry_batch_access(),
            Access::Write
        );
        assert_eq!(reads.replace(0), 1, "the read stops at the first write");

        let read_then_write = vec![
            held(Some("SELECT 1")),
            held(Some("INSERT INTO t DEFAULT VALUES")),
        ];
        assert_eq!(
            (&&HeldBatch(&read_then_write)).d1_retry_batch_access(),
            Access::Write
        );

        let unreadable = vec![held(None), held(Some("SELECT 1"))];
        assert_eq!(
            (&&HeldBatch(&unreadable)).d1_retry_batch_access(),
            Access::Unseen
        );
        let unreadable_then_write = vec![held(None), held(Some("UPDATE t SET a = 1"))];
        assert_eq!(
            (&&HeldBatch(&unreadable_then_write)).d1_retry_batch_access(),
            Access::Write
        );

        let empty: Vec<Held<'_>> = Vec::new();
        assert_eq!(
            (&&HeldBatch(&empty)).d1_retry_batch_access(),
            Access::ReadOnly
        );
    }

    // The probe is called as the expansion calls it, through `&&`, which the trait picked
    // here does not need.
    #[allow(clippy::needless_borrow)]
    #[test]
    fn a_list_of_anything_else_is_out_of_sight() {
        let names = vec!["SELECT 1"];
        assert_eq!(
            (&&HeldBatch(&names)).d1_retry_batch_access(),
            Access::Unseen
        );
        let reads = Cell::new(0);
        let slice: &[Held<'_>] = &[Held(Some("SELECT 1"), &reads)];
        assert_eq!(
            (&&HeldBatch(&slice)).d1_retry_batch_access(),
            Access::Unseen
        );
    }
}
