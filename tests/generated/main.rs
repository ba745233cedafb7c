//! Generated programs: thousands of random repository functions, each run through
//! `#[d1_retry]` against the local D1 with a random fault script, each checked after it ran.
//!
//! The macro needs its functions at compile time, so the functions are an interpreter
//! (`runner.rs`): one `#[d1_retry]` method runs a random [`program::Op`] list (reads, writes
//! made directly in its body, plain and annotated helpers, loops, branches, batches, dynamic
//! SQL, effects outside D1), and one `#[d1_retry(read_only)]` method runs random read
//! programs that call annotated reads (nesting). After each case (`oracle.rs`):
//! - no write applied twice; every write the body saw succeed is in the table exactly once,
//!   every other exactly as often as the journal says it ran (at most once);
//! - nothing outside D1 ran twice: each per-call body ran once, walked its program once and
//!   stopped exactly at the failing execution; the effect counter equals the effects reached;
//! - each execution retried only as the rule allows (not executed: retry; maybe executed:
//!   only reads; permanent: never), stopped only when the rule forbids or its call's
//!   `max_attempts - 1` retries (shared by all its executions) are spent, made at most
//!   `max_attempts` calls; plain helpers and anything inside a whole-body attempt never
//!   retried on their own; whole-body attempts at most `max_attempts`;
//! - every retry waited its delay, each schedule at most `max_total_delay()`, the whole
//!   call at most that per schedule (tokio's paused clock).
//!
//! Reproducible: `D1_RETRY_GENERATED_SEED` (default fixed), `D1_RETRY_GENERATED_CASES`
//! (default 8000); a failure names its case, and `D1_RETRY_GENERATED_CASE` runs it alone.

mod faults;
mod oracle;
mod program;
mod runner;

use d1_retry::testing::D1Database;
use rand::Rng;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio::time::Instant;

use faults::Stamps;
use oracle::{Counts, Observed};
use runner::{Runner, ScopeKind};

const DEFAULT_SEED: u64 = 0x006E_4ED1_C0DE_5EED;
const DEFAULT_CASES: u64 = 8000;

fn env_u64(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let text = text.trim();
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={text:?} is not a number")))
}

/// What a case runs: a per-call program, or a read program at the top.
#[derive(Debug)]
enum Case {
    PerCall(Vec<program::Op>),
    ReadOnly(Vec<program::ReadOp>),
}

