//! Keep Cloudflare Workers working through transient D1 failures, without ever running a
//! write twice.
//!
//! D1 fails now and then for reasons unrelated to the query: a node cannot be resolved, a
//! Durable Object resets, the network drops, the queue overflows. Retrying helps, but after a
//! failure that leaves it unknown whether a write ran, a careless retry runs it twice.
//! d1-retry retries exactly the failures that are safe to retry:
//!
//! ```
//! # #[derive(Debug)] pub struct Error(String);
//! # impl std::fmt::Display for Error {
//! #     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(&self.0) }
//! # }
//! # impl std::error::Error for Error {}
//! # pub struct D1Database;
//! # #[derive(Clone)] pub struct Statement;
//! # impl d1_retry::D1Receiver for Statement {}
//! # impl D1Database { pub fn prepare(&self, _sql: impl Into<String>) -> Statement { Statement } }
//! # impl Statement {
//! #     pub fn bind(self, _values: &[i64]) -> Result<Self, Error> { Ok(self) }
//! #     pub async fn first(&self) -> Result<Option<i64>, Error> { Ok(Some(7)) }
//! #     pub async fn run(&self) -> Result<u64, Error> { Ok(1) }
//! # }
//! use d1_retry::d1_retry;
//!
//! struct UserRepo {
//!     db: D1Database, // worker::D1Database in a Worker
//! }
//!
//! impl UserRepo {
//!     /// A read: retried whether or not D1 may have run it.
//!     #[d1_retry]
//!     async fn find(&self, id: i64) -> Result<Option<i64>, Error> {
//!         self.db
//!             .prepare("SELECT id FROM users WHERE id = ?1")
//!             .bind(&[id])?
//!             .first()
//!             .await
//!     }
//!
//!     /// A write: retried only when D1 was never reached.
//!     #[d1_retry]
//!     async fn rename(&self, id: i64) -> Result<u64, Error> {
//!         self.db
//!             .prepare("UPDATE users SET name = 'ada' WHERE id = ?1")
//!             .bind(&[id])?
//!             .run()
//!             .await
//!     }
//! }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! #     let repo = UserRepo { db: D1Database };
//! #     assert_eq!(repo.find(7).await.ok(), Some(Some(7)));
//! #     assert_eq!(repo.rename(7).await.ok(), Some(1));
//! # }
//! ```
//!
//! Every failure is sorted into one of three classes from D1's error vocabulary
//! ([`classify`]): *not executed* (D1 was never reached), *maybe executed*, or *permanent*
//! (retrying cannot help). Every statement is judged read-only or not by
//! [`is_read_only_prepared`] (SQL handed to `prepare`, which D1 sends to SQLite whole) or
//! [`is_read_only`] (SQL handed to `exec`, which D1 runs line by line), which lex SQL the way
//! SQLite does: at compile time when the SQL is a literal or a constant, at run time
//! otherwise. The attribute retries each D1 call in the body on its
//! own (a completed statement never runs again, and nothing else in the body runs twice),
//! and [`decide`] holds the table:
//!
//! | the call's SQL | not executed | maybe executed | permanent |
//! |---|---|---|---|
//! | read-only (literal, constant, or dynamic and scanned) | retry | retry | no |
//! | may write, or out of sight | retry | no | no |
//! | `#[d1_retry(read_only)]` / `#[d1_retry(idempotent)]`: the whole body, vouched for | retry | retry | no |
//!
//! The calls of one function call share at most 4 retries, waiting 200 ms, doubling, capped
//! at 2 s, jittered to 80-120 % ([`RetryPolicy`]); a shared [`RetryBudget`] pauses them while
//! D1 keeps failing. Each retry logs a `tracing` warning with the fields `d1.operation`,
//! `d1.read_only`, `d1.attempt`, `d1.max_attempts`, `d1.failure_class`, `d1.failure` and
//! `d1.delay_ms`; a transient failure that is not retried logs why in `d1.withheld`.
//! When it stops, the caller gets the call's error value, of its own type, unchanged.
//!
//! D1 also stalls. `#[d1_retry(attempt_timeout_ms = 2000, deadline_ms = 10_000)]` races each
//! D1 call against a timer and bounds the whole call; a call cut by a limit fails as maybe
//! executed with a [`TimedOut`] (a read is retried, a write handed back). Off by default.
//!
//! [`d1_retry`] documents the options, the shapes it accepts and the code it expands to;
//! [`Retry`] is the same driver without the attribute.
//!
//! # Features
//!
//! - `tokio` (default): wait through tokio's timer ([`TokioSleeper`]), for native targets and
//!   tests with tokio's paused clock.
//! - `worker`: classify `worker::Error`, wait through `worker::Delay` on `wasm32`, mark
//!   `worker`'s D1 types as [`D1Receiver`]s, and bring `D1Retry`.
//! - `testing`: `d1_retry::testing`, a local D1 on SQLite with injectable failures.
#![warn(missing_docs)]

#[doc(inline)]
pub use d1_retry_macros::d1_retry;
pub use d1_retry_runtime::*;

#[doc(hidden)]
pub use d1_retry_runtime::__private;

/// The attribute's documentation lives in the proc-macro crate, which cannot run examples
/// that use `d1_retry`; they are compiled and run here, as doctests of this crate.
#[cfg(doctest)]
#[doc = include_str!("../d1-retry-macros/src/d1_retry.md")]
struct AttributeDocTests;
