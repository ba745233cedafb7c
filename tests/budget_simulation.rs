//! The retry budget against a simulated D1, in virtual time (tokio's paused clock).
//!
//! Open-loop load (calls keep arriving whatever happens to earlier ones, as requests to a
//! Worker do) meets the local D1 behind two kinds of trouble:
//! - sustained overload: D1 serves `capacity` calls a second from a queue holding up to a
//!   second of work, and refuses calls that find it full with `D1 DB is overloaded. Too
//!   many requests queued.`;
//! - an outage: every call fails with `internal error; reference = ...` for a while.
//!
//! Amplification is D1 calls divided by logical calls. Without a budget, every refused call
//! comes back up to four more times, and an overloaded D1 sees several times the load; the
//! budget must hold that at or below 1.2 while still riding out a short outage.
//!
//! `cargo test --test budget_simulation -- --nocapture` prints the figures as the markdown
//! table the README shows, and the test fails when the README's table (or its sentence
//! about the long outage) differs from it: paste the printed table into the README when a
//! change moves the figures. `D1_RETRY_BUDGET_TABLE=<file>` also writes the table there.

use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use d1_retry::testing::{Clock, D1Database, Fault, Message};
use d1_retry::{Retry, RetryBudget, RetryPolicy, RetryTokens};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

const SEED: u64 = 0xB0D6E7;

#[derive(Clone, Debug)]
struct Scenario {
    name: &'static str,
    /// Logical calls arriving per second (Poisson arrivals).
    load: f64,
    /// Calls D1 serves per second, if it is the bottleneck (otherwise it answers at once).
    capacity: Option<f64>,
    /// When every call fails.
    outage: Option<Range<Duration>>,
    duration: Duration,
}

#[derive(Clone, Copy, Debug, Default)]
struct Figures {
    logical: u64,
    d1_calls: u64,
    succeeded: u64,
    /// Logical calls that started while D1 was down, and how many of them succeeded.
    met_outage: u64,
    met_outage_succeeded: u64,
}

impl Figures {
    fn amplification(&self) -> f64 {
        self.d1_calls as f64 / self.logical as f64
    }

    fn success(&self) -> f64 {
        self.succeeded as f64 / self.logical as f64
    }

    fn outage_success(&self) -> Option<f64> {
        (self.met_outage > 0).then(|| self.met_outage_succeeded as f64 / self.met_outage as f64)
    }
}

/// D1 as a server with a queue: it serves `rate` calls a second, one after the other, and
/// refuses a call outright when the work queued ahead of it exceeds `queue` seconds.
struct Server {
    rate: f64,
    queue: Duration,
    /// When the server finishes the work queued so far.
    free_at: Duration,
}

impl Server {
    /// When the call arriving at `now` is served, or `None` if the queue is full.
    fn admit(&mut self, now: Duration) -> Option<Duration> {
        let start = self.free_at.max(now);
        if start - now > self.queue {
            return None;
        }
        self.free_at = start + Duration::from_secs_f64(1.0 / self.rate);
        Some(self.free_at)
    }
}

