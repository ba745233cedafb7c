//! The schedule of the repository's retried functions.

use d1_retry::RetryPolicy;

/// The default schedule (5 attempts, about 200, 400, 800 and 1600 ms apart).
#[cfg(not(feature = "fast-retries"))]
pub const POLICY: RetryPolicy = RetryPolicy::DEFAULT;

/// Built with `--features fast-retries` (the end-to-end tests): the same 5 attempts and
/// jitter, 5 ms doubling to a 20 ms cap, so a test can exhaust them in a blink; and no
/// retry budget, because the tests inject hundreds of failures into one isolate on purpose.
#[cfg(feature = "fast-retries")]
pub const POLICY: RetryPolicy = RetryPolicy::DEFAULT
    .with_base_delay(core::time::Duration::from_millis(5))
    .with_max_delay(core::time::Duration::from_millis(20))
    .without_budget();
