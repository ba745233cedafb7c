//! The clock that scripted timelines read.
//!
//! A concept of its own because the kit never reads time by itself: a test that pauses
//! tokio's clock, or simulates time, must be the only source of "now", or a timeline would
//! drift from the test's idea of it.

use core::fmt;
use core::time::Duration;
use std::sync::Arc;

/// A caller-provided notion of time for scripted timelines.
///
/// The kit never reads a clock of its own; a timeline asks this one. Under tokio's paused
/// clock, [`Clock::tokio`] gives virtual time since its creation. Any closure works:
/// a step counter, a simulated clock.
///
/// A clock only reads time; a stall ([`Fault::stall`](super::Fault::stall)) waits it out
/// through the database's sleeper, `tokio::time::sleep` by default, which moves the time
/// [`Clock::tokio`] reads. With a clock of your own, give the database a sleeper that
/// moves it ([`D1Database::set_sleeper`](super::D1Database::set_sleeper)).
///
/// ```
/// use core::time::Duration;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use d1_retry_runtime::testing::Clock;
///
/// let ticks = Arc::new(AtomicU64::new(0));
/// let seen = ticks.clone();
/// let clock = Clock::new(move || Duration::from_secs(seen.load(Ordering::Relaxed)));
/// ticks.store(90, Ordering::Relaxed);
/// assert_eq!(clock.now(), Duration::from_secs(90));
/// ```
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> Duration + Send + Sync>);

impl Clock {
    /// A clock that reads `now`.
    pub fn new(now: impl Fn() -> Duration + Send + Sync + 'static) -> Self {
        Clock(Arc::new(now))
    }

    /// Time elapsed since this call, on tokio's clock (virtual under a paused clock).
    #[cfg(feature = "tokio")]
    #[must_use]
    pub fn tokio() -> Self {
        let start = tokio::time::Instant::now();
        Clock::new(move || start.elapsed())
    }

    /// The time now.
    #[must_use]
    pub fn now(&self) -> Duration {
        (self.0)()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Clock").field(&self.now()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_describes_itself_by_its_reading() {
        let clock = Clock::new(|| Duration::from_secs(3));
        assert_eq!(format!("{clock:?}"), "Clock(3s)");
    }

    #[cfg(feature = "tokio")]
    #[test]
    fn the_tokio_clock_follows_paused_time() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a current-thread runtime builds");
        runtime.block_on(async {
            let clock = Clock::tokio();
            tokio::time::sleep(Duration::from_secs(42)).await;
            assert_eq!(clock.now(), Duration::from_secs(42));
        });
    }
}