async fn simulate(scenario: &Scenario, budget: Option<RetryBudget>) -> Figures {
    let db = D1Database::open_in_memory().expect("an in-memory SQLite opens");
    db.with_connection(|c| c.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);"))
        .expect("the schema applies");
    let clock = Clock::tokio();
    let start = Instant::now();
    // The server decides before each call whether the queue has room; a refused call reaches
    // the local D1 as a fault, so it is counted like any other D1 call.
    let server = scenario.capacity.map(|rate| {
        Rc::new(RefCell::new(Server {
            rate,
            queue: Duration::from_secs(1),
            free_at: Duration::ZERO,
        }))
    });
    let refuse = Arc::new(AtomicBool::new(false));
    let refused = refuse.clone();
    db.add_fault(
        Fault::new(Message::TooManyRequestsQueued).when(move |_| refused.load(Ordering::Relaxed)),
    );
    if let Some(outage) = &scenario.outage {
        db.add_fault(Fault::new(Message::InternalError).during(&clock, outage.clone()));
    }
    let policy = match budget {
        Some(budget) => {
            budget.refill();
            RetryPolicy::DEFAULT.with_budget(budget)
        }
        None => RetryPolicy::DEFAULT.without_budget(),
    };

    let figures = Rc::new(RefCell::new(Figures::default()));
    let in_flight = Rc::new(Cell::new(0u64));
    let local = tokio::task::LocalSet::new();
    let mut rng = SmallRng::seed_from_u64(SEED);
    local
        .run_until(async {
            let mut at = Duration::ZERO;
            let mut call = 0u64;
            while at < scenario.duration {
                tokio::time::sleep_until(start + at).await;
                call += 1;
                let met_outage = scenario.outage.as_ref().is_some_and(|o| o.contains(&at));
                let (db, figures, in_flight) = (db.clone(), figures.clone(), in_flight.clone());
                let (server, refuse) = (server.clone(), refuse.clone());
                in_flight.set(in_flight.get() + 1);
                tokio::task::spawn_local(async move {
                    let result = Retry::new("simulation.read")
                        .read_only(true)
                        .policy(policy)
                        .seed(call)
                        .run(|| async {
                            if let Some(server) = &server {
                                let now = start.elapsed();
                                let served = server.borrow_mut().admit(now);
                                match served {
                                    Some(at) => tokio::time::sleep_until(start + at).await,
                                    None => refuse.store(true, Ordering::Relaxed),
                                }
                            }
                            let result =
                                db.prepare("SELECT x FROM t").first::<i64>(Some("x")).await;
                            refuse.store(false, Ordering::Relaxed);
                            result
                        })
                        .await;
                    let mut f = figures.borrow_mut();
                    f.logical += 1;
                    f.succeeded += u64::from(result.is_ok());
                    if met_outage {
                        f.met_outage += 1;
                        f.met_outage_succeeded += u64::from(result.is_ok());
                    }
                    in_flight.set(in_flight.get() - 1);
                });
                // Exponential gaps: Poisson arrivals at `load` a second.
                let u: f64 = rng.random_range(f64::EPSILON..1.0);
                at += Duration::from_secs_f64(-u.ln() / scenario.load);
            }
            while in_flight.get() > 0 {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await;
    let mut figures = *figures.borrow();
    figures.d1_calls = db.stats().calls;
    figures
}

static OVERLOAD_TOKENS: RetryTokens = RetryTokens::new();
static OUTAGE_TOKENS: RetryTokens = RetryTokens::new();
static LONG_OUTAGE_TOKENS: RetryTokens = RetryTokens::new();

fn scenarios() -> [(Scenario, &'static RetryTokens); 3] {
    let s = Duration::from_secs;
    [
        (
            Scenario {
                name: "sustained overload: 20 calls/s offered, D1 serves 12/s, 120 s",
                load: 20.0,
                capacity: Some(12.0),
                outage: None,
                duration: s(120),
            },
            &OVERLOAD_TOKENS,
        ),
        (
            Scenario {
                name: "short outage: 20 calls/s, every call fails for 2 s",
                load: 20.0,
                capacity: None,
                outage: Some(s(30)..s(32)),
                duration: s(60),
            },
            &OUTAGE_TOKENS,
        ),
        (
            Scenario {
                name: "long outage: 20 calls/s, every call fails for 20 s",
                load: 20.0,
                capacity: None,
                outage: Some(s(30)..s(50)),
                duration: s(90),
            },
            &LONG_OUTAGE_TOKENS,
        ),
    ]
}

fn percent(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// The figures as the README's markdown table.
fn markdown(rows: &[(Scenario, Figures, Figures)]) -> String {
    let mut table = String::from(
        "| scenario | retry budget | logical calls | D1 calls | amplification | calls succeeded | calls that met the outage and succeeded |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    for (scenario, without, with) in rows {
        for (label, f) in [("none", without), ("default (300 tokens, ratio 0.1)", with)] {
            table.push_str(&format!(
                "| {} | {label} | {} | {} | {:.2} | {} | {} |\n",
                scenario.name,
                f.logical,
                f.d1_calls,
                f.amplification(),
                percent(f.success()),
                f.outage_success()
                    .map(percent)
                    .unwrap_or_else(|| "—".into()),
            ));
        }
    }
    table
}

/// The README's copy of the table: its lines from the header to the last row.
fn readme_table() -> String {
    let readme = include_str!("../README.md");
    let start = readme
        .find("| scenario | retry budget |")
        .expect("the README shows the budget table");
    readme[start..]
        .lines()
        .take_while(|line| line.starts_with('|'))
        .map(|line| format!("{line}\n"))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_budget_bounds_amplification_and_rides_out_a_short_outage() {
    let mut rows = Vec::new();
    for (scenario, tokens) in scenarios() {
        // The default limits (300 tokens, ratio 0.1), on a pool of this scenario's own.
        let budget = RetryBudget::new(tokens);
        assert_eq!(
            (budget.max_tokens(), budget.token_ratio()),
            (
                RetryBudget::DEFAULT.max_tokens(),
                RetryBudget::DEFAULT.token_ratio()
            )
        );
        let without = simulate(&scenario, None).await;
        let with = simulate(&scenario, Some(budget)).await;
        println!("{}", scenario.name);
        for (label, f) in [("without budget", without), ("with budget", with)] {
            println!(
                "  {label:>14}: {} logical calls, {} D1 calls, amplification {:.2}, \
                 {} succeeded{}",
                f.logical,
                f.d1_calls,
                f.amplification(),
                percent(f.success()),
                f.outage_success()
                    .map(|s| format!(", {} of the calls that met the outage", percent(s)))
                    .unwrap_or_default()
            );
        }
        rows.push((scenario, without, with));
    }

    let [overload, short, long] = &rows[..] else {
        unreachable!("three scenarios")
    };
    // Overload: retries without a budget multiply the load; the budget keeps it near 1.
    assert!(overload.1.amplification() > 2.0, "{:?}", overload.1);
    assert!(overload.2.amplification() <= 1.2, "{:?}", overload.2);
    // The budget does not cost successes under overload: D1's capacity decides those.
    assert!(
        overload.2.success() >= overload.1.success() - 0.02,
        "{overload:?}"
    );
    // A short outage is ridden out: nearly every call that met it succeeds.
    let short_with = short.2.outage_success().expect("calls met the outage");
    assert!(short_with >= 0.9, "{:?}", short.2);
    assert!(short.2.success() >= 0.99, "{:?}", short.2);
    // A long one is not, with or without a budget; the budget stops the retry storm.
    assert!(long.2.amplification() < long.1.amplification(), "{long:?}");

    // The long outage's window is fixed: retries cannot lengthen it. What it shows is what
    // the budget gives up: without it, retries outlast the window for some of the calls
    // that met it; with it, none of those is retried once the tokens are spent.
    let long_without = long.1.outage_success().expect("calls met the outage");
    let long_with = long.2.outage_success().expect("calls met the outage");
    assert!(long_without > long_with, "{long:?}");

    let table = markdown(&rows);
    println!("\n{table}");
    if let Ok(path) = std::env::var("D1_RETRY_BUDGET_TABLE") {
        std::fs::write(&path, &table).expect("the table file is writable");
    }
    assert_eq!(
        readme_table(),
        table,
        "the README's budget table differs from this run's: paste the table printed above"
    );
    let sentence = format!(
        "{} of them still succeeded without the budget and {} with it",
        percent(long_without),
        percent(long_with)
    );
    assert!(
        include_str!("../README.md").contains(&sentence),
        "the README's sentence about the long outage should say: {sentence:?}"
    );
}
