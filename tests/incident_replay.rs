//! `cargo run --example incident`, the project's main command, checked: the replay it
//! prints applies no write twice, fails fewer requests with d1-retry than without, and is
//! exactly what the README shows, so that the two cannot drift apart. When a change moves
//! the figures, paste the example's output into the README.

#[path = "../examples/incident/replay.rs"]
mod replay;

use std::sync::OnceLock;

use replay::{Report, Totals};

/// One replay for every test of this file (it is deterministic: seeded, in virtual time).
fn report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(replay::replay)
}

/// The README's copy of the example's output: the `text` block after the sentence that
/// introduces the replay.
fn readme_replay() -> String {
    let readme = include_str!("../README.md");
    let intro = readme
        .find("`cargo run --example incident` replays")
        .expect("the README introduces the replay");
    let block = &readme[intro..];
    let start = block.find("```text\n").expect("a text block follows") + "```text\n".len();
    let end = block[start..].find("\n```").expect("the block is closed") + start;
    format!("{}\n", &block[start..end])
}

/// The numbers of the README's `total` row.
fn readme_totals() -> Totals {
    let replay = readme_replay();
    let row = replay
        .lines()
        .find(|line| line.starts_with("total "))
        .expect("the README's replay has a total row");
    let numbers: Vec<u64> = row
        .split(|c: char| c.is_whitespace() || c == '|')
        .filter_map(|word| word.parse().ok())
        .collect();
    let [
        requests,
        d1_errors,
        failed_without,
        d1_calls,
        retries,
        failed_with,
    ] = numbers[..]
    else {
        panic!("the README's total row has six numbers: {row:?}")
    };
    Totals {
        requests,
        d1_errors,
        failed_without,
        d1_calls,
        retries,
        failed_with,
    }
}

#[test]
fn incident_replay_applies_no_write_twice() {
    let report = report();
    assert_eq!(report.writes_applied_twice(), 0, "{}", report.text());
    // The appends that met a maybe-executed error were handed back, not run again.
    assert!(
        report
            .text()
            .contains("appends that may have run, handed back rather than run twice"),
        "{}",
        report.text()
    );
}

#[test]
fn incident_replay_fails_fewer_requests_with_d1_retry() {
    let totals = report().totals();
    // Every one of the incident's 63 errors reached a caller without d1-retry.
    assert_eq!(totals.d1_errors, 9 + 24 + 22 + 8, "{totals:?}");
    assert_eq!(totals.failed_without, totals.d1_errors, "{totals:?}");
    assert!(totals.failed_with < totals.failed_without, "{totals:?}");
    assert!(totals.retries > 0, "{totals:?}");
}

#[test]
fn incident_replay_prints_the_totals_the_readme_shows() {
    let report = report();
    assert_eq!(
        report.totals(),
        readme_totals(),
        "the README's totals differ from `cargo run --example incident`:\n{}",
        report.text()
    );
    assert_eq!(
        report.text(),
        readme_replay(),
        "the README's replay differs from `cargo run --example incident`"
    );
}
