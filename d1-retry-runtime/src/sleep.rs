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

#[derive(Clone, Copy, Debug)]
enum Started {
    #[cfg(feature = "tokio")]
    Tokio(tokio::time::Instant),
    #[cfg(all(feature = "worker", target_arch = "wasm32"))]
    Js(f64),
    /// A stopwatch whose time is given by the caller, for sleepers of your own.
    Given(fn() -> Duration, Duration),
}

impl Stopwatch {
    /// Starts now on tokio's clock.
    #[cfg(feature = "tokio")]
    #[must_use]
    pub fn tokio() -> Self {
        Stopwatch {
            started: Started::Tokio(tokio::time::Instant::now()),
        }
    }

    /// Starts now on the Worker's clock (`Date.now()`).
    #[cfg(all(feature = "worker", target_arch = "wasm32"))]
    #[must_use]
    pub fn js() -> Self {
        Stopwatch {
            started: Started::Js(worker::js_sys::Date::now()),
        }
    }

    /// Starts now on a clock of your own: `now` returns the time since any fixed origin.
    #[must_use]
    pub fn from_clock(now: fn() -> Duration) -> Self {
        Stopwatch {
            started: Started::Given(now, now()),
        }
    }

    /// The time since the stopwatch started.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        match self.started {
            #[cfg(feature = "tokio")]
            Started::Tokio(started) => started.elapsed(),
            #[cfg(all(feature = "worker", target_arch = "wasm32"))]
            Started::Js(started) => {
                let ms = (worker::js_sys::Date::now() - started).max(0.0);
                Duration::from_secs_f64(ms / 1000.0)
            }
            Started::Given(now, started) => now().saturating_sub(started),
        }
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
        Some(Stopwatch::tokio())
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
