use core::time::Duration;

use crate::Sleeper;

/// Sleeps through [`worker::Delay`], a JavaScript `setTimeout` inside the Worker.
///
/// It is the [`DefaultSleeper`](crate::DefaultSleeper) on `wasm32` with the `worker`
/// feature, so code inside a Worker never names it; it exists on other targets only so
/// that code mentioning it still compiles there (it needs a JavaScript runtime to wait).
///
/// ```no_run
/// use core::time::Duration;
/// use d1_retry_runtime::Sleeper;
/// use d1_retry_runtime::worker::WorkerSleeper;
///
/// # async fn inside_a_worker() {
/// WorkerSleeper.sleep(Duration::from_millis(200)).await;
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkerSleeper;

/// `setTimeout` takes a signed 32-bit number of milliseconds and `worker::Delay` casts
/// with `as`, so a longer wait would wrap to a negative timeout and fire at once.
const LONGEST_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

impl Sleeper for WorkerSleeper {
    type Sleep = worker::Delay;

    fn sleep(&self, duration: Duration) -> worker::Delay {
        worker::Delay::from(clamp_to_timeout(duration))
    }

    #[cfg(target_arch = "wasm32")]
    fn stopwatch(&self) -> Option<crate::Stopwatch> {
        crate::Stopwatch::start()
    }
}

fn clamp_to_timeout(duration: Duration) -> Duration {
    duration.min(LONGEST_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_beyond_set_timeout_range_are_clamped_not_wrapped() {
        let ms = Duration::from_millis;
        assert_eq!(clamp_to_timeout(ms(200)), ms(200));
        assert_eq!(clamp_to_timeout(LONGEST_TIMEOUT), LONGEST_TIMEOUT);
        assert_eq!(clamp_to_timeout(Duration::MAX), LONGEST_TIMEOUT);
        let clamped_ms = clamp_to_timeout(ms(1 << 40)).as_millis();
        assert!(i32::try_from(clamped_ms).is_ok());
    }
}
