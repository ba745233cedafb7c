use core::fmt;
use core::time::Duration;

use crate::RetryBudget;

/// How many times to try, and how long to wait between tries.
///
/// Before retry `n` (`n` = 1 for the second attempt) the wait is
/// `min(base_delay × 2^(n-1), max_delay)`, then multiplied by a factor drawn uniformly
/// between the jitter bounds. Jitter comes after the cap, so a capped delay still spreads.
///
/// # Default
///
/// [`RetryPolicy::DEFAULT`], also [`RetryPolicy::default()`]:
///
/// - at most **5 attempts** (4 retries);
/// - base delay **200 ms**, doubling: 200, 400, 800, 1600 ms before jitter;
/// - each delay capped at **2 s**;
/// - jitter **80 % to 120 %**;
/// - so at most **3.6 s** of waiting in all before the last error is returned;
/// - retries throttled by [`RetryBudget::DEFAULT`], shared by every call in the process
///   (or Worker isolate): when D1 keeps failing, retries pause instead of multiplying the
///   load. [`with_budget`](Self::with_budget) and [`without_budget`](Self::without_budget)
///   change that;
/// - **no time limits**: a call waits as long as D1 does.
///   [`with_attempt_timeout`](Self::with_attempt_timeout) and
///   [`with_deadline`](Self::with_deadline) bound a stalled D1.
///
/// # Validity
///
/// The builders are `const fn`s that record what they are given; [`validate`](Self::validate)
/// says whether the result makes sense (at least one attempt, base delay not above the cap,
/// `0 < jitter min ≤ jitter max`, a valid [`RetryBudget`], time limits above zero). A policy given to `#[d1_retry(policy = ...)]` is
/// validated by the compiler. The driver never panics on an invalid policy: it makes a
/// single attempt (a time limit of zero left out) and logs the [`PolicyError`] at error
/// level. That
/// attempt counts as any other for a `Retry` or a `read_only` body around it: a write it
/// may have made is not made again.
///
/// ```
/// use core::time::Duration;
/// use d1_retry_runtime::RetryPolicy;
///
/// const QUICK: RetryPolicy = RetryPolicy::DEFAULT
///     .with_max_attempts(3)
///     .with_base_delay(Duration::from_millis(50))
///     .with_max_delay(Duration::from_millis(100));
///
/// assert_eq!(QUICK.validate(), Ok(()));
/// assert_eq!(QUICK.max_attempts(), 3);
/// assert_eq!(
///     QUICK.delay_bounds(2),
///     (Duration::from_millis(80), Duration::from_millis(120)),
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    max_attempts: u32,
    base_delay: Duration,
    max_delay: Duration,
    jitter_min_percent: u32,
    jitter_max_percent: u32,
    budget: Option<RetryBudget>,
    /// In whole milliseconds, [`NO_LIMIT`] for none: two `u32`s keep the policy, which every
    /// call holds, as small as it was before time limits.
    attempt_timeout_ms: u32,
    deadline_ms: u32,
}

/// The time-limit fields' "none".
const NO_LIMIT: u32 = u32::MAX;

/// `duration` in whole milliseconds, rounded up so that a limit above zero stays above
/// zero, and saturating below [`NO_LIMIT`] (about 49 days). `u64` arithmetic: `u128`
/// division would link `compiler_builtins`' 128-bit division into every Worker.
const fn limit_ms(duration: Duration) -> u32 {
    let ms = duration
        .as_secs()
        .saturating_mul(1000)
        .saturating_add(duration.subsec_nanos().div_ceil(1_000_000) as u64);
    if ms >= NO_LIMIT as u64 {
        NO_LIMIT - 1
    } else {
        ms as u32
    }
}

const fn limit(ms: u32) -> Option<Duration> {
    if ms == NO_LIMIT {
        None
    } else {
        Some(Duration::from_millis(ms as u64))
    }
}

/// Why a [`RetryPolicy`] was refused by [`RetryPolicy::validate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PolicyError {
    /// `max_attempts` is 0: a call must be tried at least once.
    ZeroAttempts,
    /// The base delay is above the cap, so every delay would be the cap.
    BaseAboveCap,
    /// The jitter bounds are not `0 < min ≤ max`.
    InvalidJitter,
    /// The retry budget's limits are out of range (see [`RetryBudget::validate`]).
    InvalidBudget,
    /// The attempt timeout is zero: every attempt would time out at once.
    ZeroAttemptTimeout,
    /// The deadline is zero: every call would time out at once.
    ZeroDeadline,
}

