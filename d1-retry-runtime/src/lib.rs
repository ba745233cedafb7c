//! The runtime of [d1-retry](https://docs.rs/d1-retry): it decides which failed Cloudflare D1
//! calls may be retried, and retries them.
//!
//! Most users depend on the `d1-retry` crate and write `#[d1_retry]`; this crate is what
//! the attribute expands into, and it works on its own through [`Retry`].
//!
//! - [`classify()`] and [`classify_message`] sort a failure into a [`FailureClass`]: the
//!   statement was *not executed*, *maybe executed*, or the failure is *permanent*.
//! - [`is_read_only`] decides, the way SQLite would, whether SQL can write, and
//!   [`is_read_only_prepared`] whether a prepared statement's SQL can (D1 sends it to SQLite
//!   whole, where `exec()` runs each line on its own); they are `const fn`s, so constant SQL
//!   is judged by the compiler.
//! - [`should_retry`] combines the two: not-executed failures are retried, maybe-executed
//!   ones only for read-only SQL, permanent ones never; [`decide()`] is the whole retry
//!   table, with the attempt limit, the budget and nesting.
//! - [`D1Receiver`] marks the types whose calls `#[d1_retry]` retries.
//! - [`RetryPolicy`] is the jittered exponential schedule, and [`Retry`] the driver that
//!   follows it, waiting through a [`Sleeper`].
//! - [`RetryPolicy::with_attempt_timeout`] and [`RetryPolicy::with_deadline`] bound a D1
//!   that stalls; a call they cut fails with [`TimedOut`], as maybe executed.
//!
//! ```
//! use d1_retry_runtime::{classify_message, is_read_only, should_retry, FailureClass};
//!
//! let class = classify_message("D1_ERROR: Network connection lost.");
//! assert_eq!(class, FailureClass::MaybeExecuted);
//! assert!(should_retry(class, is_read_only("SELECT * FROM users WHERE id = ?1")));
//! assert!(!should_retry(class, is_read_only("INSERT INTO users (name) VALUES (?1)")));
//! ```
//!
//! # Features
//!
//! - `tokio` (default): [`TokioSleeper`], the default sleeper on native targets.
//! - `worker`: classification of `worker::Error`, the `worker::Delay` sleeper (the default
//!   on `wasm32`) and the `D1Retry` wrapper.
//! - `testing`: the `testing` module, a local D1 on SQLite with injectable failures, for tests.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_auto_cfg))]

mod classify;
mod dispatch;
#[cfg(test)]
mod fake;
// At the root: its path, `d1_retry_runtime::log`, is the target of every line it writes,
// which filters and the end-to-end suite select the lines by.
mod log;
mod read_only;
mod retry;
mod schedule;

#[doc(hidden)]
pub mod __private;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "worker")]
pub mod worker;

pub use crate::classify::class::FailureClass;
pub use crate::classify::{classify, classify_message};
pub use crate::dispatch::d1_prepare::D1Prepare;
pub use crate::dispatch::receiver::D1Receiver;
pub use crate::read_only::{is_read_only, is_read_only_prepared};
pub use crate::retry::decide::{Access, Facts, Withheld, decide, should_retry};
pub use crate::retry::standalone::Retry;
pub use crate::schedule::budget::{RetryBudget, RetryTokens};
pub use crate::schedule::policy::{PolicyError, RetryPolicy};
#[cfg(not(any(feature = "tokio", all(feature = "worker", target_arch = "wasm32"))))]
pub use crate::schedule::sleep::NoDefaultSleeper;
#[cfg(feature = "tokio")]
pub use crate::schedule::sleep::TokioSleeper;
pub use crate::schedule::sleep::{DefaultSleeper, Sleeper, Stopwatch};
pub use crate::schedule::timeout::{TimeLimit, TimedOut};
