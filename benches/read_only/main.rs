//! How fast the scanner decides whether SQL is read-only, next to the `sqlparser` tokenizer
//! (which only lexes, deciding nothing) and SQLite's own verdict (`prepare`, then
//! `sqlite3_stmt_readonly()`), on the same bytes, measured two ways:
//!
//! - `read_only_full_scan`: single-statement reads only. The scanner must read each to its
//!   end to call it read-only, so its early exit gives it no advantage: this is its raw
//!   throughput.
//! - `read_only_mix`: the calls a D1 application makes (reads, writes, batches). Here the
//!   scanner stops at the first word that makes a statement a write (`INSERT` is its first
//!   word), which SQLite and sqlparser cannot do: a fair advantage, since that is the work
//!   the verdict needs, but not raw throughput.
//!
//! `read_only_100_bytes` times one call on a ~100-byte read built at run time (so the
//! compiler cannot judge it), for the per-call cost.
//!
//! Each group times both verdicts: `is_read_only` (text that `exec()` may run line by
//! line) and `is_read_only_prepared` (a prepared statement, sent to SQLite whole, which is
//! what SQLite's `prepare` judges here too).
//!
//! Every set is checked against SQLite before it is timed: a statement SQLite calls a
//! write that either verdict calls read-only fails the run.
//!
//! Run: `cargo bench --bench read_only -- --warm-up-time 1 --measurement-time 3`

mod statements;

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use d1_retry::{is_read_only, is_read_only_prepared};
use rusqlite::Connection;
use sqlparser::dialect::SQLiteDialect;
use sqlparser::tokenizer::Tokenizer;

/// Enough calls for a few hundred KiB of SQL: large next to the caches' noise, small enough
/// for SQLite's pass to fit a short measurement.
const CALLS: usize = 2_000;
const SEED: u64 = 0xD1_5EED;

fn sqlite() -> Connection {
    let connection = Connection::open_in_memory().expect("in-memory SQLite");
    connection
        .execute_batch(statements::SCHEMA)
        .expect("the schema is valid SQL");
    connection
}

fn sqlite_read_only(connection: &Connection, sql: &str) -> bool {
    connection
        .prepare(sql)
        .unwrap_or_else(|error| panic!("SQLite rejects a generated statement: {error}\n{sql}"))
        .readonly()
}

/// A D1 call is read-only when every statement in it is.
fn scanner(calls: &[Vec<String>], verdict: impl Fn(&str) -> bool) -> usize {
    calls
        .iter()
        .filter(|call| call.iter().all(|sql| verdict(sql)))
        .count()
}

fn sqlparser_tokens(calls: &[Vec<String>]) -> usize {
    let dialect = SQLiteDialect {};
    calls
        .iter()
        .flatten()
        .map(|sql| {
            Tokenizer::new(&dialect, sql)
                .tokenize()
                .map_or(0, |tokens| tokens.len())
        })
        .sum()
}

fn sqlite_verdicts(connection: &Connection, calls: &[Vec<String>]) -> usize {
    calls
        .iter()
        .filter(|call| call.iter().all(|sql| sqlite_read_only(connection, sql)))
        .count()
}

/// How the scanner's verdicts compare with SQLite's on a set.
#[derive(Default)]
struct Confusion {
    both_read: usize,
    both_write: usize,
    lost_retry: usize,
    dangerous: Vec<String>,
}

