//! `cargo run --example stall`, checked: the 60-second stall it replays applies no write
//! twice; with time limits no request waits past its deadline; without them the requests
//! of the stall wait it out; and the README quotes exactly the verdict it prints, so that
//! the two cannot drift apart. When a change moves the figures, paste the example's verdict
//! into the README.

#[path = "../examples/stall/replay.rs"]
mod replay;

use std::sync::OnceLock;
use std::time::Duration;

use replay::{DEADLINE, Kind, Outcome, PHASES, Report, STALL, STALL_PHASE};

/// One replay for every test of this file (it is deterministic: seeded, in virtual time).
fn report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(replay::replay)
}

/// The README's copy of the example's verdict: the `text` block after the sentence that
/// introduces the replay.
fn readme_verdict() -> String {
    let readme = include_str!("../README.md");
    let intro = readme
        .find("`cargo run --example stall` replays")
        .expect("the README introduces the stall replay");
    let block = &readme[intro..];
    let start = block.find("```text\n").expect("a text block follows") + "```text\n".len();
    let end = block[start..].find("\n```").expect("the block is closed") + start;
    block[start..end].to_owned()
}

/// The numbers of a verdict, in order.
fn numbers(verdict: &str) -> Vec<f64> {
    verdict
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|word| word.trim_end_matches('.').parse().ok())
        .collect()
}

#[test]
fn stall_replay_applies_no_write_twice() {
    let report = report();
    assert_eq!(report.writes_applied_twice(), 0, "{}", report.text());
    for run in [&report.without, &report.with] {
        assert!(run.requests.iter().all(|r| !r.applied_twice));
    }
    // Some appends timed out after D1 had run them: they were handed back, not run again,
    // and are in the database once.
    let handed_back_after_running = report
        .with
        .requests
        .iter()
        .filter(|r| r.kind == Kind::Append && r.outcome == Outcome::TimedOut && r.committed)
        .count();
    assert!(handed_back_after_running > 0, "{}", report.text());
}

#[test]
fn stall_replay_with_limits_no_request_waits_past_its_deadline() {
    let report = report();
    let with = &report.with;
    let late: Vec<_> = with
        .requests
        .iter()
        .filter(|r| r.latency > DEADLINE)
        .collect();
    assert!(late.is_empty(), "past the deadline: {late:?}");
    // The appends of the stall reach their deadline exactly, and are handed back with it.
    let stall = with.row(Some(STALL_PHASE));
    assert_eq!(stall.max, DEADLINE, "{}", report.text());
    assert!(stall.writes_timed_out > 0 && stall.appends_timed_out > 0);
    for request in &with.requests {
        if request.kind == Kind::Append && request.outcome == Outcome::TimedOut {
            assert_eq!(request.latency, DEADLINE, "{request:?}");
        }
    }
    // Before and after the stall, nothing changes: every request answered at once.
    for phase in (0..PHASES.len()).filter(|&p| p != STALL_PHASE) {
        let (a, b) = (report.without.row(Some(phase)), with.row(Some(phase)));
        assert_eq!(a, b, "{}", PHASES[phase]);
        assert_eq!((b.failed, b.max), (0, Duration::ZERO), "{}", PHASES[phase]);
    }
}

#[test]
fn stall_replay_without_limits_requests_wait_out_the_stall() {
    let report = report();
    let without = &report.without;
    let stall = without.row(Some(STALL_PHASE));
    // Every request of the stall waits until D1 recovers, and not a millisecond less.
    for request in without.requests.iter().filter(|r| r.phase() == STALL_PHASE) {
        assert_eq!(request.at + request.latency, STALL.end, "{request:?}");
        assert_ne!(request.outcome, Outcome::TimedOut, "{request:?}");
    }
    // The first waits about 60 s; half of them at least 30.
    assert!(stall.max >= Duration::from_secs(59), "{}", report.text());
    assert!(stall.p50 >= Duration::from_secs(29), "{}", report.text());
    assert_eq!(stall.in_flight, stall.requests, "{}", report.text());
    assert_eq!(stall.writes_timed_out, 0);
    // The limits cut that to the deadline, and the pile-up of requests with it.
    let with = report.with.row(Some(STALL_PHASE));
    assert!(with.max <= DEADLINE && with.p50 < stall.p50);
    assert!(with.in_flight * 4 < stall.in_flight, "{}", report.text());
}

#[test]
fn stall_replay_prints_the_verdict_the_readme_shows() {
    let report = report();
    let verdict = report.verdict();
    assert!(
        report.text().ends_with(&format!("\n{verdict}\n")),
        "{}",
        report.text()
    );
    let readme = readme_verdict();
    assert_eq!(
        numbers(&readme),
        numbers(&verdict),
        "the README's totals differ from `cargo run --example stall`:\n{verdict}"
    );
    assert_eq!(
        readme, verdict,
        "the README's verdict differs from `cargo run --example stall`"
    );
}
