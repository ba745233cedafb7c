//! Where jitter's randomness comes from, without OS entropy calls that fail on wasm32.

use core::sync::atomic::{AtomicU64, Ordering};
use core::time::Duration;

use crate::schedule::duration::{NANOS, whole};

/// Draws the delay of retry `retry` uniformly from `[min, max]`.
///
/// Stateless: the draw is a hash of `seed` and `retry`, so the executions of one call can
/// share a schedule through `&` without a generator behind a lock, and a fixed seed
/// repeats. Without a seed a fresh one is taken from the platform for each draw.
pub(crate) fn draw(seed: Option<u64>, retry: u32, min: Duration, max: Duration) -> Duration {
    let (lo, hi) = (whole(min, NANOS), whole(max, NANOS));
    if lo >= hi {
        return min;
    }
    let seed = seed.unwrap_or_else(fresh_seed);
    let span = hi - lo;
    let bits = mix(seed ^ u64::from(retry).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    // `span + 1` cannot overflow: `hi` fits in u64 and `lo` < `hi`. The modulo bias is
    // below 2^-30 for delays under a second.
    let offset = if span == u64::MAX {
        bits
    } else {
        bits % (span + 1)
    };
    Duration::from_nanos(lo + offset)
}

/// SplitMix64's finaliser: every input bit affects every output bit.
const fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seed that differs between calls and, where the platform allows, between processes
/// and isolates, so that callers that fail together do not retry together.
fn fresh_seed() -> u64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    seed_for(platform_entropy(), CALLS.fetch_add(1, Ordering::Relaxed))
}

/// The seed of the `call`th unseeded draw: distinct for each call even where the platform
/// has no entropy to give (wasm32 without the `worker` feature), since SplitMix64's
/// increment keeps consecutive seeds far apart.
const fn seed_for(entropy: u64, call: u64) -> u64 {
    entropy ^ call.wrapping_mul(0x9E37_79B9_7F4A_7C15)
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
        // draw gets a seed of its own.
        let (min, max) = (Duration::from_millis(160), Duration::from_millis(240));
        let delays: Vec<Duration> = (0..16).map(|_| draw(None, 1, min, max)).collect();
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
            (0..64)
                .map(|retry| draw(Some(seed), retry, min, max))
                .collect::<Vec<_>>()
        };
        assert_eq!(draws(5), draws(5));
        assert_ne!(draws(5), draws(6));
        assert!(draws(5).iter().all(|d| (min..=max).contains(d)));
        // Each retry of one seed draws anew, and the draws spread over the interval.
        let spread = draws(5);
        assert!(
            spread.iter().any(|d| *d < Duration::from_micros(1500)),
            "{spread:?}"
        );
        assert!(
            spread.iter().any(|d| *d > Duration::from_micros(2500)),
            "{spread:?}"
        );
    }

    #[test]
    fn the_mix_is_splitmix64() {
        // SplitMix64's first three outputs from state 0 (its reference implementation,
        // as used to seed xoshiro): a weaker mix would still stay within bounds.
        assert_eq!(mix(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix(0x9E37_79B9_7F4A_7C15), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(mix(0x3C6E_F372_FE94_F82A), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn every_seed_draws_anew_for_each_retry() {
        // The retry is mixed into the seed by a XOR, which no seed can cancel out for two
        // retries: an OR would, for a seed that has the retries' bits set already.
        let (min, max) = (Duration::ZERO, Duration::from_nanos(u64::MAX - 1));
        for seed in [0, u64::MAX, 0x9E37_79B9_7F4A_7C15, 0x3C6E_F372_FE94_F82A] {
            let draws: std::collections::BTreeSet<_> = (0..4)
                .map(|retry| draw(Some(seed), retry, min, max))
                .collect();
            assert_eq!(draws.len(), 4, "seed {seed:#x}");
        }
    }

    #[test]
    fn both_ends_of_the_interval_are_drawn() {
        let (min, max) = (Duration::from_nanos(7), Duration::from_nanos(8));
        let draws: std::collections::BTreeSet<_> =
            (0..64).map(|seed| draw(Some(seed), 1, min, max)).collect();
        assert_eq!(draws.into_iter().collect::<Vec<_>>(), [min, max]);
    }

    #[test]
    fn unseeded_draws_differ_even_without_platform_entropy() {
        let seeds: std::collections::BTreeSet<_> = (0..16).map(|call| seed_for(0, call)).collect();
        assert_eq!(seeds.len(), 16);
        assert_eq!(seed_for(5, 0), 5);
        assert_ne!(seed_for(5, 1), seed_for(4, 1));
    }

    #[test]
    fn equal_bounds_need_no_randomness() {
        let d = Duration::from_millis(7);
        assert_eq!(draw(None, 1, d, d), d);
        assert_eq!(draw(Some(1), 1, d, Duration::from_millis(3)), d);
    }

    #[test]
    fn the_whole_u64_range_is_drawable() {
        let max = Duration::from_nanos(u64::MAX);
        let drawn = draw(Some(3), 1, Duration::ZERO, max);
        assert!(drawn <= max);
        assert_ne!(mix(0), mix(1));
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn native_entropy_changes_between_calls() {
        assert_ne!(platform_entropy(), platform_entropy());
    }
}
