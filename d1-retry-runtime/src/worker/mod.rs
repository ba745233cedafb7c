//! Cloudflare Workers support (the `worker` feature): `worker::Error` classification, a
//! sleeper on `worker::Delay`, and [`D1Retry`], a `worker::D1Database` whose calls are retried.
//!
//! - [`classify`](crate::classify()) reads a `worker::Error` in every shape D1 failures take
//!   (`Error::D1`, `Error::UnknownJsError`, `Error::JsError`, `Error::RustError`), also
//!   inside the `source()` chain of an error type of your own, and never formats a
//!   `D1Error`, whose `Display` panics in `worker` 0.8.7. That reading is part of the
//!   classifier (it is what the feature turns on there); this module holds only what is
//!   about running inside a Worker.
//! - [`WorkerSleeper`] is the [`DefaultSleeper`](crate::DefaultSleeper) on `wasm32`, so
//!   `#[d1_retry]` and [`Retry`](crate::Retry) wait with `setTimeout` inside a Worker;
//!   nothing on that path reads `std::time`, which panics there.
//! - [`D1Retry`] is for code that wants every D1 call retried without annotating functions.
//!
//! These items live in this module rather than at the crate root because they exist only
//! with the feature, and their names say which platform they are for.

mod d1;
mod sleeper;

pub use self::d1::{D1Retry, D1RetrySession, D1RetryStatement};
pub use self::sleeper::WorkerSleeper;
