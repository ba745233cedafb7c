//! The retry table: the one place that decides whether a failed D1 call is tried again.
//!
//! Everything that retries (an execution inside a `#[d1_retry]` function, the whole-body
//! loop of `#[d1_retry(read_only)]` and `#[d1_retry(idempotent)]`, [`Retry`](crate::Retry)
//! and `D1Retry`) gathers the [`Facts`] of a failure and asks [`decide`]. It is a pure
//! function: no clock, no randomness, no logging, so the table below is tested as a table.
//!
//! | the failed work ([`Access`]) | not executed | maybe executed | permanent |
//! |---|---|---|---|
//! | [`ReadOnly`](Access::ReadOnly): read-only SQL | retry | retry | never |
//! | [`Idempotent`](Access::Idempotent): declared safe to run twice | retry | retry | never |
//! | [`Write`](Access::Write): SQL that may write | retry | never | never |
//! | [`Unseen`](Access::Unseen): SQL neither the macro nor the statement could show, counted as a write | retry | never | never |
//! | [`Unretryable`](Access::Unretryable): a `read_only` attempt that ran a write | never | never | never |
//! | [`WroteBefore`](Access::WroteBefore): an attempt in which a D1 call that may write ran before the failure | never | never | never |
//! | [`NotD1Call`](Access::NotD1Call): a method of the user's named like a D1 call, on a D1 type without one of that name | never | never | never |
//!
//! A retry the table allows is still withheld, in this order, when an enclosing attempt
//! that will run the call again decides instead ([`Withheld::Nested`]), when the call has used its
//! `max_attempts - 1` retries ([`Withheld::Exhausted`]), when the retry budget is spent
//! ([`Withheld::Budget`]), or when the call's deadline would pass before the retry's wait
//! ends ([`Withheld::Deadline`]).

use crate::FailureClass;

/// What running the failed work again could do to the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Every statement of the work is read-only.
    ReadOnly,
    /// The work is declared safe to run twice (`idempotent`).
    Idempotent,
    /// The work may write.
    Write,
    /// The work's SQL could not be seen where it was written, so it counts as a write unless
    /// it is read when it runs: a D1 statement built by a helper, passed in or kept in a
    /// field tells its SQL then, and so do the statements of a `batch` of a list
    /// collected elsewhere; a statement of a type that cannot tell its SQL does not.
    Unseen,
    /// A `read_only` attempt ran SQL that may write, before the failure: never retried.
    Unretryable,
    /// An attempt that may write (a [`Retry`](crate::Retry)'s) made a D1 call, through
    /// d1-retry, that may have written before the attempt failed: running the attempt
    /// again would make that call again. Never retried.
    WroteBefore,
    /// A call named like one of D1's on a D1 type that has no method of that name: a
    /// method of the user's own (an extension trait's `first` on `D1Database`), which may
    /// make several D1 calls, so running it again could repeat one that completed. Made
    /// once, as written: never retried.
    NotD1Call,
    /// SQL that may write, run by `first` or `raw`, which decode the rows D1 returned in
    /// the same call: their error may be a row's own text (a deserialization error's
    /// message, such as a `TryFrom` that rejects a value and echoes it), made after the
    /// statement ran, and a row's text may read like D1's "not executed" messages. So
    /// whatever the failure's class, the write may have run: never retried, and counted
    /// as a write made.
    DecodedWrite,
}

impl Access {
    /// `ReadOnly` when `read_only`, else `Write`: the verdict of
    /// [`is_read_only_prepared`](crate::is_read_only_prepared) or
    /// [`is_read_only`](crate::is_read_only).
    #[must_use]
    pub const fn judged(read_only: bool) -> Self {
        if read_only {
            Access::ReadOnly
        } else {
            Access::Write
        }
    }

    /// The access of work made of both `self` and `other` (a `batch`): the less safe.
    ///
    /// Inlinable, so that a call site's access, joined from parts known at compile time,
    /// folds into one constant in an optimised build (`inline(always)` would also inline it
    /// in debug builds, for rustc and LLVM to compile at every call site).
    #[must_use]
    #[inline]
    pub const fn and(self, other: Access) -> Self {
        const fn rank(access: Access) -> u8 {
            match access {
                Access::ReadOnly => 0,
                Access::Idempotent => 1,
                Access::Write => 2,
                Access::Unseen => 3,
                Access::DecodedWrite => 4,
                Access::WroteBefore => 5,
                Access::Unretryable => 6,
                Access::NotD1Call => 7,
            }
        }
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }

