//! A retry throttle that needs no clock: retries stop while D1 fails more than it succeeds.

use core::fmt;
use core::hash::{Hash, Hasher};
use core::sync::atomic::{AtomicU32, Ordering};

use crate::PolicyError;

/// Fixed point: one token is this many units, so a ratio of 0.001 is one unit.
const UNIT: u32 = 1000;

/// The largest `max_tokens` a budget accepts; keeps every count inside a `u32` of units.
const MAX_TOKENS_LIMIT: u32 = 1000;

/// The tokens every [`RetryBudget::DEFAULT`] shares: one pool per process, or per isolate
/// inside a Worker.
static SHARED: RetryTokens = RetryTokens::new();

/// The mutable half of a [`RetryBudget`]: how many tokens have been spent.
///
/// It lives in a `static` so that every call made with the same budget draws on the same
/// pool. Counting what was *spent* rather than what is left means a new pool starts full
/// whatever `max_tokens` the budget using it has.
///
/// The pool does not tell its budgets apart: each reads what all of them spent against its
/// own `max_tokens`, so a budget of 2 tokens sharing the pool of one of 300 stops retrying
/// once the larger one has spent about 2. Give budgets of different sizes pools of their own.
///
/// ```
/// use d1_retry_runtime::{RetryBudget, RetryTokens};
///
/// static REPORTS: RetryTokens = RetryTokens::new();
/// const REPORTS_BUDGET: RetryBudget = RetryBudget::new(&REPORTS).with_max_tokens(20);
/// assert_eq!(REPORTS_BUDGET.tokens(), 20.0);
/// ```
pub struct RetryTokens {
    spent: AtomicU32,
}

impl RetryTokens {
    /// A full pool.
    #[must_use]
    pub const fn new() -> Self {
        RetryTokens {
            spent: AtomicU32::new(0),
        }
    }
}

impl Default for RetryTokens {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for RetryTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryTokens")
            .field(
                "spent",
                &units_to_tokens(self.spent.load(Ordering::Relaxed)),
            )
            .finish()
    }
}

/// A retry throttle in the style of gRPC's retry throttling, so that retries never turn
/// an overloaded database into a collapsed one.
///
/// Five attempts per call could mean five times the load on a D1 that is already failing.
/// A budget holds up to `max_tokens` tokens and starts full. Every transient failure takes
/// one token; every success gives back `token_ratio` of one. While the tokens are at or
/// below half of `max_tokens`, failed calls are not retried (the caller gets the error at
/// once, and the log line says `d1.budget_exhausted = true`); successes refill the pool and
/// retries resume. Permanent failures (a constraint, a syntax error) mean D1 answered, and
/// leave the tokens alone.
///
/// With a ratio `r`, retries keep flowing as long as fewer than about one attempt in
/// `1 + 1/r` fails (one in eleven for the default 0.1); beyond that, the extra load that
/// retries add is bounded by the tokens above half, whatever the duration of the overload.
///
/// No clock is read: the budget only counts. The counts are atomics, so it is shared
/// without a lock between threads, tasks, and the single thread of a Worker isolate.
///
/// # Default
///
/// [`RetryBudget::DEFAULT`], which [`RetryPolicy::DEFAULT`](crate::RetryPolicy::DEFAULT)
/// uses: **300 tokens**, a **token ratio of 0.1**, and one pool of tokens shared by every
/// call in the process (or isolate). After about 150 more failures than a tenth of the
/// successes, retries pause. Sized so that an isolate serving 20 calls a second rides out
/// a 2 s outage in full, while sustained overload leaks about 150 extra calls per episode
/// (see the `budget_simulation` test and the README's table).
///
/// A policy may use its own budget, or none:
///
/// ```
/// use d1_retry_runtime::{RetryBudget, RetryPolicy, RetryTokens};
///
/// // Background jobs retry from a pool of their own, so a storm there cannot starve
/// // the retries of user-facing requests.
/// static JOB_TOKENS: RetryTokens = RetryTokens::new();
/// const JOBS: RetryPolicy = RetryPolicy::DEFAULT
///     .with_budget(RetryBudget::new(&JOB_TOKENS).with_max_tokens(10).with_token_ratio(0.5));
///
/// // Never throttled (for example in a test that drives hundreds of failures on purpose).
/// const UNTHROTTLED: RetryPolicy = RetryPolicy::DEFAULT.without_budget();
///
/// assert_eq!(JOBS.validate(), Ok(()));
/// assert_eq!(UNTHROTTLED.budget(), None);
/// ```
///
/// Driving one by hand:
///
/// ```
/// use d1_retry_runtime::{RetryBudget, RetryTokens};
///
/// static TOKENS: RetryTokens = RetryTokens::new();
/// let budget = RetryBudget::new(&TOKENS).with_max_tokens(4).with_token_ratio(0.5);
/// assert!(budget.record_failure()); // 3 tokens left: above half, retry
/// assert!(!budget.record_failure()); // 2 left: at half, do not retry
/// budget.record_success(); // 2.5: retries resume
/// assert!(budget.allows_retries());
/// ```
#[derive(Clone, Copy)]
pub struct RetryBudget {
    max_units: u32,
    ratio_units: u32,
    tokens: &'static RetryTokens,
}

