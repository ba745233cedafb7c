//! What classifying a failure costs: `classify_message` and `classify` on every documented D1
//! message, on a 1 KiB message carrying a JS stack trace, and on a three-deep cause chain,
//! each beside a naive classifier that tests every phrase with `contains`.
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

/// The classifier must agree with the documented classes before its speed means anything;
/// the naive baseline is checked only for the cases it is meant to get right.
fn check_verdicts() {
    let expected = [
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
    let mut wrong = 0;
    for ((name, message), class) in DOCUMENTED.iter().zip(expected) {
        let got = classify_message(message);
        let naive = naive::classify_message(message);
        if got != class {
            wrong += 1;
            eprintln!("classify_message({name}) = {got}, documented {class}");
        }
        assert_eq!(naive, class, "naive baseline on {name}");
    }
    if wrong > 0 {
        eprintln!("WARNING: {wrong} documented messages misclassified: the classifier is a stub?");
    }
}

fn documented(c: &mut Criterion) {
    check_verdicts();
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
    for (name, first_line) in [
        ("network_lost", "D1_ERROR: Network connection lost."),
        (
            "unique_constraint",
            "D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT",
        ),
    ] {
        let message = stack_trace_message(first_line);
        assert_eq!(message.len(), 1024);
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
    // An application error wrapping a driver error wrapping D1's: the transient message is
    // the innermost link, so every link is read before the verdict.
    let chain = Link::caused_by(
        "failed to load the user's orders",
        Link::caused_by(
            "D1 query `SELECT * FROM orders WHERE user_id = ?1` failed",
            Link::new("D1_ERROR: Network connection lost."),
        ),
    );
    let verdict = classify(&chain);
    if verdict != FailureClass::MaybeExecuted {
        eprintln!("WARNING: classify(three-deep chain) = {verdict}: the classifier is a stub?");
    }
    assert_eq!(naive::classify(&chain), FailureClass::MaybeExecuted);

    let mut group = c.benchmark_group("classify_cause_chain_3");
    group.bench_function("classify", |b| b.iter(|| classify(black_box(&chain))));
    group.bench_function("naive_contains", |b| {
        b.iter(|| naive::classify(black_box(&chain)))
    });
    group.finish();
}

criterion_group!(benches, documented, stack_trace, cause_chain);
criterion_main!(benches);
