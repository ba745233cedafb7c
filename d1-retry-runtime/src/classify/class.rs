use core::fmt;

/// What a failed D1 call may have done to the database, which decides whether it may be retried.
///
/// See [`classify`](crate::classify()) for how a failure is sorted into a class, and
/// [`decide`](crate::decide()) for what each class allows.
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

impl FailureClass {
    /// How much the class allows, for keeping the least retryable of several: the links of
    /// an error's chain (`classify`), the failures left to one attempt
    /// (`retry::scope::least_retryable`).
    pub(crate) const fn retryability(self) -> u8 {
        match self {
            Self::Permanent => 0,
            Self::MaybeExecuted => 1,
            Self::NotExecuted => 2,
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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
}