impl RetryBudget {
    /// 300 tokens, a token ratio of 0.1, drawing on the pool shared by the whole process.
    pub const DEFAULT: RetryBudget = RetryBudget {
        max_units: 300 * UNIT,
        ratio_units: UNIT / 10,
        tokens: &SHARED,
    };

    /// The default limits (300 tokens, ratio 0.1), drawing on a pool of its own.
    #[must_use]
    pub const fn new(tokens: &'static RetryTokens) -> Self {
        RetryBudget {
            tokens,
            ..Self::DEFAULT
        }
    }

    /// The same budget holding at most `max_tokens` tokens (1 to 1000); retries pause at or
    /// below half of it.
    #[must_use]
    pub const fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_units = max_tokens.saturating_mul(UNIT);
        self
    }

    /// The same budget giving back `ratio` of a token per success (above 0, kept to three
    /// decimals, as in gRPC).
    #[must_use]
    pub const fn with_token_ratio(mut self, ratio: f64) -> Self {
        // `as` saturates, and maps NaN and negatives to 0, which `validate` refuses.
        self.ratio_units = (ratio * UNIT as f64 + 0.5) as u32;
        self
    }

    /// The most tokens the budget holds.
    #[must_use]
    pub const fn max_tokens(&self) -> u32 {
        self.max_units / UNIT
    }

    /// The fraction of a token each success gives back.
    #[must_use]
    pub const fn token_ratio(&self) -> f64 {
        self.ratio_units as f64 / UNIT as f64
    }

    /// Whether the limits make sense: 1 to 1000 tokens, a ratio above 0 and not above
    /// `max_tokens`. [`RetryPolicy::validate`](crate::RetryPolicy::validate) calls it.
    ///
    /// ```
    /// use d1_retry_runtime::{PolicyError, RetryBudget};
    /// assert_eq!(RetryBudget::DEFAULT.validate(), Ok(()));
    /// assert_eq!(
    ///     RetryBudget::DEFAULT.with_token_ratio(0.0).validate(),
    ///     Err(PolicyError::InvalidBudget),
    /// );
    /// ```
    pub const fn validate(&self) -> Result<(), PolicyError> {
        let tokens_ok = self.max_units >= UNIT && self.max_units <= MAX_TOKENS_LIMIT * UNIT;
        let ratio_ok = self.ratio_units > 0 && self.ratio_units <= self.max_units;
        if tokens_ok && ratio_ok {
            Ok(())
        } else {
            Err(PolicyError::InvalidBudget)
        }
    }

    /// The tokens left now (between 0 and `max_tokens`).
    #[must_use]
    pub fn tokens(&self) -> f64 {
        units_to_tokens(self.units_left(self.tokens.spent.load(Ordering::Relaxed)))
    }

    /// Whether a failure now could still be retried: the tokens are above half.
    #[must_use]
    pub fn allows_retries(&self) -> bool {
        self.above_half(self.units_left(self.tokens.spent.load(Ordering::Relaxed)))
    }

    /// Takes one token for a transient failure, and says whether it may be retried: the
    /// tokens left are still above half of `max_tokens`.
    pub fn record_failure(&self) -> bool {
        let max = self.max_units;
        let previous = self
            .tokens
            .spent
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |spent| {
                Some(spent.saturating_add(UNIT).min(max.max(spent)))
            })
            // The closure always returns `Some`; both arms carry the previous value.
            .unwrap_or_else(|spent| spent);
        let spent = previous.saturating_add(UNIT).min(max.max(previous));
        self.above_half(self.units_left(spent))
    }

    /// Gives back `token_ratio` of a token for a successful call.
    ///
    /// A full pool (the normal state) costs one relaxed load and no write, so successful
    /// calls on many threads do not contend on the counter.
    #[inline]
    pub fn record_success(&self) {
        if self.tokens.spent.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.give_back();
    }

    /// The rest of [`record_success`](Self::record_success), out of line: the check above is
    /// inlined into every execution's success path, and the update would be too, once per
    /// call site of every annotated function (about 300 bytes of the example Worker's
    /// wasm), for a pool that is full nearly always.
    #[cold]
    #[inline(never)]
    fn give_back(&self) {
        let ratio = self.ratio_units;
        // Never fails: the closure always returns `Some`.
        let _ = self
            .tokens
            .spent
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |spent| {
                Some(spent.saturating_sub(ratio))
            });
    }

    /// Fills the pool again (for example between two tests that share it).
    pub fn refill(&self) {
        self.tokens.spent.store(0, Ordering::Relaxed);
    }

    fn units_left(&self, spent: u32) -> u32 {
        self.max_units.saturating_sub(spent)
    }

    fn above_half(&self, units_left: u32) -> bool {
        u64::from(units_left) * 2 > u64::from(self.max_units)
    }
}

