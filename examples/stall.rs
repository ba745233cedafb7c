//! Replays a 60-second D1 stall against a local D1, with `#[d1_retry]`'s time limits and
//! without them.
//!
//! Operators report a small database unresponsive for 60-80 seconds, several times in two
//! days: every query made meanwhile hung, then all failed at the same millisecond, and D1
//! recovered by itself. Here six callers send a Worker's traffic for three minutes while
//! the local D1 hangs for the middle one; tokio's paused clock compresses them into well
//! under a second, and every latency printed is virtual.
//!
//! ```text
//! cargo run --example stall
//! ```
//!
//! The same repository runs twice: its `#[d1_retry]` methods without time limits, then with
//! `attempt_timeout_ms = 2000, deadline_ms = 10_000` (the append, never run twice, with the
//! deadline alone). The replay itself is in `stall/replay.rs`, which `tests/stall_replay.rs`
//! runs too: it checks that no write is applied twice, that with the limits no request
//! waits past its deadline, that without them the requests of the stall wait it out, and
//! that the README quotes exactly the verdict this prints.

#[path = "stall/replay.rs"]
mod replay;

fn main() {
    print!("{}", replay::replay().text());
}
