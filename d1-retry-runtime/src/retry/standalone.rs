use core::fmt::Display;
use core::future::Future;
use std::error::Error;

use crate::classify::failure::Failure;
use crate::retry::decide::Access;
use crate::retry::driver::Driver;
use crate::retry::operation::OperationName;
use crate::retry::scope::{Watched, begin_write, record_write, settle_write};
use crate::schedule::timeout::TimedOut;
use crate::{DefaultSleeper, FailureClass, RetryPolicy, Sleeper};

/// The retry driver, for code that does not use `#[d1_retry]`.
///
/// It runs an attempt, and when the attempt fails it classifies the error, decides with
/// [`decide`](crate::decide()) whether running the attempt again is safe, waits
/// through the [`Sleeper`], logs, and tries again, at most
/// [`max_attempts`](RetryPolicy::max_attempts) times. When it stops, the caller gets the
/// last attempt's error value unchanged.
///
/// # Default
///
/// - the attempt may write: only [`NotExecuted`](FailureClass::NotExecuted) failures are
///   retried until [`read_only`](Self::read_only) or [`idempotent`](Self::idempotent) says otherwise;
/// - [`RetryPolicy::DEFAULT`];
/// - [`DefaultSleeper`];
/// - jitter seeded from the platform, different on every call.
///
/// The futures need not be `Send`, and a call whose first attempt succeeds allocates nothing.
///
/// An attempt runs as a whole: a `#[d1_retry]` function or `D1Retry` call inside it does
/// not retry on its own, so attempts never multiply; this driver decides. A task spawned
/// from the attempt escapes that scope.
///
/// Until, in an attempt that may write, one of those calls may have written: from then on
/// the attempt is not run again, since that call would be made again, and the calls after
/// it retry on their own, as they do outside any `Retry`. So
/// `repo.place_order().await?; repo.order_count().await` (two `#[d1_retry]` methods)
/// inserts once, whichever call fails. What the driver cannot see are D1 calls made
/// directly in the attempt: after `ins_a.run().await?; ins_b.run().await`, a failure of
/// `ins_b` that did not reach D1 runs the attempt again, and inserts `a` twice. The same
/// holds for a direct write followed by any other failure whose text reads "not executed",
/// such as a row type that rejects a client's value and echoes it (`all()`, then
/// `results::<T>()`). So an
/// attempt that may write should make its D1 calls through `#[d1_retry]` functions, or
/// give each direct write a `Retry` of its own; several direct calls in one attempt are
/// safe only when running all of them twice is ([`read_only`](Self::read_only),
/// [`idempotent`](Self::idempotent)).
///
/// ```
/// # #[derive(Debug)] struct DbError(&'static str);
/// # impl std::fmt::Display for DbError {
/// #     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(self.0) }
/// # }
/// # impl std::error::Error for DbError {}
/// # async fn query_user(_id: i64) -> Result<String, DbError> { Ok("ada".into()) }
/// use d1_retry_runtime::Retry;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), DbError> {
/// let name = Retry::new("users.find")
///     .read_only(true)
///     .run(|| query_user(7))
///     .await?;
/// assert_eq!(name, "ada");
/// # Ok(()) }
/// ```
#[must_use = "a Retry does nothing until `run` is awaited"]
pub struct Retry<'a, S = DefaultSleeper> {
    operation: &'a str,
    access: Access,
    policy: RetryPolicy,
    sleeper: S,
    seed: Option<u64>,
}

impl<'a> Retry<'a, DefaultSleeper> {
    /// A driver for the operation named `operation` (the `d1.operation` log field).
    pub fn new(operation: &'a str) -> Self {
        Retry {
            operation,
            access: Access::Write,
            policy: RetryPolicy::DEFAULT,
            sleeper: DefaultSleeper::default(),
            seed: None,
        }
    }
}

impl<'a, S> Retry<'a, S> {
    /// Whether every statement the attempt runs is read-only, so that failures after which
    /// it may have run can be retried. Pass the verdict of
    /// [`is_read_only_prepared`](crate::is_read_only_prepared) for SQL handed to `prepare`,
    /// of [`is_read_only`](crate::is_read_only) for SQL handed to `exec`.
    ///
    /// An attempt in which a D1 call made through d1-retry may have written (a nested
    /// `#[d1_retry]` function's write) is not run again all the same, as a
    /// `#[d1_retry(read_only)]` body that wrote is not (`d1.withheld =
    /// "write_in_read_only"`).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.access = if read_only {
            Access::ReadOnly
        } else {
            Access::Write
        };
        self
    }

    /// Declares that running the attempt twice has the effect of running it once
    /// (an upsert, `INSERT OR IGNORE`, ...), so it is retried like a read. Inside work
    /// that is retried as a whole (a `#[d1_retry(read_only)]` body, another `Retry`), it
    /// counts as a write made there: the declaration covers this attempt, not the work
    /// around it.
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.access = if idempotent {
            Access::Idempotent
        } else {
            Access::Write
        };
        self
    }

    /// The schedule and the number of attempts.
    pub fn policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Seeds the jitter, for reproducible tests.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Waits through `sleeper` instead of the [`DefaultSleeper`].
    pub fn sleeper<S2: Sleeper>(self, sleeper: S2) -> Retry<'a, S2> {
        Retry {
            operation: self.operation,
            access: self.access,
            policy: self.policy,
            sleeper,
            seed: self.seed,
        }
    }
}