fn units_to_tokens(units: u32) -> f64 {
    f64::from(units) / f64::from(UNIT)
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("max_tokens", &units_to_tokens(self.max_units))
            .field("token_ratio", &self.token_ratio())
            .field("shared", &core::ptr::eq(self.tokens, &SHARED))
            .field("tokens", &self.tokens())
            .finish()
    }
}

/// Two budgets are equal when they have the same limits and draw on the same pool.
impl PartialEq for RetryBudget {
    fn eq(&self, other: &Self) -> bool {
        self.max_units == other.max_units
            && self.ratio_units == other.ratio_units
            && core::ptr::eq(self.tokens, other.tokens)
    }
}

impl Eq for RetryBudget {}

impl Hash for RetryBudget {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.max_units.hash(state);
        self.ratio_units.hash(state);
        core::ptr::hash(self.tokens, state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// A budget with a pool of its own, so tests running in parallel do not share one.
    fn own(max_tokens: u32, ratio: f64) -> RetryBudget {
        let tokens: &'static RetryTokens = Box::leak(Box::new(RetryTokens::new()));
        RetryBudget::new(tokens)
            .with_max_tokens(max_tokens)
            .with_token_ratio(ratio)
    }

    #[test]
    fn starts_full_and_stops_at_half() {
        let budget = own(10, 0.1);
        assert_eq!(budget.tokens(), 10.0);
        assert!(budget.allows_retries());
        // 9, 8, 7, 6 are above half; 5 is not.
        for left in [9.0, 8.0, 7.0, 6.0] {
            assert!(budget.record_failure(), "{left} tokens left");
            assert_eq!(budget.tokens(), left);
        }
        assert!(!budget.record_failure());
        assert_eq!(budget.tokens(), 5.0);
        assert!(!budget.allows_retries());
    }

    #[test]
    fn successes_refill_by_the_ratio_and_retries_resume_above_half() {
        let budget = own(10, 0.1);
        for _ in 0..5 {
            budget.record_failure();
        }
        assert!(!budget.allows_retries());
        budget.record_success();
        assert!((budget.tokens() - 5.1).abs() < 1e-9);
        assert!(budget.allows_retries());
    }

    #[test]
    fn tokens_stay_between_zero_and_max() {
        let budget = own(3, 0.5);
        for _ in 0..10 {
            budget.record_failure();
        }
        assert_eq!(budget.tokens(), 0.0);
        for _ in 0..100 {
            budget.record_success();
        }
        assert_eq!(budget.tokens(), 3.0);
        // Full again means the next failure is judged from the top, not from a surplus.
        assert!(budget.record_failure());
        assert_eq!(budget.tokens(), 2.0);
    }

    #[test]
    fn refill_restores_a_full_pool() {
        let budget = own(4, 0.1);
        for _ in 0..4 {
            budget.record_failure();
        }
        budget.refill();
        assert_eq!(budget.tokens(), 4.0);
    }

    #[test]
    fn budgets_on_one_pool_share_it_and_others_do_not() {
        let a = own(10, 0.1);
        let b = RetryBudget::new(a.tokens).with_max_tokens(10);
        let c = own(10, 0.1);
        a.record_failure();
        assert_eq!(b.tokens(), 9.0);
        assert_eq!(c.tokens(), 10.0);
        assert_ne!(a, c);
        assert_eq!(a, RetryBudget::new(a.tokens).with_max_tokens(10));
    }

    #[test]
    fn validation_refuses_what_cannot_work() {
        let b = own(10, 0.1);
        assert_eq!(b.validate(), Ok(()));
        assert_eq!(
            b.with_max_tokens(1).with_token_ratio(1.0).validate(),
            Ok(())
        );
        assert_eq!(b.with_max_tokens(1000).validate(), Ok(()));
        for bad in [
            b.with_max_tokens(0),
            b.with_max_tokens(1001),
            b.with_max_tokens(u32::MAX),
            b.with_token_ratio(0.0),
            b.with_token_ratio(0.0004),
            b.with_token_ratio(-1.0),
            b.with_token_ratio(f64::NAN),
            b.with_max_tokens(1).with_token_ratio(1.5),
        ] {
            assert_eq!(bad.validate(), Err(PolicyError::InvalidBudget), "{bad:?}");
        }
    }

    #[test]
    fn ratio_is_kept_to_three_decimals() {
        let b = own(10, 0.1);
        assert_eq!(b.with_token_ratio(0.1234).token_ratio(), 0.123);
        assert_eq!(b.with_token_ratio(0.0005).token_ratio(), 0.001);
        assert_eq!(b.max_tokens(), 10);
    }

    #[test]
    fn default_is_300_tokens_ratio_0_1_on_the_shared_pool() {
        assert_eq!(RetryBudget::DEFAULT.max_tokens(), 300);
        assert_eq!(RetryBudget::DEFAULT.token_ratio(), 0.1);
        assert!(core::ptr::eq(RetryBudget::DEFAULT.tokens, &SHARED));
        assert!(format!("{:?}", RetryBudget::DEFAULT).contains("shared: true"));
    }

    /// The budget against an exact model in `f64`, over random sequences of outcomes.
    #[test]
    fn matches_the_grpc_model_over_random_sequences() {
        for seed in 0..50 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let max = rng.random_range(1..=50u32);
            let ratio = f64::from(rng.random_range(1..=1000u32)) / 1000.0;
            let budget = own(max, ratio);
            let mut model = f64::from(max);
            for step in 0..2000 {
                if rng.random_bool(0.4) {
                    model = (model - 1.0).max(0.0);
                    let allowed = budget.record_failure();
                    assert_eq!(
                        allowed,
                        model > f64::from(max) / 2.0 + 1e-9,
                        "seed {seed} step {step}: model {model}"
                    );
                } else {
                    model = (model + ratio).min(f64::from(max));
                    budget.record_success();
                }
                assert!(
                    (budget.tokens() - model).abs() < 1e-6,
                    "seed {seed} step {step}: {} vs model {model}",
                    budget.tokens()
                );
            }
        }
    }

