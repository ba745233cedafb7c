//! Where jitter's randomness comes from, without OS entropy calls that fail on wasm32.

use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Draws a delay uniformly from `[min, max]`, seeding `rng` on first use.
pub(crate) fn draw(
    rng: &mut Option<SmallRng>,
    seed: Option<u64>,
    min: Duration,
    max: Duration,
) -> Duration {
    let (lo, hi) = (as_nanos_u64(min), as_nanos_u64(max));
    if lo >= hi {
        return min;
    }
    let rng = rng.get_or_insert_with(|| SmallRng::seed_from_u64(seed.unwrap_or_else(fresh_seed)));
    Duration::from_nanos(rng.random_range(lo..=hi))
}

fn as_nanos_u64(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A seed that differs between calls and, where the platform allows, between processes
/// and isolates, so that callers that fail together do not retry together.
fn fresh_seed() -> u64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    // SplitMix64's increment keeps consecutive seeds far apart.
    platform_entropy() ^ call.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[cfg(all(feature = "worker", target_arch = "wasm32"))]
fn platform_entropy() -> u64 {
    // Math.random is the one entropy source every isolate has without extra bindings.
    (worker::js_sys::Math::random() * (u64::MAX as f64)) as u64
}

#[cfg(all(
    not(target_arch = "wasm32"),
    not(all(feature = "worker", target_arch = "wasm32"))
))]
fn platform_entropy() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS once per thread, with no allocation.
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

#[cfg(all(target_arch = "wasm32", not(feature = "worker")))]
fn platform_entropy() -> u64 {
    0x2545_F491_4F6C_DD1D
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unseeded_draws_differ_between_calls() {
        // Callers that fail together must not retry together: without a seed, every
        // driver gets a seed of its own.
        let (min, max) = (Duration::from_millis(160), Duration::from_millis(240));
        let delays: Vec<Duration> = (0..16).map(|_| draw(&mut None, None, min, max)).collect();
        assert!(delays.iter().all(|d| (min..=max).contains(d)));
        let distinct = delays
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        assert!(distinct > 8, "{delays:?}");
    }

    #[test]
    fn seeded_draws_repeat_and_stay_within_bounds() {
        let (min, max) = (Duration::from_millis(1), Duration::from_millis(3));
        let draws = |seed| {
            let mut rng = None;
            (0..32)
                .map(|_| draw(&mut rng, Some(seed), min, max))
                .collect::<Vec<_>>()
        };
        assert_eq!(draws(5), draws(5));
        assert_ne!(draws(5), draws(6));
        assert!(draws(5).iter().all(|d| (min..=max).contains(d)));
    }

    #[test]
    fn equal_bounds_need_no_randomness() {
        let d = Duration::from_millis(7);
        let mut rng = None;
        assert_eq!(draw(&mut rng, None, d, d), d);
        assert!(rng.is_none(), "a fixed delay should not seed a generator");
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn native_entropy_changes_between_calls() {
        assert_ne!(platform_entropy(), platform_entropy());
    }
}