impl<'a, S: Sleeper> Retry<'a, S> {
    /// Runs `attempt` until it succeeds or must not be retried; errors are classified with
    /// [`classify`](crate::classify()), their `source()` chain included.
    ///
    /// The policy's time limits ([`RetryPolicy::with_attempt_timeout`],
    /// [`RetryPolicy::with_deadline`]) need a way to hand the caller a [`TimedOut`]:
    /// [`run_timed`](Self::run_timed) applies them; this method does not.
    pub async fn run<T, E, F, Fut>(self, attempt: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Error + 'static,
    {
        self.drive(ByError, attempt).await
    }

    /// Like [`run`](Self::run), within the policy's time limits: an attempt still running
    /// at its timeout, or at the call's deadline, is dropped and fails as
    /// [`MaybeExecuted`](FailureClass::MaybeExecuted), and the caller gets the
    /// [`TimedOut`] as `E`. Dropping the attempt does not cancel a query D1 already has.
    ///
    /// ```
    /// use core::time::Duration;
    /// use d1_retry_runtime::{Retry, RetryPolicy, TimedOut};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// let policy = RetryPolicy::DEFAULT.with_attempt_timeout(Duration::from_secs(2));
    /// // A read that never answers: each attempt is cut after 2 s, then retried.
    /// let result: Result<u32, TimedOut> = Retry::new("users.count")
    ///     .read_only(true)
    ///     .policy(policy.without_budget())
    ///     .run_timed(|| std::future::pending())
    ///     .await;
    /// assert_eq!(result.unwrap_err().after(), Duration::from_secs(2));
    /// # }
    /// ```
    pub async fn run_timed<T, E, F, Fut>(self, attempt: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Error + From<TimedOut> + 'static,
    {
        self.drive_timed(attempt, E::from).await
    }

    /// Like [`run`](Self::run), for error types that are not `std::error::Error`
    /// (`anyhow::Error`, `String`, ...): `classify` decides each error's class.
    ///
    /// ```
    /// use d1_retry_runtime::{classify_message, Retry};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let result: Result<u32, String> = Retry::new("jobs.count")
    ///     .read_only(true)
    ///     .run_by(|e: &String| classify_message(e), || async { Ok(3) })
    ///     .await;
    /// assert_eq!(result, Ok(3));
    /// # }
    /// ```
    pub async fn run_by<T, E, C, F, Fut>(self, classify: C, attempt: F) -> Result<T, E>
    where
        C: FnMut(&E) -> FailureClass,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: Display,
    {
        self.drive(ByFn(classify), attempt).await
    }

    /// The loop of [`run`](Self::run) and [`run_by`](Self::run_by): no time limits, so
    /// its future holds no timer.
    pub(crate) async fn drive<T, E, C, F, Fut>(
        self,
        mut classifier: C,
        mut attempt: F,
    ) -> Result<T, E>
    where
        C: Classifier<E>,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let policy = self.policy;
        let operation = OperationName::Named(self.operation);
        let (mut driver, access) = self.into_driver(&policy, &operation);
        begin_write(access);
        loop {
            // The attempt runs as a whole: D1 calls inside it do not retry on their own
            // until one of them may have written (`Watched`).
            let mut current = core::pin::pin!(attempt());
            vouched_write(access);
            let mut watched = Watched::new(current.as_mut(), watches(access));
            let error = match (&mut watched).await {
                Ok(value) => {
                    succeeded(&driver, access);
                    settle_write(access);
                    return Ok(value);
                }
                Err(error) => error,
            };
            let failure = classifier.failure(&error, left_to(access, &watched));
            match driver.next_delay(&failure, after(access, &watched)) {
                Some(delay) => {
                    // Dropped before the wait, so a `!Send` error never lives across it.
                    drop(error);
                    driver.sleep(delay).await;
                }
                None => {
                    settle_write(access);
                    return Err(error);
                }
            }
        }
    }

    /// The loop of [`run_timed`](Self::run_timed): each attempt raced against the policy's
    /// time limits, a cut one handed back as `timed_out(cut)` when it is not retried.
    async fn drive_timed<T, E, F, Fut>(
        self,
        mut attempt: F,
        timed_out: fn(TimedOut) -> E,
    ) -> Result<T, E>
    where
        E: Error + 'static,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let policy = self.policy;
        let operation = OperationName::Named(self.operation);
        let (mut driver, begun) = self.into_driver(&policy, &operation);
        begin_write(begun);
        loop {
            let mut current = core::pin::pin!(attempt());
            vouched_write(begun);
            let mut watched = Watched::new(current.as_mut(), watches(begun));
            let result = driver.attempt(&mut watched).await;
            let access = after(begun, &watched);
            let delay = match result {
                Ok(Ok(value)) => {
                    succeeded(&driver, access);
                    settle_write(begun);
                    return Ok(value);
                }
                Ok(Err(error)) => match driver.next_delay(
                    &Failure::from_error(&error).or_left(left_to(begun, &watched)),
                    access,
                ) {
                    Some(delay) => delay,
                    None => {
                        settle_write(begun);
                        return Err(error);
                    }
                },
                Err(cut) => {
                    let failure = Failure::with_class(FailureClass::MaybeExecuted, &cut);
                    match driver.next_delay(&failure, access) {
                        Some(delay) => delay,
                        None => {
                            settle_write(begun);
                            return Err(timed_out(cut));
                        }
                    }
                }
            };
            driver.sleep(delay).await;
        }
    }