/// Runs case number `case` of `seed`: the writes applied more than once (counted from the
/// table alone), and its counts or what broke.
async fn run_case(seed: u64, case: u64) -> (u64, Result<Counts, String>) {
    let mut rng = SmallRng::seed_from_u64(seed ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let program = if rng.random_bool(0.8) {
        Case::PerCall(program::program(&mut rng))
    } else {
        Case::ReadOnly(program::read_program(&mut rng))
    };
    let db = D1Database::open_in_memory().expect("SQLite opens");
    db.with_connection(|c| {
        c.execute_batch("CREATE TABLE items (tag INTEGER NOT NULL, id INTEGER NOT NULL)")
    })
    .expect("the schema applies");
    let stamps = Stamps::default();
    let (plan, described) = faults::script(&mut rng, &stamps);
    db.set_faults(plan);
    let runner = Runner::new(db.clone());

    let start = Instant::now();
    let result = match &program {
        Case::PerCall(ops) => {
            let top = runner.scope(ScopeKind::PerCall, "run", None, program::flatten(ops));
            runner.run(top, ops).await
        }
        Case::ReadOnly(reads) => {
            let top = runner.scope(
                ScopeKind::WholeBody,
                "read_block",
                None,
                program::flatten_reads(reads),
            );
            runner.read_block(top, reads).await
        }
    };
    let elapsed = start.elapsed();
    let result = result.map_err(|e| e.to_string());

    let journal = db.take_calls();
    let rows: Vec<(i64, i64)> = db.with_connection(|c| {
        let mut statement = c.prepare("SELECT tag, id FROM items").expect("prepares");
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("runs")
            .collect::<Result<_, _>>()
            .expect("reads")
    });
    let mut copies = std::collections::HashMap::<i64, u32>::new();
    for (_, id) in &rows {
        *copies.entry(*id).or_default() += 1;
    }
    let duplicates = copies.values().filter(|n| **n > 1).count() as u64;
    let trace = runner.trace.borrow();
    let observed = Observed {
        trace: &trace,
        journal: &journal,
        stamps: &stamps,
        rows: &rows,
        result: &result,
        elapsed,
        effects: runner.effects.get(),
    };
    let checked = oracle::check(&observed).map_err(|broken| {
        let mut report = format!(
            "generated case {case} (replay: D1_RETRY_GENERATED_SEED={seed:#x} \
             D1_RETRY_GENERATED_CASE={case}) broke an invariant:\n{broken}\n\nprogram: {program:#?}\nfaults:\n"
        );
        for rule in &described {
            report += &format!("  {rule}\n");
        }
        report += &format!("result: {result:?}\njournal:\n");
        for call in &journal {
            report += &format!(
                "  #{} {:?} {:?} injected={:?} executed={} error={:?}\n",
                call.index,
                call.operation,
                call.statements.first().map(|(sql, params)| (sql, params)),
                call.injected,
                call.executed,
                call.error
            );
        }
        report += &format!("rows: {rows:?}\nscopes: {:#?}\nexecutions: {:#?}", trace.scopes, trace.execs);
        report
    });
    (duplicates, checked)
}

#[tokio::test(start_paused = true)]
async fn generated_programs_never_run_a_write_twice() {
    // The scanner must judge the dynamic SQL as the programs label it.
    for sql in program::DYNAMIC_READS {
        assert!(d1_retry::is_read_only(sql), "{sql}");
    }
    for sql in program::DYNAMIC_WRITES {
        assert!(!d1_retry::is_read_only(sql), "{sql}");
    }

    let seed = env_u64("D1_RETRY_GENERATED_SEED").unwrap_or(DEFAULT_SEED);
    let cases: Vec<u64> = match env_u64("D1_RETRY_GENERATED_CASE") {
        Some(case) => vec![case],
        None => (0..env_u64("D1_RETRY_GENERATED_CASES").unwrap_or(DEFAULT_CASES)).collect(),
    };
    let mut total = Counts::default();
    let mut failures = Vec::new();
    let mut duplicates = 0;
    for &case in &cases {
        let (copies, checked) = run_case(seed, case).await;
        duplicates += copies;
        match checked {
            Ok(counts) => {
                total.executions += counts.executions;
                total.calls += counts.calls;
                total.faults += counts.faults;
                total.retries += counts.retries;
                total.caller_errors += counts.caller_errors;
                total.exhausted += counts.exhausted;
                total.whole_body_retries += counts.whole_body_retries;
            }
            Err(report) => {
                failures.push(report);
                if failures.len() >= 3 {
                    break;
                }
            }
        }
    }
    println!(
        "generated: {} programs, {} executions, {} faults, {} retries, {} duplicate writes \
         [{} D1 calls, {} whole-body retries, {} failed calls, {} schedules exhausted; seed {seed:#x}]",
        cases.len(),
        total.executions,
        total.faults,
        total.retries,
        duplicates,
        total.calls,
        total.whole_body_retries,
        total.caller_errors,
        total.exhausted,
    );
    if let Some(first) = failures.first() {
        panic!(
            "{} of {} cases failed; the first:\n{first}",
            failures.len(),
            cases.len()
        );
    }
    // The run exercised what it claims: a fault plan that injected nothing would pass
    // every check vacuously.
    if cases.len() >= 1000 {
        assert!(
            total.faults > total.executions / 20,
            "too few faults: {total:?}"
        );
        assert!(
            total.retries > total.faults / 4,
            "too few retries: {total:?}"
        );
        assert!(
            total.whole_body_retries > 0 && total.exhausted > 0,
            "{total:?}"
        );
    }
}