    /// Whether every statement was read-only (the `d1.read_only` log field).
    #[must_use]
    pub const fn is_read_only(self) -> bool {
        matches!(self, Access::ReadOnly)
    }

    /// Whether running the work again could change the database: anything but read-only
    /// or declared idempotent work.
    pub(crate) const fn may_write(self) -> bool {
        !matches!(self, Access::ReadOnly | Access::Idempotent)
    }

    /// Whether a failure of the work may have left a write behind whatever its class,
    /// even "not executed": a method of the user's may have made an earlier D1 call of its
    /// own, and a decoded write's error may be a row's text.
    pub(crate) const fn may_have_written_whatever_the_class(self) -> bool {
        matches!(self, Access::NotD1Call | Access::DecodedWrite)
    }
}

/// Whether a failure of `class` may be retried, given whether re-running the failed work is safe.
///
/// `read_only` is true when every statement of the failed work is read-only, or when the
/// work is declared idempotent (running it twice has the effect of running it once).
///
/// | class | read-only or idempotent | may write |
/// |---|---|---|
/// | [`NotExecuted`](FailureClass::NotExecuted) | retry | retry |
/// | [`MaybeExecuted`](FailureClass::MaybeExecuted) | retry | no |
/// | [`Permanent`](FailureClass::Permanent) | no | no |
///
/// ```
/// use d1_retry_runtime::{should_retry, FailureClass};
/// assert!(should_retry(FailureClass::NotExecuted, false));
/// assert!(should_retry(FailureClass::MaybeExecuted, true));
/// assert!(!should_retry(FailureClass::MaybeExecuted, false));
/// assert!(!should_retry(FailureClass::Permanent, true));
/// ```
#[must_use]
pub const fn should_retry(class: FailureClass, read_only: bool) -> bool {
    match class {
        FailureClass::NotExecuted => true,
        FailureClass::MaybeExecuted => read_only,
        FailureClass::Permanent => false,
    }
}

/// Why a failure was not retried: the `d1.withheld` log field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Withheld {
    /// Retrying cannot help: the query itself failed, or a limit was hit.
    Permanent,
    /// The statement may have run and may write: running it again could write twice.
    MaybeExecutedWrite,
    /// The statement may have run and its SQL could not be seen: counted as a write.
    UnseenSql,
    /// A `read_only` attempt ran SQL that may write before the failure.
    WriteInReadOnly,
    /// The attempt made a D1 call that may have written before it failed: running it
    /// again would make that call twice.
    WroteBefore,
    /// The call is a method of the user's named like a D1 call (see [`Access::NotD1Call`]).
    NotD1Call,
    /// The call is a write through `first` or `raw`, whose error may be a row's text (see
    /// [`Access::DecodedWrite`]).
    DecodedWrite,
    /// An enclosing attempt that will run the call again decides: a
    /// `#[d1_retry(read_only)]` / `#[d1_retry(idempotent)]` body, or a `Retry` whose attempt
    /// has not written yet.
    Nested,
    /// The call has used all its retries.
    Exhausted,
    /// The retry budget has no token to spare: D1 has been failing too often.
    Budget,
    /// The call's deadline passed, or would before the retry's wait ends.
    Deadline,
}

impl Withheld {
    /// The reason as it appears in logs.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Withheld::Permanent => "permanent",
            Withheld::MaybeExecutedWrite => "maybe_executed_write",
            Withheld::UnseenSql => "unseen_sql",
            Withheld::WriteInReadOnly => "write_in_read_only",
            Withheld::WroteBefore => "wrote_before",
            Withheld::NotD1Call => "not_d1_call",
            Withheld::DecodedWrite => "decoded_write",
            Withheld::Nested => "nested",
            Withheld::Exhausted => "exhausted",
            Withheld::Budget => "budget",
            Withheld::Deadline => "deadline",
        }
    }
}

/// What is known when a D1 call has just failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    /// The failure's class.
    pub class: FailureClass,
    /// What running the failed work again could do.
    pub access: Access,
    /// An enclosing attempt that will run this call again is running: it decides, not
    /// this call.
    pub nested: bool,
    /// Retries the call has already made (all its executions together).
    pub retries_made: u32,
    /// The policy's attempt limit: a call makes at most `max_attempts - 1` retries.
    pub max_attempts: u32,
    /// The retry budget refused this failure a token.
    pub budget_exhausted: bool,
    /// The call's deadline has passed, or would before the retry's wait ends.
    pub deadline_reached: bool,
}

