//! [`TimedOut`]: a D1 call cut off by a time limit of its policy.
//!
//! D1 does not only fail; it also hangs, sometimes for a minute, until its storage object
//! resets. With [`RetryPolicy::with_attempt_timeout`](crate::RetryPolicy::with_attempt_timeout)
//! or [`with_deadline`](crate::RetryPolicy::with_deadline), a call is raced against a timer,
//! and when the timer wins the caller gets this error, converted into the call's own error
//! type through `From<TimedOut>`. Dropping the call's future does not cancel the query in D1:
//! a timeout is a *maybe executed* failure.

use core::fmt::{self, Write as _};
use core::time::Duration;

use crate::FailureClass;

/// The start of every [`TimedOut`] message, which the classifier reads as maybe executed.
pub(crate) const TIMED_OUT: &str = "D1 call timed out";

/// Which time limit cut a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeLimit {
    /// One attempt ran longer than the policy's attempt timeout.
    Attempt,
    /// The whole call, retries and waits included, reached the policy's deadline.
    Deadline,
}

impl TimeLimit {
    /// `"attempt timeout"` or `"deadline"`, as the message says it.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            TimeLimit::Attempt => "attempt timeout",
            TimeLimit::Deadline => "deadline",
        }
    }
}

/// A D1 call abandoned because a time limit passed: which limit, after how long, and the
/// operation.
///
/// It classifies as [`MaybeExecuted`](FailureClass::MaybeExecuted): D1 may still run the
/// statement. Functions using the time limits of `#[d1_retry]` receive it through their error
/// type's `From<TimedOut>`; d1-retry implements that conversion for `worker::Error` (feature
/// `worker`), `String` and the testing kit's error, and `anyhow::Error` and
/// `Box<dyn Error + Send + Sync>` get it through their blanket conversions.
///
/// ```
/// use core::time::Duration;
/// use d1_retry_runtime::{classify, FailureClass, TimeLimit, TimedOut};
///
/// let error = TimedOut::new(TimeLimit::Attempt, Duration::from_secs(2), "users.find");
/// assert_eq!(
///     error.to_string(),
///     "D1 call timed out: users.find passed its attempt timeout of 2000 ms",
/// );
/// assert_eq!(classify(&error), FailureClass::MaybeExecuted);
/// let text: String = error.into();
/// assert!(text.starts_with("D1 call timed out"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TimedOut {
    limit: TimeLimit,
    after: Duration,
    operation: String,
}

impl TimedOut {
    /// A call of `operation` cut by `limit` after `after`.
    pub fn new(limit: TimeLimit, after: Duration, operation: impl fmt::Display) -> Self {
        TimedOut {
            limit,
            after,
            operation: operation.to_string(),
        }
    }

    /// The limit that passed.
    #[must_use]
    pub fn limit(&self) -> TimeLimit {
        self.limit
    }

    /// How long the call (for the deadline) or the attempt (for the attempt timeout) had
    /// run when it was cut: the limit itself.
    #[must_use]
    pub fn after(&self) -> Duration {
        self.after
    }

    /// The `d1.operation` of the call.
    #[must_use]
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// Always [`FailureClass::MaybeExecuted`]: D1 may still run the statement.
    #[must_use]
    pub const fn class(&self) -> FailureClass {
        FailureClass::MaybeExecuted
    }
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(TIMED_OUT)?;
        f.write_str(": ")?;
        f.write_str(&self.operation)?;
        f.write_str(" passed its ")?;
        f.write_str(self.limit.as_str())?;
        f.write_str(" of ")?;
        write_millis(self.after, f)?;
        f.write_str(" ms")
    }
}

/// Writes `duration.as_millis()` without formatting a `u128`, whose `Display` (a 128-bit
/// division) would otherwise be linked into every Worker: the whole seconds, then the
/// milliseconds as three digits, which is the same number in decimal.
fn write_millis(duration: Duration, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let secs = duration.as_secs();
    let millis = duration.subsec_millis();
    if secs == 0 {
        return fmt::Display::fmt(&millis, f);
    }
    fmt::Display::fmt(&secs, f)?;
    let digits = [millis / 100, millis / 10 % 10, millis % 10];
    for digit in digits {
        // `digit` < 10, so this is an ASCII digit.
        f.write_char(char::from(b'0' + digit as u8))?;
    }
    Ok(())
}

impl std::error::Error for TimedOut {}

impl From<TimedOut> for String {
    fn from(error: TimedOut) -> Self {
        error.to_string()
    }
}

#[cfg(feature = "worker")]
impl From<TimedOut> for worker::Error {
    /// A `worker::Error::RustError` with the message, which the classifier reads as maybe
    /// executed.
    fn from(error: TimedOut) -> Self {
        worker::Error::RustError(error.to_string())
    }
}

