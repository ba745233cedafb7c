//! What classifying a failure costs: `classify_message` and `classify` on every documented D1
//! message, on a 1 KiB message carrying a JS stack trace, and on a three-deep cause chain,
//! each beside a naive classifier that tests every phrase with `contains`.
//!
//! Strict: before anything is measured, d1-retry's verdict on every input (through
//! `classify_message` and through `classify`, the chain through `classify`) is checked
//! against its documented class, and the run panics, listing every wrong verdict, if one is
//! wrong; then the naive baseline's, which must be right on these inputs too.
//!
//! Run: `cargo bench --bench classify -- --warm-up-time 1 --measurement-time 3`

mod naive;

use std::error::Error;
use std::fmt;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use d1_retry::{FailureClass, classify, classify_message};

/// Every message of `shared/notes/d1-errors.md`, as the JS error's `message` carries it
/// (`D1_ERROR: ` prefix), with a short name for the report, and one everyday permanent error.
const DOCUMENTED: [(&str, &str); 14] = [
    (
        "cannot_resolve",
        "D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node.",
    ),
    (
        "startup_reset",
        "D1_ERROR: Internal error while starting up D1 DB storage caused object to be reset.",
    ),
    (
        "overloaded_queued",
        "D1_ERROR: D1 DB is overloaded. Too many requests queued.",
    ),
    ("network_lost", "D1_ERROR: Network connection lost."),
    (
        "storage_reset",
        "D1_ERROR: Internal error in D1 DB storage caused object to be reset.",
    ),
    (
        "code_updated",
        "D1_ERROR: D1 DB reset because its code was updated.",
    ),
    (
        "client_disconnected",
        "D1_ERROR: Can't read from request stream because client disconnected.",
    ),
    (
        "overloaded_too_long",
        "D1_ERROR: D1 DB is overloaded. Requests queued for too long.",
    ),
    (
        "storage_timeout",
        "D1_ERROR: D1 DB storage operation exceeded timeout which caused object to be reset.",
    ),
    (
        "isolate_memory",
        "D1_ERROR: D1 DB's isolate exceeded its memory limit and was reset.",
    ),
    (
        "cpu_limit",
        "D1_ERROR: D1 DB exceeded its CPU time limit and was reset.",
    ),
    (
        "internal_error",
        "D1_ERROR: internal error; reference = 6b1d3a0f4c2e4a8e9d7c5b3a1f0e2d4c",
    ),
    (
        "replica_disconnected",
        "D1_ERROR: Replica disconnected from primary",
    ),
    (
        "unique_constraint",
        "D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT \
         (extended: SQLITE_CONSTRAINT_UNIQUE)",
    ),
];

/// An error whose `Display` is a fixed text and whose `source()` is the next link, if any.
#[derive(Debug)]
struct Link {
    message: String,
    source: Option<Box<Link>>,
}

impl Link {
    fn new(message: impl Into<String>) -> Self {
        Link {
            message: message.into(),
            source: None,
        }
    }

