//! What `#[d1_retry]` expands into. Not a public API: names and signatures here change
//! without notice; only the attribute may use them.

use core::sync::atomic::{AtomicU32, Ordering};

pub use crate::call::{Call, TimedCall, execute, execute_timed};
pub use crate::decide::Access;
pub use crate::driver::{Driver, Turn};
pub use crate::failure::{Failure, Probe, ViaAsRefError, ViaDisplay, ViaError};
pub use crate::operation::OperationName;
pub use crate::read_only::is_read_only;
pub use crate::receiver::{
    ExecutionError, Never, Pending, Plain, Receiver, Retrying, SqlProbe, SqlSlot, Unretried,
    ViaD1Receiver, ViaOtherReceiver, ViaSqlOther, ViaSqlText,
};
pub use crate::scope::{Scoped, nested, scoped};
pub use crate::site::{Attempts, Execute, Site};
pub use crate::timeout::{
    ReceivesTimedOut, TimeoutInto, ViaFromTimedOut, ViaNoTimedOut, receives_timed_out,
};

/// The documented D1 phrases and their classes, for the classifier's benchmark baseline.
pub const D1_PHRASES: [(&str, crate::FailureClass); 14] = crate::classify::PHRASES;
pub use crate::{DefaultSleeper, FailureClass, PolicyError, RetryPolicy};

/// What the macro learned about a whole-body (`read_only` / `idempotent`) function.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// `#[d1_retry(idempotent)]`.
    pub idempotent: bool,
}

impl Plan {
    /// The access of the attempt that just ran, given the dynamic SQL it observed.
    pub fn access(&self, attempt: &Attempt<'_>) -> Access {
        if self.idempotent {
            Access::Idempotent
        } else if attempt.dynamic_writes() == 0 {
            Access::ReadOnly
        } else {
            Access::Unretryable
        }
    }
}

/// Per-attempt record of the dynamic SQL the attempt ran.
///
/// An atomic rather than a `Cell` so the user's future stays `Send` when it was.
pub struct Attempt<'a> {
    operation: OperationName<'a>,
    declared_read_only: bool,
    dynamic_writes: AtomicU32,
}

impl<'a> Attempt<'a> {
    /// A fresh record for one attempt of `operation`.
    pub const fn new(operation: OperationName<'a>, declared_read_only: bool) -> Self {
        Attempt {
            operation,
            declared_read_only,
            dynamic_writes: AtomicU32::new(0),
        }
    }

    /// Scans dynamic SQL as it is passed to `prepare` or `exec`: text is judged, anything
    /// else counts as a write.
    pub fn observe(&self, sql: Option<&str>) {
        if !sql.is_some_and(is_read_only) {
            self.dynamic_writes.fetch_add(1, Ordering::Relaxed);
            if self.declared_read_only {
                crate::log::write_in_read_only(self.operation, sql.unwrap_or("<not text>"));
            }
        }
    }

    /// How many dynamic statements of this attempt may write.
    pub fn dynamic_writes(&self) -> u32 {
        self.dynamic_writes.load(Ordering::Relaxed)
    }
}

/// The error type of a `Result`, for a function whose return type is an alias
/// (`worker::Result<T>`).
pub trait IsResult {
    /// `E` of `Result<T, E>`.
    type Err;
}

impl<T, E> IsResult for Result<T, E> {
    type Err = E;
}

/// Validates a policy given as `#[d1_retry(policy = PATH)]`; the macro calls it in a
/// `const` block, so an invalid constant policy is a compile error with this message.
pub const fn checked_policy(policy: RetryPolicy) -> RetryPolicy {
    match policy.validate() {
        Ok(()) => policy,
        Err(error) => panic!("{}", error.message()),
    }
}
