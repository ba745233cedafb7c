//! The retry loops and what they share.
//!
//! - [`decide`]: the retry table, the one place that decides whether a failure is retried.
//! - [`call`]: one call of an annotated function, whose D1 executions share a schedule;
//!   [`execution`] and [`timed_execution`]: the loop of one execution, without and with
//!   time limits; [`limits`]: which of the two a function with `policy = PATH` compiles,
//!   from the constant's value; [`follow`]: a statement in a field, which each attempt
//!   evaluates again, followed to the statement it names.
//! - [`driver`]: the loop of a whole attempt, shared by [`standalone`]'s
//!   [`Retry`](crate::Retry) and the `read_only` and `idempotent` bodies.
//! - [`scope`]: whether code runs inside an attempt that is retried as a whole, so that
//!   retries never multiply and a write inside one is not made again.
//! - [`operation`]: the function's name, which every log line carries (the lines
//!   themselves are in the crate's `log` module, at its root because its path is the
//!   target they are logged under, `d1_retry_runtime::log`, which filters and the e2e
//!   suite select them by).

pub(crate) mod call;
pub(crate) mod decide;
pub(crate) mod driver;
pub(crate) mod execution;
pub(crate) mod follow;
pub(crate) mod limits;
pub(crate) mod operation;
pub(crate) mod scope;
pub(crate) mod standalone;
pub(crate) mod timed_execution;
