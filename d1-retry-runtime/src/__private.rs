//! What `#[d1_retry]` expands into. Not a public API: names and signatures here change
//! without notice; only the attribute may use them.

pub use crate::classify::failure::{
    Failure, Probe, ViaAsRefError, ViaAsRefLocalError, ViaDisplay, ViaError,
};
pub use crate::dispatch::batch_sql::{HeldBatch, ViaD1Statements, ViaOtherStatements};
pub use crate::dispatch::by_value_prepare::{
    ByValue, NotADatabase, PrepareTakingTheDatabaseByValue, ViaD1Database, ViaOtherDatabase,
};
pub use crate::dispatch::d1_prepare::{ViaD1Prepare, ViaOtherPrepare};
pub use crate::dispatch::first_column::{FirstColumn, ViaFirstColumn, ViaOtherColumn};
pub use crate::dispatch::pointer_call::{
    D1CallThroughAPointer, NotAPointer, PointerOf, ThroughAPointer, ViaOtherPointer, ViaPointer,
};
pub use crate::dispatch::receiver::{
    D1Call, D1Calls, ExecutionError, Never, Pending, Plain, Receiver, Retrying, SqlProbe, SqlSlot,
    Unretried, ViaD1Receiver, ViaOtherReceiver, ViaSqlOther, ViaSqlText, calls, observed_then,
    probed,
};
pub use crate::dispatch::unseen_output::{
    Output, UnseenMark, ViaOtherOutput, ViaResultFuture, unseen_mark, unseen_output,
};
pub use crate::read_only::{is_read_only, is_read_only_prepared};
pub use crate::retry::call::{Call, MakeAttempt, TimedCall, execute, execute_timed};
pub use crate::retry::decide::Access;
pub use crate::retry::driver::{Attempt, Driver, Plan, TimedTurn, Turn};
pub use crate::retry::execution::{Attempting, Execution, Once, PlainExecution};
pub use crate::retry::follow::{Follow, Following};
pub use crate::retry::limits::{Begin, Limits, checked_policy, limited};
pub use crate::retry::operation::OperationName;
pub use crate::retry::scope::{
    left_as_written, made_statement, nested, record_held, record_sql, record_sql_prepared,
    record_sql_prepared_text, scoped,
};
pub use crate::retry::timed_execution::{TimedAttempting, TimedExecution};
pub use crate::schedule::timeout::{
    ReceivesTimedOut, TimeoutInto, ViaFromTimedOut, ViaNoTimedOut, receives_timed_out,
};

/// The documented D1 phrases and their classes, for the classifier's benchmark baseline.
pub const D1_PHRASES: [(&str, crate::FailureClass); 14] = crate::classify::PHRASES;
pub use crate::{DefaultSleeper, FailureClass, PolicyError, RetryPolicy};

/// The error type of a `Result`, for a function whose return type is an alias
/// (`worker::Result<T>`).
pub trait IsResult {
    /// `E` of `Result<T, E>`.
    type Err;
}

impl<T, E> IsResult for Result<T, E> {
    type Err = E;
}
