use core::future::Future;
use core::time::Duration;

/// Waits between attempts.
///
/// d1-retry never reads a clock itself (`std::time::Instant` panics inside a Worker); it
/// only asks a sleeper to wait. [`DefaultSleeper`] is chosen by features: `worker::WorkerSleeper`
/// on `wasm32` with the `worker` feature, otherwise [`TokioSleeper`] with the `tokio`
/// feature (on by default). Any `Fn(Duration) -> impl Future<Output = ()>` is a sleeper too.
///
/// The future need not be `Send`: Worker futures are not.
///
/// ```
/// use core::time::Duration;
/// use d1_retry_runtime::Sleeper;
///
/// // A sleeper that never waits, for a test that does not care about time.
/// let no_wait = |_: Duration| core::future::ready(());
/// let _sleep = no_wait.sleep(Duration::from_millis(200));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot wait between attempts",
    label = "not a d1-retry sleeper",
    note = "enable the `tokio` feature (native) or the `worker` feature (wasm32), \
            or pass a sleeper of your own"
)]
pub trait Sleeper {
    /// The future that completes after the delay.
    type Sleep: Future<Output = ()>;

    /// Returns a future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> Self::Sleep;

    /// Starts a [`Stopwatch`] on the sleeper's clock, which a call's deadline is measured
    /// with. `None` (the default) for a sleeper without a clock: then a deadline still cuts
    /// each attempt, but the time spent before it is not known, so it is not counted.
    fn stopwatch(&self) -> Option<Stopwatch> {
        None
    }
}

/// Measures how long a call has run, on the clock of its [`Sleeper`]: tokio's (paused in
/// tests) or the Worker's `Date.now()`. d1-retry reads no clock of its own
/// (`std::time::Instant` panics inside a Worker).
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    started: Started,
}

// One clock per build, so a stopwatch is as small as that clock's instant.
#[cfg(all(feature = "worker", target_arch = "wasm32"))]
type Started = f64;
#[cfg(all(
    feature = "tokio",
    not(all(feature = "worker", target_arch = "wasm32"))
))]
type Started = tokio::time::Instant;
#[cfg(not(any(feature = "tokio", all(feature = "worker", target_arch = "wasm32"))))]
type Started = core::convert::Infallible;

impl Stopwatch {
    /// Starts now on the clock of the [`DefaultSleeper`]: tokio's natively, `Date.now()` in
    /// a Worker. `None` when neither the `tokio` nor the `worker` feature gives one.
    #[must_use]
    pub fn start() -> Option<Self> {
        #[cfg(all(feature = "worker", target_arch = "wasm32"))]
        return Some(Stopwatch {
            started: worker::js_sys::Date::now(),
        });
        #[cfg(all(
            feature = "tokio",
            not(all(feature = "worker", target_arch = "wasm32"))
        ))]
        return Some(Stopwatch {
            started: tokio::time::Instant::now(),
        });
        #[cfg(not(any(feature = "tokio", all(feature = "worker", target_arch = "wasm32"))))]
        return None;
    }

    /// The time since the stopwatch started.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        #[cfg(all(feature = "worker", target_arch = "wasm32"))]
        // Whole nanoseconds through a saturating cast rather than `from_secs_f64`, whose
        // panicking range check would be linked into every Worker.
        return Duration::from_nanos(
            ((worker::js_sys::Date::now() - self.started).max(0.0) * 1_000_000.0) as u64,
        );
        #[cfg(all(
            feature = "tokio",
            not(all(feature = "worker", target_arch = "wasm32"))
        ))]
        return self.started.elapsed();
        #[cfg(not(any(feature = "tokio", all(feature = "worker", target_arch = "wasm32"))))]
        match self.started {}
    }
}

impl<F, Fut> Sleeper for F
where
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = ()>,
{
    type Sleep = Fut;

    fn sleep(&self, duration: Duration) -> Fut {
        self(duration)
    }
}

/// Sleeps through `tokio::time::sleep`, so tests can use tokio's paused clock.
///
/// Do not use it inside a Worker: tokio's timer panics on `wasm32-unknown-unknown`.
#[cfg(feature = "tokio")]
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioSleeper;

#[cfg(feature = "tokio")]
impl Sleeper for TokioSleeper {
    type Sleep = tokio::time::Sleep;

    fn sleep(&self, duration: Duration) -> Self::Sleep {
        tokio::time::sleep(duration)
    }

    fn stopwatch(&self) -> Option<Stopwatch> {
        Stopwatch::start()
    }
}

/// The sleeper used when none is given: [`TokioSleeper`] on native targets with the
/// `tokio` feature, `WorkerSleeper` on `wasm32` with the `worker` feature.
#[cfg(all(feature = "worker", target_arch = "wasm32"))]
pub type DefaultSleeper = crate::worker::WorkerSleeper;

/// The sleeper used when none is given: [`TokioSleeper`] on native targets with the
/// `tokio` feature, `WorkerSleeper` on `wasm32` with the `worker` feature.
#[cfg(all(
    feature = "tokio",
    not(all(feature = "worker", target_arch = "wasm32"))
))]
pub type DefaultSleeper = TokioSleeper;

/// The sleeper used when none is given. Neither the `tokio` nor the `worker` feature is
/// on, so there is none: pass one with `Retry::sleeper`.
#[cfg(not(any(feature = "tokio", all(feature = "worker", target_arch = "wasm32"))))]
pub type DefaultSleeper = NoDefaultSleeper;

/// Stands in for [`DefaultSleeper`] when no feature provides one; it is not a [`Sleeper`],
/// so using it is a compile error that names the features to enable.
#[cfg(not(any(feature = "tokio", all(feature = "worker", target_arch = "wasm32"))))]
#[derive(Clone, Copy, Debug, Default)]
pub struct NoDefaultSleeper;
