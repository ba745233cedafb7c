//! Every log line d1-retry writes, in one place so the field names stay a contract.

use core::time::Duration;

use crate::failure::Failure;
use crate::operation::Operation;
use crate::{FailureClass, PolicyError};

/// The fields every line about one failed attempt carries.
pub(crate) struct Event<'a, 'e> {
    pub(crate) operation: Operation<'a>,
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

pub(crate) fn exhausted(event: &Event<'_, '_>) {
    attempt_line!(
        warn,
        event,
        "D1 transient failure, giving up after the last attempt"
    );
}

pub(crate) fn not_retried(event: &Event<'_, '_>) {
    if event.failure.class() == FailureClass::Permanent && event.attempt == 1 {
        // The caller's own error (a constraint, a syntax error): not d1-retry's news.
        attempt_line!(debug, event, "D1 permanent failure, not retried");
        return;
    }
    attempt_line!(
        warn,
        event,
        "D1 failure, giving up: retrying could run a write twice or cannot help"
    );
}

/// A retry the schedule allowed, refused because D1 has been failing more than the budget
/// tolerates: the caller gets the error now instead of adding load.
pub(crate) fn budget_exhausted(event: &Event<'_, '_>) {
    attempt_line!(
        warn,
        event,
        "D1 transient failure, not retried: the retry budget is exhausted"
    );
}

pub(crate) fn invalid_policy(operation: Operation<'_>, error: PolicyError) {
    tracing::error!(
        d1.operation = %operation,
        d1.policy_error = error.message(),
        "invalid RetryPolicy: made a single attempt"
    );
}

/// A `read_only` function ran SQL that writes; that attempt is treated as a write.
pub(crate) fn write_in_read_only(operation: Operation<'_>, sql: &str) {
    tracing::error!(
        d1.operation = %operation,
        d1.sql = sql,
        "#[d1_retry(read_only)] function ran SQL that may write; treating this attempt as a write"
    );
}