/// The retry table: `Ok(())` to retry, or why not.
///
/// ```
/// use d1_retry_runtime::{decide, Access, Facts, FailureClass, Withheld};
/// let facts = Facts {
///     class: FailureClass::MaybeExecuted,
///     access: Access::Write,
///     nested: false,
///     retries_made: 0,
///     max_attempts: 5,
///     budget_exhausted: false,
///     deadline_reached: false,
/// };
/// assert_eq!(decide(facts), Err(Withheld::MaybeExecutedWrite));
/// assert_eq!(decide(Facts { access: Access::ReadOnly, ..facts }), Ok(()));
/// ```
///
/// # Errors
///
/// The reason the failure must not be retried.
pub const fn decide(facts: Facts) -> Result<(), Withheld> {
    if matches!(facts.class, FailureClass::Permanent) {
        return Err(Withheld::Permanent);
    }
    if facts.nested {
        return Err(Withheld::Nested);
    }
    let safe = !facts.access.may_write();
    let never = matches!(
        facts.access,
        Access::Unretryable | Access::WroteBefore | Access::NotD1Call | Access::DecodedWrite
    );
    if !should_retry(facts.class, safe) || never {
        return Err(match facts.access {
            Access::Unseen => Withheld::UnseenSql,
            Access::Unretryable => Withheld::WriteInReadOnly,
            Access::WroteBefore => Withheld::WroteBefore,
            Access::NotD1Call => Withheld::NotD1Call,
            Access::DecodedWrite => Withheld::DecodedWrite,
            _ => Withheld::MaybeExecutedWrite,
        });
    }
    if facts.retries_made.saturating_add(1) >= facts.max_attempts {
        return Err(Withheld::Exhausted);
    }
    if facts.budget_exhausted {
        return Err(Withheld::Budget);
    }
    if facts.deadline_reached {
        return Err(Withheld::Deadline);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use FailureClass::*;

    const BASE: Facts = Facts {
        class: NotExecuted,
        access: Access::Write,
        nested: false,
        retries_made: 0,
        max_attempts: 5,
        budget_exhausted: false,
        deadline_reached: false,
    };

    #[test]
    fn the_table() {
        use Access::*;
        let write = Err(Withheld::MaybeExecutedWrite);
        let rows = [
            (ReadOnly, [Ok(()), Ok(()), Err(Withheld::Permanent)]),
            (Idempotent, [Ok(()), Ok(()), Err(Withheld::Permanent)]),
            (Write, [Ok(()), write, Err(Withheld::Permanent)]),
            (
                Unseen,
                [Ok(()), Err(Withheld::UnseenSql), Err(Withheld::Permanent)],
            ),
            (
                Unretryable,
                [
                    Err(Withheld::WriteInReadOnly),
                    Err(Withheld::WriteInReadOnly),
                    Err(Withheld::Permanent),
                ],
            ),
            (
                WroteBefore,
                [
                    Err(Withheld::WroteBefore),
                    Err(Withheld::WroteBefore),
                    Err(Withheld::Permanent),
                ],
            ),
            (
                NotD1Call,
                [
                    Err(Withheld::NotD1Call),
                    Err(Withheld::NotD1Call),
                    Err(Withheld::Permanent),
                ],
            ),
            (
                DecodedWrite,
                [
                    Err(Withheld::DecodedWrite),
                    Err(Withheld::DecodedWrite),
                    Err(Withheld::Permanent),
                ],
            ),
        ];
        for (access, expected) in rows {
            for (class, expected) in [NotExecuted, MaybeExecuted, Permanent]
                .into_iter()
                .zip(expected)
            {
                let facts = Facts {
                    class,
                    access,
                    ..BASE
                };
                assert_eq!(decide(facts), expected, "{access:?} {class:?}");
            }
        }
    }

    #[test]
    fn should_retry_is_the_two_column_table() {
        let table = [
            (NotExecuted, true, true),
            (NotExecuted, false, true),
            (MaybeExecuted, true, true),
            (MaybeExecuted, false, false),
            (Permanent, true, false),
            (Permanent, false, false),
        ];
        for (class, read_only, expected) in table {
            assert_eq!(
                should_retry(class, read_only),
                expected,
                "{class} {read_only}"
            );
        }
    }

    #[test]
    fn a_call_makes_at_most_max_attempts_minus_one_retries() {
        assert_eq!(
            decide(Facts {
                retries_made: 3,
                ..BASE
            }),
            Ok(())
        );
        assert_eq!(
            decide(Facts {
                retries_made: 4,
                ..BASE
            }),
            Err(Withheld::Exhausted)
        );
        assert_eq!(
            decide(Facts {
                retries_made: u32::MAX,
                ..BASE
            }),
            Err(Withheld::Exhausted)
        );
        assert_eq!(
            decide(Facts {
                max_attempts: 1,
                ..BASE
            }),
            Err(Withheld::Exhausted)
        );
    }

    #[test]
    fn nesting_budget_and_exhaustion_come_in_order() {
        let all = Facts {
            nested: true,
            retries_made: 9,
            budget_exhausted: true,
            ..BASE
        };
        assert_eq!(decide(all), Err(Withheld::Nested));
        assert_eq!(
            decide(Facts {
                nested: false,
                ..all
            }),
            Err(Withheld::Exhausted)
        );
        assert_eq!(
            decide(Facts {
                nested: false,
                retries_made: 0,
                ..all
            }),
            Err(Withheld::Budget)
        );
        // A permanent failure is reported as such even inside another attempt.
        assert_eq!(
            decide(Facts {
                class: Permanent,
                ..all
            }),
            Err(Withheld::Permanent)
        );
        let late = Facts {
            deadline_reached: true,
            ..BASE
        };
        assert_eq!(decide(late), Err(Withheld::Deadline));
        let late_and_spent = Facts {
            budget_exhausted: true,
            ..late
        };
        assert_eq!(decide(late_and_spent), Err(Withheld::Budget));
        let late_write = Facts {
            class: MaybeExecuted,
            ..late
        };
        assert_eq!(decide(late_write), Err(Withheld::MaybeExecutedWrite));
    }

    #[test]
    fn a_batch_is_as_unsafe_as_its_least_safe_statement() {
        use Access::*;
        assert_eq!(ReadOnly.and(ReadOnly), ReadOnly);
        assert_eq!(ReadOnly.and(Write), Write);
        assert_eq!(Write.and(ReadOnly), Write);
        assert_eq!(Write.and(Unseen), Unseen);
        assert_eq!(Unseen.and(Write), Unseen);
        assert_eq!(Idempotent.and(ReadOnly), Idempotent);
        assert_eq!(Unretryable.and(ReadOnly), Unretryable);
        assert_eq!(Unseen.and(WroteBefore), WroteBefore);
        assert_eq!(WroteBefore.and(Unretryable), Unretryable);
        assert_eq!(Unretryable.and(NotD1Call), NotD1Call);
        assert_eq!(NotD1Call.and(ReadOnly), NotD1Call);
        assert!(!NotD1Call.is_read_only());
        assert_eq!(Access::judged(true), ReadOnly);
        assert_eq!(Access::judged(false), Write);
        assert!(ReadOnly.is_read_only() && !Idempotent.is_read_only() && !Write.is_read_only());
    }

    /// After a "not executed" failure, only a method of the user's (which may have made a
    /// D1 call of its own before) and a decoded write (whose error may be a row's text) may
    /// still have written.
    #[test]
    fn only_a_user_s_method_and_a_decoded_write_may_have_written_whatever_the_class() {
        use Access::*;
        for access in [
            ReadOnly,
            Idempotent,
            Write,
            Unseen,
            Unretryable,
            WroteBefore,
        ] {
            assert!(!access.may_have_written_whatever_the_class(), "{access:?}");
        }
        assert!(NotD1Call.may_have_written_whatever_the_class());
        assert!(DecodedWrite.may_have_written_whatever_the_class());
    }

    #[test]
    fn withheld_names_are_the_log_vocabulary() {
        let names = [
            (Withheld::Permanent, "permanent"),
            (Withheld::MaybeExecutedWrite, "maybe_executed_write"),
            (Withheld::UnseenSql, "unseen_sql"),
            (Withheld::WriteInReadOnly, "write_in_read_only"),
            (Withheld::WroteBefore, "wrote_before"),
            (Withheld::NotD1Call, "not_d1_call"),
            (Withheld::DecodedWrite, "decoded_write"),
            (Withheld::Nested, "nested"),
            (Withheld::Exhausted, "exhausted"),
            (Withheld::Budget, "budget"),
            (Withheld::Deadline, "deadline"),
        ];
        for (reason, name) in names {
            assert_eq!(reason.as_str(), name);
        }
    }
}