impl PolicyError {
    /// What is wrong and what to write instead, as one sentence.
    #[must_use]
    pub const fn message(self) -> &'static str {
        match self {
            Self::ZeroAttempts => {
                "invalid RetryPolicy: max_attempts is 0; a call is always tried at least once, \
                 use max_attempts = 1 to turn retries off"
            }
            Self::BaseAboveCap => {
                "invalid RetryPolicy: the base delay is above the maximum delay; \
                 lower the base delay or raise the maximum"
            }
            Self::InvalidJitter => {
                "invalid RetryPolicy: jitter bounds must satisfy 0 < min <= max \
                 (in percent of the delay, e.g. 80 and 120)"
            }
            Self::InvalidBudget => {
                "invalid RetryPolicy: a retry budget needs 1 to 1000 max tokens and a token ratio \
                 above 0 and not above them (e.g. RetryBudget::DEFAULT: 300 tokens, ratio 0.1), \
                 or use without_budget()"
            }
            Self::ZeroAttemptTimeout => {
                "invalid RetryPolicy: the attempt timeout is 0, so every attempt would time out \
                 at once; give a few seconds (e.g. 2000 ms for reads), or leave it out to wait \
                 as long as D1 does"
            }
            Self::ZeroDeadline => {
                "invalid RetryPolicy: the deadline is 0, so every call would time out at once; \
                 give the time a whole call may take (e.g. 10 s, under your proxy's limit), or \
                 leave it out"
            }
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for PolicyError {}

impl RetryPolicy {
    /// The default policy: 5 attempts, 200 ms doubling to a 2 s cap, 80-120 % jitter.
    pub const DEFAULT: RetryPolicy = RetryPolicy {
        max_attempts: 5,
        base_delay: Duration::from_millis(200),
        max_delay: Duration::from_secs(2),
        jitter_min_percent: 80,
        jitter_max_percent: 120,
        budget: Some(RetryBudget::DEFAULT),
        attempt_timeout_ms: NO_LIMIT,
        deadline_ms: NO_LIMIT,
    };

    /// The same policy with at most `attempts` attempts in all (the first try included).
    #[must_use]
    pub const fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// The same policy with `delay` before the first retry (doubled for each later one).
    #[must_use]
    pub const fn with_base_delay(mut self, delay: Duration) -> Self {
        self.base_delay = delay;
        self
    }

    /// The same policy with every delay capped at `delay` before jitter.
    #[must_use]
    pub const fn with_max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// The same policy with each delay scaled by a factor drawn uniformly from
    /// `min_percent`% to `max_percent`%. `with_jitter(100, 100)` turns jitter off.
    #[must_use]
    pub const fn with_jitter(mut self, min_percent: u32, max_percent: u32) -> Self {
        self.jitter_min_percent = min_percent;
        self.jitter_max_percent = max_percent;
        self
    }

    /// The same policy with its retries throttled by `budget` instead of the shared
    /// [`RetryBudget::DEFAULT`].
    #[must_use]
    pub const fn with_budget(mut self, budget: RetryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The same policy with no retry budget: every retry the schedule allows is made, however
    /// often D1 fails.
    #[must_use]
    pub const fn without_budget(mut self) -> Self {
        self.budget = None;
        self
    }

    /// The same policy with each D1 call raced against a timer of `timeout`: when the timer
    /// wins, the call's future is dropped and the attempt fails as
    /// [`MaybeExecuted`](crate::FailureClass::MaybeExecuted) with a [`TimedOut`](crate::TimedOut)
    /// error. A read-only statement is then retried; a write is not, since D1 may still run it:
    /// dropping the future does not cancel the query in D1.
    ///
    /// The timer starts once the call has handed its request over (its first poll that does
    /// not complete it, microseconds after the attempt starts); a call that completes on its
    /// first poll starts none.
    #[must_use]
    pub const fn with_attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout_ms = limit_ms(timeout);
        self
    }

    /// The same policy with every call bounded by `deadline`: attempts, waits and timeouts
    /// together. No retry starts whose wait would not end before the deadline, and an
    /// attempt still running at the deadline is cut there with a [`TimedOut`](crate::TimedOut)
    /// error, not after D1 answers.
    #[must_use]
    pub const fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline_ms = limit_ms(deadline);
        self
    }

    /// The time each D1 call may take before it is abandoned, if any, in whole
    /// milliseconds (rounded up).
    #[must_use]
    pub const fn attempt_timeout(&self) -> Option<Duration> {
        limit(self.attempt_timeout_ms)
    }

    /// The time a whole call may take, retries included, if any, in whole milliseconds
    /// (rounded up).
    #[must_use]
    pub const fn deadline(&self) -> Option<Duration> {
        limit(self.deadline_ms)
    }

    /// Whether the policy bounds time at all.
    #[must_use]
    pub const fn has_time_limits(&self) -> bool {
        self.attempt_timeout_ms != NO_LIMIT || self.deadline_ms != NO_LIMIT
    }

    /// The retry budget that throttles this policy's retries, if any.
    #[must_use]
    pub const fn budget(&self) -> Option<RetryBudget> {
        self.budget
    }

    /// At most this many attempts are made, the first one included.
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The delay before the first retry, before jitter.
    #[must_use]
    pub const fn base_delay(&self) -> Duration {
        self.base_delay
    }

    /// The cap on every delay, before jitter.
    #[must_use]
    pub const fn max_delay(&self) -> Duration {
        self.max_delay
    }

    /// The jitter bounds, in percent of the capped delay.
    #[must_use]
    pub const fn jitter_percent(&self) -> (u32, u32) {
        (self.jitter_min_percent, self.jitter_max_percent)
    }

    /// Checks the settings; see the type's documentation for the rules.
    ///
    /// ```
    /// use d1_retry_runtime::{PolicyError, RetryPolicy};
    /// assert_eq!(
    ///     RetryPolicy::DEFAULT.with_max_attempts(0).validate(),
    ///     Err(PolicyError::ZeroAttempts),
    /// );
    /// ```
    pub const fn validate(&self) -> Result<(), PolicyError> {
        if self.max_attempts == 0 {
            return Err(PolicyError::ZeroAttempts);
        }
        if is_below(self.max_delay, self.base_delay) {
            return Err(PolicyError::BaseAboveCap);
        }
        if self.jitter_min_percent == 0 || self.jitter_min_percent > self.jitter_max_percent {
            return Err(PolicyError::InvalidJitter);
        }
        if self.attempt_timeout_ms == 0 {
            return Err(PolicyError::ZeroAttemptTimeout);
        }
        if self.deadline_ms == 0 {
            return Err(PolicyError::ZeroDeadline);
        }
        if let Some(budget) = &self.budget {
            return budget.validate();
        }
        Ok(())
    }

    /// The smallest and the largest delay before retry `retry` (1-based: retry 1 comes
    /// after the first attempt failed).
    ///
    /// Retries that the policy never makes (`retry` of 0, or `retry >= max_attempts`)
    /// have no delay: `(0, 0)`.
    ///
    /// ```
    /// use core::time::Duration;
    /// use d1_retry_runtime::RetryPolicy;
    /// let ms = Duration::from_millis;
    /// assert_eq!(RetryPolicy::DEFAULT.delay_bounds(1), (ms(160), ms(240)));
    /// assert_eq!(RetryPolicy::DEFAULT.delay_bounds(4), (ms(1280), ms(1920)));
    /// assert_eq!(RetryPolicy::DEFAULT.delay_bounds(5), (ms(0), ms(0)));
    /// ```
    #[must_use]
    pub const fn delay_bounds(&self, retry: u32) -> (Duration, Duration) {
        if retry == 0 || retry >= self.max_attempts {
            return (Duration::ZERO, Duration::ZERO);
        }
        let capped = self.capped(retry);
        (
            percent_of(capped, self.jitter_min_percent),
            percent_of(capped, self.jitter_max_percent),
        )
    }

    /// The largest total wait this policy can make before it gives up.
    ///
    /// ```
    /// use core::time::Duration;
    /// use d1_retry_runtime::RetryPolicy;
    /// assert_eq!(RetryPolicy::DEFAULT.max_total_delay(), Duration::from_millis(3600));
    /// ```
    #[must_use]
    pub const fn max_total_delay(&self) -> Duration {
        let mut total = Duration::ZERO;
        let mut retry = 1;
        while retry < self.max_attempts {
            let capped = self.capped(retry);
            let longest = percent_of(capped, self.jitter_max_percent);
            if !is_below(capped, self.max_delay) || capped.is_zero() {
                // Every later delay is the cap too (or zero, from a zero base): count them
                // at once instead of looping up to `u32::MAX` times.
                let remaining = self.max_attempts - retry;
                return total.saturating_add(longest.saturating_mul(remaining));
            }
            total = total.saturating_add(longest);
            retry += 1;
        }
        total
    }

    /// `min(base × 2^(retry-1), cap)`, saturating instead of overflowing.
    const fn capped(&self, retry: u32) -> Duration {
        let cap = self.max_delay;
        let mut delay = self.base_delay;
        let mut doublings = retry - 1;
        // A delay above zero reaches any cap in at most 94 doublings (`Duration::MAX` is
        // below 2^94 ns), so huge retry numbers do not loop long; zero stays zero.
        while doublings > 0 && !delay.is_zero() && is_below(delay, cap) {
            delay = delay.saturating_add(delay);
            doublings -= 1;
        }
        if is_below(delay, cap) { delay } else { cap }
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// `a < b`, in a `const fn` (`PartialOrd` is not `const`).
const fn is_below(a: Duration, b: Duration) -> bool {
    a.as_secs() < b.as_secs() || (a.as_secs() == b.as_secs() && a.subsec_nanos() < b.subsec_nanos())
}

/// `duration × percent / 100`, rounded down to the nanosecond like the exact product, and
/// saturating at [`Duration::MAX`].
///
/// In `u64` pieces, exact over the whole range of `Duration` and `u32`: with the seconds
/// split as `100 q + r` (`r < 100`), the result is `q × percent` seconds, plus
/// `r × percent / 100` seconds, plus the nanoseconds' share. `r × percent < 100 × 2^32`
/// and `subsec × percent < 10^9 × 2^32 < 2^62` cannot overflow; only `q × percent` and the
/// final sum can, and then the exact result is above `Duration::MAX` too.
const fn percent_of(duration: Duration, percent: u32) -> Duration {
    let percent = percent as u64;
    let (q, r) = (duration.as_secs() / 100, duration.as_secs() % 100);
    let r_share = r * percent;
    // Below 10^9 + 2^62 / 100: no overflow.
    let nanos = r_share % 100 * 10_000_000 + duration.subsec_nanos() as u64 * percent / 100;
    let extra_secs = r_share / 100 + nanos / 1_000_000_000;
    // Not `checked_mul`: its overflow check is a 128-bit multiplication on wasm32.
    let secs = if percent == 0 || q <= u64::MAX / percent {
        (q * percent).checked_add(extra_secs)
    } else {
        None
    };
    match secs {
        Some(secs) => Duration::new(secs, (nanos % 1_000_000_000) as u32),
        None => Duration::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn default_schedule_is_the_documented_one() {
        let p = RetryPolicy::default();
        assert_eq!(p, RetryPolicy::DEFAULT);
        assert_eq!(p.max_attempts(), 5);
        assert_eq!(p.delay_bounds(0), (ms(0), ms(0)));
        assert_eq!(p.delay_bounds(1), (ms(160), ms(240)));
        assert_eq!(p.delay_bounds(2), (ms(320), ms(480)));
        assert_eq!(p.delay_bounds(3), (ms(640), ms(960)));
        assert_eq!(p.delay_bounds(4), (ms(1280), ms(1920)));
        assert_eq!(p.delay_bounds(5), (ms(0), ms(0)));
        assert_eq!(p.max_total_delay(), ms(3600));
    }

    #[test]
    fn cap_applies_before_jitter() {
        let p = RetryPolicy::DEFAULT.with_max_attempts(10);
        // 200 × 2^4 = 3200 ms, capped to 2000 ms, then jittered.
        assert_eq!(p.delay_bounds(5), (ms(1600), ms(2400)));
        assert_eq!(p.delay_bounds(9), (ms(1600), ms(2400)));
    }

    #[test]
    fn cap_equal_to_exponential_is_kept() {
        let p = RetryPolicy::DEFAULT
            .with_max_attempts(4)
            .with_max_delay(ms(400))
            .with_jitter(100, 100);
        assert_eq!(p.delay_bounds(2), (ms(400), ms(400)));
        assert_eq!(p.delay_bounds(3), (ms(400), ms(400)));
    }

    #[test]
    fn huge_retry_numbers_saturate() {
        let p = RetryPolicy::DEFAULT
            .with_max_attempts(u32::MAX)
            .with_max_delay(Duration::MAX)
            .with_jitter(100, 100);
        assert_eq!(p.delay_bounds(200).1, Duration::MAX);
        assert_eq!(p.delay_bounds(3), (ms(800), ms(800)));
    }

    #[test]
    fn total_delay_counts_capped_retries_without_looping() {
        let p = RetryPolicy::DEFAULT.with_max_attempts(7);
        // 240 + 480 + 960 + 1920 + 2400 + 2400
        assert_eq!(p.max_total_delay(), ms(8400));
        assert_eq!(
            RetryPolicy::DEFAULT.with_max_attempts(1).max_total_delay(),
            ms(0)
        );
        assert_eq!(
            RetryPolicy::DEFAULT.with_max_attempts(2).max_total_delay(),
            ms(240)
        );
        let endless = RetryPolicy::DEFAULT.with_max_attempts(u32::MAX);
        assert_eq!(
            endless.max_total_delay(),
            ms(240 + 480 + 960 + 1920) + ms(2400) * (u32::MAX - 5)
        );
        let uncapped = RetryPolicy::DEFAULT
            .with_max_attempts(4)
            .with_max_delay(ms(10_000));
        assert_eq!(uncapped.max_total_delay(), ms(240 + 480 + 960));
    }

    #[test]
    fn durations_saturate_instead_of_wrapping() {
        let p = RetryPolicy::DEFAULT
            .with_max_delay(Duration::MAX)
            .with_jitter(100, 120);
        assert_eq!(p.delay_bounds(1).1, ms(240));
        let huge = RetryPolicy::DEFAULT
            .with_base_delay(Duration::MAX)
            .with_max_delay(Duration::MAX)
            .with_jitter(100, 120);
        assert_eq!(huge.delay_bounds(1), (Duration::MAX, Duration::MAX));
        let exact = RetryPolicy::DEFAULT
            .with_base_delay(Duration::new(u64::MAX, 0))
            .with_max_delay(Duration::new(u64::MAX, 0))
            .with_jitter(100, 100);
        assert_eq!(
            exact.delay_bounds(1),
            (Duration::new(u64::MAX, 0), Duration::new(u64::MAX, 0))
        );
        assert_eq!(huge.max_total_delay(), Duration::MAX);
    }

    /// The `u128` arithmetic `percent_of` replaced, as the reference.
    fn percent_of_u128(duration: Duration, percent: u32) -> Duration {
        let n = duration.as_nanos() * u128::from(percent) / 100;
        match u64::try_from(n / 1_000_000_000) {
            Ok(secs) => Duration::new(secs, (n % 1_000_000_000) as u32),
            Err(_) => Duration::MAX,
        }
    }

    #[test]
    fn percent_of_is_the_exact_product_rounded_down_or_saturated() {
        let durations = [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_nanos(99),
            Duration::from_nanos(999_999_999),
            ms(160),
            Duration::new(1, 1),
            Duration::new(99, 999_999_999),
            Duration::new(100, 0),
            Duration::new(12_345_678_901, 987_654_321),
            Duration::new(u64::MAX / 100, 999_999_999),
            Duration::new(u64::MAX / 120 * 100, 5),
            Duration::new(u64::MAX - 1, 999_999_999),
            Duration::new(u64::MAX, 0),
            Duration::MAX,
        ];
        let percents = [0, 1, 7, 80, 99, 100, 101, 120, 1_000, 12_345_678, u32::MAX];
        for d in durations {
            for p in percents {
                assert_eq!(percent_of(d, p), percent_of_u128(d, p), "{d:?} × {p}%");
            }
        }
        // A pseudo-random sweep over the whole range.
        let mut z = 0x1234_5678_9abc_def0_u64;
        let mut next = || {
            z = z.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            z
        };
        for _ in 0..20_000 {
            let shift = next() % 64;
            let d = Duration::new(next() >> shift, (next() % 1_000_000_000) as u32);
            let p = (next() >> (next() % 64)) as u32;
            assert_eq!(percent_of(d, p), percent_of_u128(d, p), "{d:?} × {p}%");
        }
    }

    #[test]
    fn extreme_jitter_and_caps_saturate_at_the_largest_duration() {
        // The exact product is above Duration::MAX only because of the jitter.
        let p = RetryPolicy::DEFAULT
            .with_base_delay(Duration::new(1 << 63, 0))
            .with_max_delay(Duration::MAX)
            .with_jitter(100, 300);
        assert_eq!(
            p.delay_bounds(1),
            (Duration::new(1 << 63, 0), Duration::MAX)
        );
        // The doubling itself overflows: the cap, then jitter below 100 % shrinks it.
        assert_eq!(p.with_jitter(50, 50).delay_bounds(2).1, Duration::MAX / 2);
        // Sums saturate too, and a capped schedule is counted without looping.
        assert_eq!(p.max_total_delay(), Duration::MAX);
        let endless = RetryPolicy::DEFAULT
            .with_max_attempts(u32::MAX)
            .with_base_delay(Duration::from_nanos(1))
            .with_max_delay(Duration::MAX)
            .with_jitter(1, 1);
        assert_eq!(endless.max_total_delay(), Duration::MAX);
        assert_eq!(
            endless.delay_bounds(u32::MAX - 1),
            (Duration::MAX / 100, Duration::MAX / 100)
        );
        // 2^93 ns is below Duration::MAX, 2^94 ns above it.
        let doubled = |n: u32| endless.with_jitter(100, 100).delay_bounds(n).0;
        assert_eq!(doubled(94).as_nanos(), 1 << 93);
        assert_eq!(doubled(95), Duration::MAX);
        // Huge jitter percentages: the product is exact, not saturated early.
        let wide = RetryPolicy::DEFAULT.with_jitter(1, u32::MAX);
        assert_eq!(
            wide.delay_bounds(1),
            (
                ms(2),
                Duration::from_nanos(200_000_000 * u64::from(u32::MAX) / 100)
            )
        );
    }

    #[test]
    fn a_zero_base_delay_stays_zero_however_many_retries() {
        let p = RetryPolicy::DEFAULT
            .with_max_attempts(u32::MAX)
            .with_base_delay(Duration::ZERO);
        assert_eq!(p.delay_bounds(1), (ms(0), ms(0)));
        assert_eq!(p.delay_bounds(200), (ms(0), ms(0)));
        assert_eq!(p.delay_bounds(u32::MAX - 1), (ms(0), ms(0)));
        assert_eq!(p.max_total_delay(), ms(0));
        const TOTAL: Duration = RetryPolicy::DEFAULT
            .with_max_attempts(u32::MAX)
            .with_base_delay(Duration::ZERO)
            .max_total_delay();
        assert_eq!(TOTAL, ms(0));
    }

    #[test]
    fn a_base_above_the_cap_waits_the_cap() {
        // Invalid (validate refuses it), but the bounds still follow the formula.
        let p = RetryPolicy::DEFAULT
            .with_base_delay(ms(5000))
            .with_jitter(100, 100);
        assert_eq!(p.delay_bounds(1), (ms(2000), ms(2000)));
        assert_eq!(p.max_total_delay(), ms(8000));
    }

    #[test]
    fn time_limits_round_up_and_saturate_in_whole_milliseconds() {
        let p = RetryPolicy::DEFAULT;
        let timeout = |d| p.with_attempt_timeout(d).attempt_timeout();
        assert_eq!(timeout(Duration::from_nanos(1)), Some(ms(1)));
        assert_eq!(timeout(Duration::new(1, 0)), Some(ms(1000)));
        assert_eq!(timeout(Duration::new(1, 1)), Some(ms(1001)));
        assert_eq!(timeout(Duration::new(1, 999_000_001)), Some(ms(2000)));
        let most = u64::from(u32::MAX - 1);
        assert_eq!(timeout(ms(most - 1)), Some(ms(most - 1)));
        assert_eq!(timeout(ms(most)), Some(ms(most)));
        assert_eq!(timeout(ms(most) - Duration::from_nanos(1)), Some(ms(most)));
        assert_eq!(timeout(ms(most) + Duration::from_nanos(1)), Some(ms(most)));
        assert_eq!(timeout(ms(u64::from(u32::MAX))), Some(ms(most)));
        assert_eq!(
            timeout(Duration::new(u64::MAX / 1000 + 1, 0)),
            Some(ms(most))
        );
        assert_eq!(timeout(Duration::MAX), Some(ms(most)));
        assert_eq!(
            p.with_deadline(Duration::new(u64::MAX, 999_999_999))
                .deadline(),
            Some(ms(most))
        );
    }

    #[test]
    fn validation_names_each_mistake() {
        let p = RetryPolicy::DEFAULT;
        assert_eq!(p.validate(), Ok(()));
        assert_eq!(p.with_max_attempts(1).validate(), Ok(()));
        assert_eq!(
            p.with_max_attempts(0).validate(),
            Err(PolicyError::ZeroAttempts)
        );
        assert_eq!(
            p.with_base_delay(ms(2001)).validate(),
            Err(PolicyError::BaseAboveCap)
        );
        assert_eq!(p.with_base_delay(ms(2000)).validate(), Ok(()));
        assert_eq!(
            p.with_jitter(0, 120).validate(),
            Err(PolicyError::InvalidJitter)
        );
        assert_eq!(
            p.with_jitter(121, 120).validate(),
            Err(PolicyError::InvalidJitter)
        );
        assert_eq!(p.with_jitter(120, 120).validate(), Ok(()));
        assert_eq!(p.with_jitter(1, 1).validate(), Ok(()));
        assert!(
            PolicyError::ZeroAttempts
                .to_string()
                .contains("max_attempts")
        );
    }

    #[test]
    fn budget_is_on_by_default_and_can_be_changed_or_removed() {
        static TOKENS: crate::RetryTokens = crate::RetryTokens::new();
        let p = RetryPolicy::DEFAULT;
        assert_eq!(p.budget(), Some(RetryBudget::DEFAULT));
        assert_eq!(p.without_budget().budget(), None);
        let own = RetryBudget::new(&TOKENS).with_max_tokens(5);
        assert_eq!(p.with_budget(own).budget(), Some(own));
        assert_eq!(p.without_budget().validate(), Ok(()));
        assert_eq!(
            p.with_budget(own.with_max_tokens(0)).validate(),
            Err(PolicyError::InvalidBudget)
        );
        assert!(
            PolicyError::InvalidBudget
                .to_string()
                .contains("without_budget()")
        );
    }

    #[test]
    fn accessors_report_settings() {
        let p = RetryPolicy::DEFAULT
            .with_base_delay(ms(10))
            .with_max_delay(ms(20))
            .with_jitter(90, 110);
        assert_eq!(p.base_delay(), ms(10));
        assert_eq!(p.max_delay(), ms(20));
        assert_eq!(p.jitter_percent(), (90, 110));
    }

    #[test]
    fn time_limits_are_off_by_default_and_must_be_above_zero() {
        let p = RetryPolicy::DEFAULT;
        assert_eq!((p.attempt_timeout(), p.deadline()), (None, None));
        assert!(!p.has_time_limits());
        let limited = p.with_attempt_timeout(ms(2000)).with_deadline(ms(10_000));
        assert_eq!(limited.attempt_timeout(), Some(ms(2000)));
        assert_eq!(limited.deadline(), Some(ms(10_000)));
        assert!(limited.has_time_limits());
        assert!(p.with_deadline(ms(1)).has_time_limits());
        assert!(p.with_attempt_timeout(ms(1)).has_time_limits());
        assert_eq!(limited.validate(), Ok(()));
        assert_eq!(
            p.with_attempt_timeout(Duration::ZERO).validate(),
            Err(PolicyError::ZeroAttemptTimeout)
        );
        assert_eq!(
            p.with_deadline(Duration::ZERO).validate(),
            Err(PolicyError::ZeroDeadline)
        );
        assert!(
            PolicyError::ZeroDeadline
                .to_string()
                .contains("deadline is 0")
        );
        assert!(
            PolicyError::ZeroAttemptTimeout
                .to_string()
                .contains("attempt timeout is 0")
        );
        // Whole milliseconds, rounded up; huge limits saturate instead of meaning "none".
        let sub_ms = p.with_attempt_timeout(Duration::from_micros(1));
        assert_eq!(sub_ms.attempt_timeout(), Some(ms(1)));
        assert_eq!(sub_ms.validate(), Ok(()));
        let huge = p.with_deadline(Duration::MAX);
        assert_eq!(huge.deadline(), Some(ms(u64::from(u32::MAX - 1))));
        assert!(huge.has_time_limits());
    }
}