/// Autoref dispatch: a timeout is handed to the caller as its error type `E` when
/// `E: From<TimedOut>`, and cannot be otherwise (then the time limits are not applied).
pub struct TimeoutInto<E>(core::marker::PhantomData<fn() -> E>);

impl<E> TimeoutInto<E> {
    /// The probe for error type `E`.
    #[must_use]
    pub const fn new() -> Self {
        TimeoutInto(core::marker::PhantomData)
    }

    /// The probe for the error type `marker` names.
    #[must_use]
    pub const fn of(_marker: core::marker::PhantomData<E>) -> Self {
        Self::new()
    }
}

impl<E> Default for TimeoutInto<E> {
    fn default() -> Self {
        Self::new()
    }
}

/// Picked when `E: From<TimedOut>`.
pub trait ViaFromTimedOut<E> {
    /// The conversion.
    fn d1_retry_timeout(&self) -> Option<fn(TimedOut) -> E>;
}

impl<E: From<TimedOut>> ViaFromTimedOut<E> for &TimeoutInto<E> {
    fn d1_retry_timeout(&self) -> Option<fn(TimedOut) -> E> {
        Some(E::from)
    }
}

/// Picked for any other error type.
pub trait ViaNoTimedOut<E> {
    /// No conversion.
    fn d1_retry_timeout(&self) -> Option<fn(TimedOut) -> E>;
}

impl<E> ViaNoTimedOut<E> for TimeoutInto<E> {
    fn d1_retry_timeout(&self) -> Option<fn(TimedOut) -> E> {
        None
    }
}

/// A compile-time check the attribute emits, spanned at a time-limit option, that the
/// function's error type can receive a [`TimedOut`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot receive a d1-retry timeout: it does not implement `From<d1_retry::TimedOut>`",
    label = "this time limit needs the function's error type to implement `From<d1_retry::TimedOut>`",
    note = "write `impl From<d1_retry::TimedOut> for {Self} {{ fn from(e: d1_retry::TimedOut) -> Self {{ .. }} }}`, or return `worker::Error`, `String`, `anyhow::Error` or `Box<dyn std::error::Error + Send + Sync>`, which have it"
)]
pub trait ReceivesTimedOut {}

impl<E: From<TimedOut>> ReceivesTimedOut for E {}

/// Fails to compile, with [`ReceivesTimedOut`]'s message, unless `E: From<TimedOut>`.
pub const fn receives_timed_out<E: ReceivesTimedOut>() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_limit_the_time_and_the_operation() {
        let deadline = TimedOut::new(
            TimeLimit::Deadline,
            Duration::from_millis(9500),
            "Repo::find",
        );
        assert_eq!(
            deadline.to_string(),
            "D1 call timed out: Repo::find passed its deadline of 9500 ms"
        );
        assert_eq!(deadline.limit(), TimeLimit::Deadline);
        assert_eq!(deadline.after(), Duration::from_millis(9500));
        assert_eq!(deadline.operation(), "Repo::find");
        assert_eq!(deadline.class(), FailureClass::MaybeExecuted);
        assert_eq!(
            crate::classify_message(&deadline.to_string()),
            FailureClass::MaybeExecuted
        );
    }

    #[test]
    fn the_milliseconds_are_written_as_as_millis_writes_them() {
        for after in [
            Duration::ZERO,
            Duration::from_micros(999),
            Duration::from_millis(7),
            Duration::from_millis(999),
            Duration::from_millis(1000),
            Duration::from_millis(1005),
            Duration::from_millis(9500),
            Duration::new(12, 345_678_901),
            Duration::new(u64::MAX / 1000 + 1, 616_000_000),
            Duration::MAX,
        ] {
            let error = TimedOut::new(TimeLimit::Deadline, after, "x");
            let expected = format!(
                "D1 call timed out: x passed its deadline of {} ms",
                after.as_millis()
            );
            assert_eq!(error.to_string(), expected, "{after:?}");
        }
    }

    #[test]
    #[allow(clippy::needless_borrow)] // the borrows are the dispatch under test
    fn the_conversion_is_found_only_where_it_exists() {
        struct Opaque;
        let into_string = (&&TimeoutInto::<String>::new()).d1_retry_timeout();
        let converted = into_string.map(|convert| {
            convert(TimedOut::new(
                TimeLimit::Attempt,
                Duration::from_secs(1),
                "x",
            ))
        });
        assert_eq!(
            converted.as_deref(),
            Some("D1 call timed out: x passed its attempt timeout of 1000 ms")
        );
        assert!(
            (&&TimeoutInto::<Opaque>::new())
                .d1_retry_timeout()
                .is_none()
        );
    }
}
