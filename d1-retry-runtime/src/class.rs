use core::fmt;

/// What a failed D1 call may have done to the database, which decides whether it may be retried.
///
/// See [`classify`](crate::classify) for how a failure is sorted into a class, and
/// [`should_retry`](crate::should_retry) for what each class allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureClass {
    /// D1 was never reached, so the statement did not run: any statement may be retried.
    NotExecuted,
    /// The statement may or may not have run: only read-only statements may be retried.
    MaybeExecuted,
    /// Retrying cannot help (the query itself failed, or a limit was hit): never retried.
    Permanent,
}

impl FailureClass {
    /// The class as it appears in logs: `"not_executed"`, `"maybe_executed"` or `"permanent"`.
    ///
    /// ```
    /// use d1_retry_runtime::FailureClass;
    /// assert_eq!(FailureClass::MaybeExecuted.as_str(), "maybe_executed");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotExecuted => "not_executed",
            Self::MaybeExecuted => "maybe_executed",
            Self::Permanent => "permanent",
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_log_vocabulary() {
        assert_eq!(FailureClass::NotExecuted.as_str(), "not_executed");
        assert_eq!(FailureClass::MaybeExecuted.as_str(), "maybe_executed");
        assert_eq!(FailureClass::Permanent.as_str(), "permanent");
        assert_eq!(FailureClass::Permanent.to_string(), "permanent");
    }

    #[test]
    fn retry_table() {
        use FailureClass::*;
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
                "{class} read_only={read_only}"
            );
        }
    }
}