    fn into_driver<'p>(
        self,
        policy: &'p RetryPolicy,
        operation: &'p OperationName<'p>,
    ) -> (Driver<'p, S>, Access)
    where
        'a: 'p,
    {
        let driver = Driver::new(policy, operation, self.sleeper).with_seed(self.seed);
        (driver, self.access)
    }
}

/// The access of an attempt that just ran: one that may write and in which a D1 call that
/// may have written was made ([`Watched`]) must not run again, as that call would. An
/// attempt declared read-only in which one was made did write, whatever it declared: it
/// is not run again either, as a `#[d1_retry(read_only)]` body that wrote is not (a nested
/// `#[d1_retry]` write whose failure it was handed, maybe executed, would be made twice).
/// An attempt declared idempotent runs again as declared.
fn after<F>(access: Access, watched: &Watched<'_, F>) -> Access {
    match access {
        Access::Idempotent => access,
        Access::ReadOnly if watched.wrote() => Access::Unretryable,
        Access::ReadOnly => access,
        _ if watched.wrote() => Access::WroteBefore,
        _ => access,
    }
}

/// The failures D1 calls within the attempt left to it, for an error that tells no class
/// ([`Failure::or_left`]): only in an attempt declared read-only or idempotent. One that
/// may write may have made a direct write, out of d1-retry's sight, after the failure it
/// was left, so its silent error stays permanent.
fn left_to<F>(access: Access, watched: &Watched<'_, F>) -> Option<FailureClass> {
    match access {
        Access::ReadOnly | Access::Idempotent => watched.left(),
        _ => None,
    }
}

/// Whether an attempt of `access` is [`Watched`]: unless it is declared idempotent, it is
/// not run again once a D1 call in it may have written, so the calls after that retry on
/// their own, as they would outside it (one declared idempotent always may run again).
fn watches(access: Access) -> bool {
    access != Access::Idempotent
}

/// Before an attempt declared idempotent: it counts as a write made, which an attempt
/// around this `Retry` (a `read_only` body's, another `Retry`'s) must not make again. The
/// declaration lets this `Retry` run it again, not the work around it, whose reads may have
/// chosen what it writes.
fn vouched_write(access: Access) {
    if access == Access::Idempotent {
        record_write();
    }
}

/// After an attempt succeeded: the budget gets its share back, and an attempt that may
/// write counts as a write, which a `Retry` around this one must not make again.
fn succeeded<S: Sleeper>(driver: &Driver<'_, S>, access: Access) {
    driver.succeeded();
    if access.may_write() {
        record_write();
    }
}

/// How [`Retry::drive`] turns the caller's error into a [`Failure`]; `left`: the failures
/// D1 calls within the attempt left to it (`Watched::left`).
pub(crate) trait Classifier<E> {
    fn failure<'e>(&mut self, error: &'e E, left: Option<FailureClass>) -> Failure<'e>;
}

/// The error read as [`classify`](crate::classify()) reads it; where it does not tell a
/// class (it reads as permanent), the D1 failures behind it decide ([`Failure::or_left`]).
pub(crate) struct ByError;

impl<E: Error + 'static> Classifier<E> for ByError {
    fn failure<'e>(&mut self, error: &'e E, left: Option<FailureClass>) -> Failure<'e> {
        Failure::from_error(error).or_left(left)
    }
}

/// The caller's own classifier, whose verdict stands.
struct ByFn<C>(C);

impl<E: Display, C: FnMut(&E) -> FailureClass> Classifier<E> for ByFn<C> {
    fn failure<'e>(&mut self, error: &'e E, _: Option<FailureClass>) -> Failure<'e> {
        Failure::with_class((self.0)(error), error)
    }
}