/// Prints how the scanner's verdicts compare with SQLite's on this set, so that a fast but
/// wrong scanner cannot hide behind its MB/s; a statement SQLite calls a write and the
/// scanner calls read-only fails the run.
fn confusion(name: &str, connection: &Connection, calls: &[Vec<String>]) -> Confusion {
    let mut confusion = Confusion::default();
    for sql in calls.iter().flatten() {
        let sqlite = sqlite_read_only(connection, sql);
        if is_read_only_prepared(sql) && !sqlite {
            confusion.dangerous.push(format!("(prepared) {sql}"));
        }
        match (is_read_only(sql), sqlite) {
            (true, true) => confusion.both_read += 1,
            (false, false) => confusion.both_write += 1,
            (false, true) => confusion.lost_retry += 1,
            (true, false) => confusion.dangerous.push(sql.clone()),
        }
    }
    eprintln!(
        "{name}: statements vs SQLite: {} read/read, {} write/write, {} read called write \
         (lost retry), {} write called read (DANGEROUS)",
        confusion.both_read,
        confusion.both_write,
        confusion.lost_retry,
        confusion.dangerous.len()
    );
    assert!(
        confusion.dangerous.is_empty(),
        "the scanner called writes read-only:\n{}",
        confusion.dangerous.join("\n")
    );
    confusion
}

/// Times the scanner, sqlparser's tokenizer and SQLite's verdict on `calls`.
fn compare(
    group: &mut BenchmarkGroup<'_, WallTime>,
    connection: &Connection,
    calls: &[Vec<String>],
) {
    group.bench_function("d1_retry_is_read_only", |b| {
        b.iter(|| scanner(black_box(calls), is_read_only));
    });
    group.bench_function("d1_retry_is_read_only_prepared", |b| {
        b.iter(|| scanner(black_box(calls), is_read_only_prepared));
    });
    group.bench_function("sqlparser_tokenize", |b| {
        b.iter(|| sqlparser_tokens(black_box(calls)));
    });
    group.bench_function("sqlite_prepare_readonly", |b| {
        b.iter(|| sqlite_verdicts(connection, black_box(calls)));
    });
}

fn bytes(calls: &[Vec<String>]) -> u64 {
    calls.iter().flatten().map(String::len).sum::<usize>() as u64
}

fn read_only(c: &mut Criterion) {
    let connection = sqlite();

    // Single-statement reads: every byte must be read.
    let reads: Vec<Vec<String>> = statements::reads(SEED, CALLS)
        .into_iter()
        .map(|sql| vec![sql])
        .collect();
    eprintln!(
        "full scan: {} single-statement reads, {} bytes of SQL",
        reads.len(),
        bytes(&reads)
    );
    let full = confusion("full scan", &connection, &reads);
    assert_eq!(full.both_write, 0, "the full-scan set holds only reads");
    assert_eq!(
        full.lost_retry, 0,
        "the scanner reads every read of the set to its end"
    );

    // The realistic mix.
    let calls = statements::generate(SEED, CALLS);
    let statement_count: usize = calls.iter().map(Vec::len).sum();
    eprintln!(
        "mix: {} calls, {statement_count} statements, {} bytes of SQL",
        calls.len(),
        bytes(&calls)
    );
    confusion("mix", &connection, &calls);
    assert!(
        sqlparser_tokens(&calls) > statement_count,
        "sqlparser lexes the set"
    );

    let mut group = c.benchmark_group("read_only_full_scan");
    group.throughput(Throughput::Bytes(bytes(&reads)));
    // SQLite and sqlparser take tens of milliseconds a pass: fewer samples keep the run short.
    group.sample_size(30);
    compare(&mut group, &connection, &reads);
    group.finish();

    let mut group = c.benchmark_group("read_only_mix");
    group.throughput(Throughput::Bytes(bytes(&calls)));
    group.sample_size(30);
    compare(&mut group, &connection, &calls);
    group.finish();

    // One read of about 100 bytes, built at run time.
    let id = black_box(42);
    let read = vec![vec![statements::hundred_byte_read(id)]];
    eprintln!(
        "100-byte read ({} bytes): {:?}",
        read[0][0].len(),
        read[0][0]
    );
    let single = confusion("100-byte read", &connection, &read);
    assert_eq!(single.both_read, 1, "the 100-byte read is kept");
    let mut group = c.benchmark_group("read_only_100_bytes");
    group.throughput(Throughput::Bytes(bytes(&read)));
    compare(&mut group, &connection, &read);
    group.finish();
}

criterion_group!(benches, read_only);
criterion_main!(benches);
