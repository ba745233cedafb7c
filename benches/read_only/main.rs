//! How fast the scanner decides whether SQL is read-only, on the same generated D1-style
//! statements as the `sqlparser` tokenizer (which only lexes, deciding nothing) and SQLite's
//! own verdict (`prepare`, then `sqlite3_stmt_readonly()`).
//!
//! Run: `cargo bench --bench read_only -- --warm-up-time 1 --measurement-time 3`

mod statements;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use d1_retry::is_read_only;
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
fn scanner(calls: &[Vec<String>]) -> usize {
    calls
        .iter()
        .filter(|call| call.iter().all(|sql| is_read_only(sql)))
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

/// Prints how the scanner's verdicts compare with SQLite's on this set, so that a fast but
/// wrong scanner cannot hide behind its MB/s; a statement SQLite calls a write and the
/// scanner calls read-only fails the run.
fn confusion(connection: &Connection, calls: &[Vec<String>]) {
    let (mut both_read, mut both_write, mut lost_retry, mut dangerous) = (0, 0, 0, 0);
    for sql in calls.iter().flatten() {
        match (is_read_only(sql), sqlite_read_only(connection, sql)) {
            (true, true) => both_read += 1,
            (false, false) => both_write += 1,
            (false, true) => lost_retry += 1,
            (true, false) => dangerous += 1,
        }
    }
    eprintln!(
        "statements vs SQLite: {both_read} read/read, {both_write} write/write, \
         {lost_retry} read called write (lost retry), {dangerous} write called read (DANGEROUS)"
    );
    assert_eq!(dangerous, 0, "the scanner called a write read-only");
}

fn read_only(c: &mut Criterion) {
    let calls = statements::generate(SEED, CALLS);
    let statement_count: usize = calls.iter().map(Vec::len).sum();
    let bytes: usize = calls.iter().flatten().map(String::len).sum();
    let connection = sqlite();
    eprintln!(
        "{} calls, {statement_count} statements, {bytes} bytes of SQL",
        calls.len()
    );
    confusion(&connection, &calls);
    assert!(
        sqlparser_tokens(&calls) > statement_count,
        "sqlparser lexes the set"
    );

    let mut group = c.benchmark_group("read_only");
    group.throughput(Throughput::Bytes(bytes as u64));
    // SQLite and sqlparser take tens of milliseconds a pass: fewer samples keep the run short.
    group.sample_size(30);
    group.bench_function("d1_retry_is_read_only", |b| {
        b.iter(|| scanner(black_box(&calls)));
    });
    group.bench_function("sqlparser_tokenize", |b| {
        b.iter(|| sqlparser_tokens(black_box(&calls)));
    });
    group.bench_function("sqlite_prepare_readonly", |b| {
        b.iter(|| sqlite_verdicts(&connection, black_box(&calls)));
    });
    group.finish();
}

criterion_group!(benches, read_only);
criterion_main!(benches);
