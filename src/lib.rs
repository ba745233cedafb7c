//! Keep Cloudflare Workers working through transient D1 failures, without ever running a
//! write twice.
//!
//! STUB: the facade documentation is written with the attribute.
#![warn(missing_docs)]

pub use d1_retry_macros::d1_retry;
pub use d1_retry_runtime::*;

#[doc(hidden)]
pub use d1_retry_runtime::__private;
