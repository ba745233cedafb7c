//! A `Duration` counted in whole milliseconds or nanoseconds, in `u64` arithmetic.
//!
//! Why not `as_millis` or `as_nanos`: they return a `u128`, whose multiplication is a call
//! into a 128-bit routine on wasm32 (`__multi3`), as is `checked_mul`'s overflow check on a
//! `u64`. The log's `d1.delay_ms` and the jitter's bounds are counted here.

use core::time::Duration;

/// Milliseconds in a second: [`whole`]`(d, MILLIS)` is `d.as_millis()`, saturated.
pub(crate) const MILLIS: u64 = 1_000;
/// Nanoseconds in a second: [`whole`]`(d, NANOS)` is `d.as_nanos()`, saturated.
pub(crate) const NANOS: u64 = 1_000_000_000;

/// `d` in whole `1 / per_second` parts of a second, rounded down and saturating at
/// `u64::MAX`. `per_second` divides [`NANOS`].
pub(crate) const fn whole(d: Duration, per_second: u64) -> u64 {
    let secs = d.as_secs();
    if secs > u64::MAX / per_second {
        return u64::MAX;
    }
    let part = d.subsec_nanos() as u64 / (NANOS / per_second);
    (secs * per_second).saturating_add(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `u128` arithmetic `whole` replaces, as the reference.
    fn reference(d: Duration, per_second: u64) -> u64 {
        let n = d.as_nanos() / u128::from(NANOS / per_second);
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    #[test]
    fn whole_is_as_millis_and_as_nanos_saturated() {
        for per_second in [MILLIS, NANOS] {
            let edge = u64::MAX / per_second;
            // The largest count below the edge second's overflow, in nanoseconds.
            let fits = u32::try_from((u64::MAX % per_second) * (NANOS / per_second)).unwrap();
            for d in [
                Duration::ZERO,
                Duration::from_nanos(1),
                Duration::from_nanos(999_999),
                Duration::from_micros(163_999),
                Duration::new(1, 999_999_999),
                Duration::new(edge - 1, 999_999_999),
                Duration::new(edge, 0),
                Duration::new(edge, fits),
                Duration::new(edge, fits + 1),
                Duration::new(edge, fits + (NANOS / per_second) as u32),
                Duration::new(edge, 999_999_999),
                Duration::new(edge + 1, 0),
                Duration::MAX,
            ] {
                assert_eq!(
                    whole(d, per_second),
                    reference(d, per_second),
                    "{d:?} / {per_second}"
                );
            }
        }
        assert_eq!(whole(Duration::from_micros(163_999), MILLIS), 163);
        assert_eq!(whole(Duration::new(2, 5), NANOS), 2_000_000_005);
        assert_eq!(whole(Duration::MAX, MILLIS), u64::MAX);
    }
}
