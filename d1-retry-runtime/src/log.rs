//! Every log line d1-retry writes, in one place so the field names stay a contract.

use core::fmt;
use core::time::Duration;

use tracing::field::DisplayValue;

use crate::PolicyError;
use crate::classify::failure::Failure;
use crate::retry::decide::Withheld;
use crate::retry::operation::OperationName;
use crate::schedule::duration;

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
            d1.operation = shown(&$event.operation),
            d1.read_only = $event.read_only,
            d1.attempt = $event.attempt,
            d1.max_attempts = $event.max_attempts,
            d1.budget_exhausted = $event.budget_exhausted,
            d1.failure_class = $event.failure.class().as_str(),
            d1.failure = shown($event.failure),
            $($rest)+
        )
    };
}

/// A `Display` field, as `%value` records it, through one type for every field: each
/// `DisplayValue<T>` is a `Value` impl of its own, compiled once per `T` (BENCHMARKS.md,
/// forty-fifth round).
fn shown(value: &dyn fmt::Display) -> DisplayValue<&dyn fmt::Display> {
    tracing::field::display(value)
}

pub(crate) fn retrying(event: &Event<'_, '_>, delay: Duration) {
    warn(
        event,
        Some(duration::whole(delay, duration::MILLIS)),
        None,
        "D1 transient failure, retrying",
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
    warn(
        event,
        None,
        Some(reason.as_str()),
        "D1 failure, not retried",
    );
}

/// The one warn-level call site of both [`retrying`] and [`withheld`]: each call site
/// costs its static metadata and the code that builds and dispatches its fields, so the two
/// share one. A `None` field is not recorded at all, and the message passed through `"{}"`
/// formats as the literal did, so every subscriber sees what two call sites wrote: the
/// seven fields, then `d1.delay_ms` or `d1.withheld`.
#[inline(never)]
fn warn(
    event: &Event<'_, '_>,
    delay_ms: Option<u64>,
    withheld: Option<&'static str>,
    message: &'static str,
) {
    attempt_line!(
        warn,
        event,
        d1.delay_ms = delay_ms,
        d1.withheld = withheld,
        "{}",
        message
    );
}

pub(crate) fn invalid_policy(operation: OperationName<'_>, error: PolicyError) {
    error_line(
        operation,
        Some(error.message()),
        None,
        "invalid RetryPolicy: made a single attempt",
    );
}

/// What [`write_in_read_only`] logs for a statement made out of sight, whose SQL the log
/// line does not copy out of the statement.
pub(crate) const OUT_OF_SIGHT: &str = "<SQL out of sight that may write or cannot be read>";

/// A `read_only` function ran SQL that writes, or SQL that is not text (`None`); that
/// attempt is treated as a write.
pub(crate) fn write_in_read_only(operation: OperationName<'_>, sql: Option<&str>) {
    error_line(
        operation,
        None,
        Some(sql.unwrap_or("<not text>")),
        "#[d1_retry(read_only)] function ran SQL that may write; treating this attempt as a write",
    );
}

/// The one error-level call site of [`invalid_policy`] and [`write_in_read_only`], for the
/// reason [`warn`] is one: a Worker that links both (a `D1Retry` with a policy checked at
/// run time, and a `read_only` function) pays for one call site's metadata and dispatch.
/// A `None` field is not recorded, so each line carries the fields it did.
#[inline(never)]
fn error_line(
    operation: OperationName<'_>,
    policy_error: Option<&'static str>,
    sql: Option<&str>,
    message: &'static str,
) {
    tracing::error!(
        d1.operation = shown(&operation),
        d1.policy_error = policy_error,
        d1.sql = sql,
        "{}",
        message
    );
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::io;
    use std::sync::Once;

    use tracing::Level;

    use super::*;
    use crate::FailureClass;

    thread_local! {
        /// What the `fmt` layer writes on this thread while [`written`] captures it.
        static WRITTEN: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
    }

    /// The `fmt` layer's writer: this thread's capture, or nowhere.
    struct ThisThread;

    impl io::Write for ThisThread {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            WRITTEN.with(|written| {
                if let Some(out) = written.borrow_mut().as_mut() {
                    out.extend_from_slice(buf);
                }
            });
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Everything the `fmt` layer writes on this thread while `lines` runs, without time or
    /// colours.
    ///
    /// Through one global subscriber, not a scoped one: tracing caches each call site's
    /// interest for every thread, and the other tests of this binary reach these call
    /// sites with no subscriber; one reached there while a scoped subscriber was being made
    /// could stay cached as "never" and drop these lines (as it once did in
    /// `tests/worker_errors.rs`). The interests are rebuilt once the subscriber is set.
    fn written(lines: impl FnOnce()) -> String {
        static GLOBAL: Once = Once::new();
        GLOBAL.call_once(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(Level::TRACE)
                .with_ansi(false)
                .without_time()
                .with_writer(|| ThisThread)
                .finish();
            tracing::subscriber::set_global_default(subscriber)
                .unwrap_or_else(|error| panic!("{error}"));
        });
        tracing::callsite::rebuild_interest_cache();
        WRITTEN.with(|written| *written.borrow_mut() = Some(Vec::new()));
        lines();
        let out = WRITTEN.with(|written| written.borrow_mut().take().unwrap_or_default());
        String::from_utf8(out).unwrap()
    }

    /// The lines as the `fmt` layer writes them, byte for byte: their messages and fields
    /// are a contract (the facade's tests and users' log queries read them), so a change
    /// in how they are emitted must not change them.
    #[test]
    fn the_lines_are_written_as_documented() {
        let text = "D1_ERROR: Network connection lost.";
        let failure = Failure::with_class(FailureClass::MaybeExecuted, &text);
        let event = |attempt, budget_exhausted| Event {
            operation: OperationName::Method {
                type_name: || "app::repo::UserRepo<app::Db>",
                method: "find",
            },
            read_only: true,
            attempt,
            max_attempts: 5,
            budget_exhausted,
            failure: &failure,
        };
        let permanent = Failure::with_class(FailureClass::Permanent, &"no such table: users");
        let first = Event {
            attempt: 1,
            failure: &permanent,
            ..event(1, false)
        };
        let out = written(|| {
            retrying(&event(1, false), Duration::from_micros(163_999));
            retrying(&event(2, false), Duration::MAX);
            withheld(&event(5, false), Withheld::Exhausted);
            withheld(&event(2, true), Withheld::Budget);
            withheld(&first, Withheld::Permanent);
            withheld(
                &Event {
                    attempt: 2,
                    ..first
                },
                Withheld::Permanent,
            );
            invalid_policy(
                OperationName::Named("users.find"),
                PolicyError::ZeroAttempts,
            );
            write_in_read_only(
                OperationName::Named("users.find"),
                Some("DELETE FROM users"),
            );
        });
        let fields = |attempt, exhausted, failure: &str, class| {
            format!(
                "d1.operation=UserRepo::find d1.read_only=true d1.attempt={attempt} \
                 d1.max_attempts=5 d1.budget_exhausted={exhausted} \
                 d1.failure_class=\"{class}\" d1.failure={failure}"
            )
        };
        let lost = "D1_ERROR: Network connection lost.";
        let table = "no such table: users";
        let target = "d1_retry_runtime::log";
        let expected = [
            format!(
                " WARN {target}: D1 transient failure, retrying {} d1.delay_ms=163",
                fields(1, false, lost, "maybe_executed")
            ),
            format!(
                " WARN {target}: D1 transient failure, retrying {} d1.delay_ms={}",
                fields(2, false, lost, "maybe_executed"),
                u64::MAX
            ),
            format!(
                " WARN {target}: D1 failure, not retried {} d1.withheld=\"exhausted\"",
                fields(5, false, lost, "maybe_executed")
            ),
            format!(
                " WARN {target}: D1 failure, not retried {} d1.withheld=\"budget\"",
                fields(2, true, lost, "maybe_executed")
            ),
            format!(
                "DEBUG {target}: D1 failure, not retried {} d1.withheld=\"permanent\"",
                fields(1, false, table, "permanent")
            ),
            format!(
                " WARN {target}: D1 failure, not retried {} d1.withheld=\"permanent\"",
                fields(2, false, table, "permanent")
            ),
            format!(
                "ERROR {target}: invalid RetryPolicy: made a single attempt \
                 d1.operation=users.find d1.policy_error=\"{}\"",
                PolicyError::ZeroAttempts.message()
            ),
            format!(
                "ERROR {target}: #[d1_retry(read_only)] function ran SQL that may write; \
                 treating this attempt as a write d1.operation=users.find \
                 d1.sql=\"DELETE FROM users\""
            ),
        ];
        assert_eq!(out.lines().collect::<Vec<_>>(), expected, "{out}");
    }
}
