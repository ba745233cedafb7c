//! Replays the D1 incident of 2026-10-16 against a local D1, with d1-retry and without it.
//!
//! From 16:45:38 UTC, for about three minutes, D1 answered `D1_ERROR: internal error;
//! reference = ...` 9, 24, 22 and 8 times a minute, then recovered by itself. Here six
//! callers keep a steady workload of reads and writes going while the local D1 fails on
//! that timeline; tokio's paused clock compresses the six minutes into well under a second.
//!
//! ```text
//! cargo run --example incident
//! ```
//!
//! The same repository runs twice: once with `#[d1_retry]` on its methods, once without.
//! Both meet exactly the same 63 D1 errors at the same moments. The replay itself is in
//! `incident/replay.rs`, which `tests/incident_replay.rs` runs too: it checks that no write
//! is applied twice, that fewer requests fail with d1-retry, and that the README shows
//! exactly what this prints.

#[path = "incident/replay.rs"]
mod replay;

fn main() {
    print!("{}", replay::replay().text());
}