    fn caused_by(message: impl Into<String>, source: Link) -> Self {
        Link {
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for Link {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source
            .as_deref()
            .map(|link| link as &(dyn Error + 'static))
    }
}

/// A JS `Error.stack` as workerd renders it: the message line, then frames, padded with
/// frames to exactly 1 KiB.
fn stack_trace_message(first_line: &str) -> String {
    const FRAMES: [&str; 6] = [
        "    at D1DatabaseSessionAlwaysPrimary._sendOrThrow (cloudflare-internal:d1-api:139:19)",
        "    at async D1PreparedStatement.first (cloudflare-internal:d1-api:312:26)",
        "    at async __wbg_first_5f1b2e (file:///build/index.js:1184:21)",
        "    at async wasm://wasm/0143ac1e:wasm-function[2417]:0x1b9f2c",
        "    at async UserRepo::find (src/repo.rs:42:9)",
        "    at async Object.fetch (file:///build/shim.mjs:27:16)",
    ];
    let mut message = format!("Error: {first_line}");
    let mut frames = FRAMES.iter().cycle();
    while message.len() < 1024 {
        message.push('\n');
        message.push_str(frames.next().unwrap_or(&""));
    }
    message.truncate(1024);
    message
}

/// The documented class of each message of [`DOCUMENTED`], in the same order.
const EXPECTED: [FailureClass; 14] = [
    FailureClass::NotExecuted,
    FailureClass::NotExecuted,
    FailureClass::NotExecuted,
    FailureClass::MaybeExecuted,
    FailureClass::MaybeExecuted,
    FailureClass::MaybeExecuted,
    FailureClass::MaybeExecuted,
    FailureClass::MaybeExecuted,
    FailureClass::Permanent,
    FailureClass::Permanent,
    FailureClass::Permanent,
    FailureClass::MaybeExecuted,
    FailureClass::MaybeExecuted,
    FailureClass::Permanent,
];

/// The 1 KiB stack-trace inputs: the first line, and the class of the message it carries.
const STACK_TRACES: [(&str, &str, FailureClass); 2] = [
    (
        "network_lost",
        "D1_ERROR: Network connection lost.",
        FailureClass::MaybeExecuted,
    ),
    (
        "unique_constraint",
        "D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT",
        FailureClass::Permanent,
    ),
];

/// An application error wrapping a driver error wrapping D1's: the transient message is
/// the innermost link, so every link is read before the verdict.
fn three_deep_chain() -> Link {
    Link::caused_by(
        "failed to load the user's orders",
        Link::caused_by(
            "D1 query `SELECT * FROM orders WHERE user_id = ?1` failed",
            Link::new("D1_ERROR: Network connection lost."),
        ),
    )
}

/// d1-retry's verdict on every input the bench measures, through both entry points
/// (`classify_message` on the text, `classify` on an error whose `Display` is that text, and
/// on the cause chain), must be the documented class before its speed means anything: any
/// wrong verdict panics here, before a single measurement, with every wrong one listed. The
/// naive baseline is checked for the cases it is meant to get right.
fn check_verdicts() {
    let mut inputs: Vec<(String, String, FailureClass)> = DOCUMENTED
        .iter()
        .zip(EXPECTED)
        .map(|((name, message), class)| (name.to_string(), message.to_string(), class))
        .collect();
    for (name, first_line, class) in STACK_TRACES {
        let message = stack_trace_message(first_line);
        assert_eq!(message.len(), 1024);
        inputs.push((format!("stack_trace_1k/{name}"), message, class));
    }
    let mut wrong = Vec::new();
    for (name, message, class) in &inputs {
        let by_message = classify_message(message);
        if by_message != *class {
            wrong.push(format!(
                "classify_message({name}) = {by_message}, documented {class}"
            ));
        }
        let by_error = classify(&Link::new(message.as_str()));
        if by_error != *class {
            wrong.push(format!("classify({name}) = {by_error}, documented {class}"));
        }
    }
    let chain = classify(&three_deep_chain());
    if chain != FailureClass::MaybeExecuted {
        wrong.push(format!(
            "classify(three-deep chain) = {chain}, documented {}",
            FailureClass::MaybeExecuted
        ));
    }
    assert!(
        wrong.is_empty(),
        "d1-retry misclassifies {} of {} verdicts; nothing measured:\n{}",
        wrong.len(),
        2 * inputs.len() + 1,
        wrong.join("\n")
    );
    for (name, message, class) in &inputs {
        assert_eq!(
            naive::classify_message(message),
            *class,
            "naive baseline on {name}"
        );
    }
    assert_eq!(
        naive::classify(&three_deep_chain()),
        FailureClass::MaybeExecuted,
        "naive baseline on the three-deep chain"
    );
    eprintln!(
        "verdicts: all {} right (classify_message and classify on every input, classify on the chain)",
        2 * inputs.len() + 1
    );
}

/// The first target of the group, so that a wrong verdict panics before anything is
/// measured, whatever filter the run is given.
fn verdicts(_: &mut Criterion) {
    check_verdicts();
}

fn documented(c: &mut Criterion) {
    let mut group = c.benchmark_group("classify_documented");
    for (name, message) in DOCUMENTED {
        let error = Link::new(message);
        group.bench_with_input(
            BenchmarkId::new("classify_message", name),
            message,
            |b, message| b.iter(|| classify_message(black_box(message))),
        );
        group.bench_with_input(BenchmarkId::new("classify", name), &error, |b, error| {
            b.iter(|| classify(black_box(error)))
        });
        group.bench_with_input(
            BenchmarkId::new("naive_contains", name),
            message,
            |b, message| b.iter(|| naive::classify_message(black_box(message))),
        );
    }
    group.finish();
}

fn stack_trace(c: &mut Criterion) {
    let mut group = c.benchmark_group("classify_stack_trace_1k");
    for (name, first_line, _) in STACK_TRACES {
        let message = stack_trace_message(first_line);
        let error = Link::new(message.as_str());
        group.bench_with_input(
            BenchmarkId::new("classify_message", name),
            message.as_str(),
            |b, message| b.iter(|| classify_message(black_box(message))),
        );
        group.bench_with_input(BenchmarkId::new("classify", name), &error, |b, error| {
            b.iter(|| classify(black_box(error)))
        });
        group.bench_with_input(
            BenchmarkId::new("naive_contains", name),
            message.as_str(),
            |b, message| b.iter(|| naive::classify_message(black_box(message))),
        );
        group.bench_with_input(
            BenchmarkId::new("naive_contains_error", name),
            &error,
            |b, error| b.iter(|| naive::classify(black_box(error))),
        );
    }
    group.finish();
}

fn cause_chain(c: &mut Criterion) {
    let chain = three_deep_chain();

    let mut group = c.benchmark_group("classify_cause_chain_3");
    group.bench_function("classify", |b| b.iter(|| classify(black_box(&chain))));
    group.bench_function("naive_contains", |b| {
        b.iter(|| naive::classify(black_box(&chain)))
    });
    group.finish();
}

criterion_group!(benches, verdicts, documented, stack_trace, cause_chain);
criterion_main!(benches);
