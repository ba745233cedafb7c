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
    let rng = rng.get_or_insert_with(|| SmallRng::seed_from_u64(seed.unwrap_or_else(fresh_seed)));
    let (lo, hi) = (as_nanos_u64(min), as_nanos_u64(max));
    if lo >= hi {
        return min;
    }
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
