//! Every log line d1-retry writes, in one place so the field names stay a contract.

use core::time::Duration;

use crate::PolicyError;
use crate::decide::Withheld;
use crate::failure::Failure;
use crate::operation::OperationName;

/// The fields every line about one failed attempt carries.
pub(crate) struct Event<'a, 'e> {
    pub(crate) operation: OperationName<'a>,
    pub(crate) read_only: bool,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    /// The retry budget had no token to spare (see [`RetryBudget`](crate::RetryBudget)).
    pub(crate) budget_exhausted: bool,
    pub(crate) failure: &'a Failure<'e>,
}

/// One line about a failed attempt: every such line carries the same fields, so they are
/// written in one place.
macro_rules! attempt_line {
    ($level:ident, $event:expr, $($rest:tt)+) => {
        tracing::$level!(
            d1.operation = %$event.operation,
            d1.read_only = $event.read_only,
            d1.attempt = $event.attempt,
            d1.max_attempts = $event.max_attempts,
            d1.budget_exhausted = $event.budget_exhausted,
            d1.failure_class = $event.failure.class().as_str(),
            d1.failure = %$event.failure,
            $($rest)+
        )
    };
}

pub(crate) fn retrying(event: &Event<'_, '_>, delay: Duration) {
    attempt_line!(
        warn,
        event,
        d1.delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        "D1 transient failure, retrying"
    );
}

/// The one line about a failure that is not retried, with the reason in `d1.withheld`,
/// so that a user can find why an error reached the caller.
pub(crate) fn withheld(event: &Event<'_, '_>, reason: Withheld) {
    if reason == Withheld::Permanent && event.attempt == 1 {
        // The caller's own error (a constraint, a syntax error): not d1-retry's news.
        attempt_line!(
            debug,
            event,
            d1.withheld = reason.as_str(),
            "D1 failure, not retried"
        );
        return;
    }
    attempt_line!(
        warn,
        event,
        d1.withheld = reason.as_str(),
        "D1 failure, not retried"
    );
}

pub(crate) fn invalid_policy(operation: OperationName<'_>, error: PolicyError) {
    tracing::error!(
        d1.operation = %operation,
        d1.policy_error = error.message(),
        "invalid RetryPolicy: made a single attempt"
    );
}

/// A `read_only` function ran SQL that writes; that attempt is treated as a write.
pub(crate) fn write_in_read_only(operation: OperationName<'_>, sql: &str) {
    tracing::error!(
        d1.operation = %operation,
        d1.sql = sql,
        "#[d1_retry(read_only)] function ran SQL that may write; treating this attempt as a write"
    );
}