    /// Simulated overload: a database that fails a fixed share of attempts, callers that
    /// retry up to 4 times when the budget allows. The budget bounds the extra attempts.
    #[test]
    fn bounds_retry_amplification_under_sustained_failure() {
        fn amplification(failure_rate: f64, budget: Option<RetryBudget>) -> f64 {
            let mut rng = SmallRng::seed_from_u64(7);
            let calls = 20_000;
            let mut attempts = 0u64;
            for _ in 0..calls {
                for attempt in 1..=5 {
                    attempts += 1;
                    if !rng.random_bool(failure_rate) {
                        if let Some(b) = budget {
                            b.record_success();
                        }
                        break;
                    }
                    let allowed = budget.is_none_or(|b| b.record_failure());
                    if !allowed || attempt == 5 {
                        break;
                    }
                }
            }
            attempts as f64 / f64::from(calls)
        }
        let unthrottled = amplification(0.8, None);
        let throttled = amplification(0.8, Some(own(100, 0.1)));
        assert!(unthrottled > 3.0, "{unthrottled}");
        assert!(throttled < 1.05, "{throttled}");
        // A light failure rate is left alone: retries still happen.
        let light = amplification(0.05, Some(own(100, 0.1)));
        let light_unthrottled = amplification(0.05, None);
        assert!(
            (light - light_unthrottled).abs() < 1e-9,
            "{light} vs {light_unthrottled}"
        );
        assert!(light > 1.04, "{light}");
    }

    #[test]
    fn hash_follows_equality_and_debug_shows_the_pool() {
        use std::hash::BuildHasher;
        let state = std::hash::RandomState::new();
        let hash_with = |b: &RetryBudget| state.hash_one(b);
        let a = own(10, 0.1);
        assert_eq!(
            hash_with(&a),
            hash_with(&RetryBudget::new(a.tokens).with_max_tokens(10))
        );
        assert_ne!(hash_with(&a), hash_with(&a.with_max_tokens(11)));
        assert_ne!(hash_with(&a), hash_with(&a.with_token_ratio(0.2)));
        assert_ne!(hash_with(&a), hash_with(&own(10, 0.1)));
        a.record_failure();
        assert_eq!(format!("{:?}", a.tokens), "RetryTokens { spent: 1.0 }");
        assert!(format!("{a:?}").contains("tokens: 9.0"), "{a:?}");
    }

    #[test]
    fn pool_is_shared_across_threads() {
        let budget = own(1000, 0.1);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        budget.record_failure();
                    }
                });
            }
        });
        assert_eq!(budget.tokens(), 600.0);
    }
}
