//! Random fault scripts for the kit: rules by SQL text, operation, call index and seeded
//! probability, with messages of all three classes, at the timings D1 really gives them
//! ("not executed" only before the statement runs).

use std::sync::{Arc, Mutex, PoisonError};

use d1_retry::FailureClass;
use d1_retry::testing::{Fault, FaultPlan, Message, Operation, Timing};
use rand::Rng;
use rand::rngs::SmallRng;
use tokio::time::Instant;

/// When each D1 call was made (virtual time), by call index.
#[derive(Clone, Default)]
pub struct Stamps(Arc<Mutex<Vec<(u64, Instant)>>>);

impl Stamps {
    pub fn get(&self, index: u64) -> Instant {
        let stamps = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        stamps
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, at)| *at)
            .expect("every call is stamped")
    }
}

const FRAGMENTS: [&str; 7] = [
    "INSERT",
    "SELECT",
    "items (tag, id)",
    "RETURNING",
    "/* tag",
    "count(*)",
    "WITH",
];

const OPERATIONS: [Operation; 6] = [
    Operation::First,
    Operation::All,
    Operation::Run,
    Operation::Raw,
    Operation::Batch,
    Operation::Exec,
];

fn message(rng: &mut SmallRng) -> Message {
    let class = match rng.random_range(0..10) {
        0..=3 => FailureClass::NotExecuted,
        4..=7 => FailureClass::MaybeExecuted,
        _ => FailureClass::Permanent,
    };
    let of_class: Vec<Message> = Message::DOCUMENTED
        .into_iter()
        .filter(|m| m.documented_class() == Some(class))
        .collect();
    of_class[rng.random_range(0..of_class.len())]
}

/// A fault script of 0 to 4 rules, described for the failure report, behind a first rule
/// that never strikes and stamps every call.
pub fn script(rng: &mut SmallRng, stamps: &Stamps) -> (FaultPlan, Vec<String>) {
    let mut plan = FaultPlan::new();
    let observer = stamps.0.clone();
    plan.push(Fault::new(Message::Custom("never")).when(move |call| {
        observer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((call.index, Instant::now()));
        false
    }));
    let mut described = Vec::new();
    let rules = [0, 1, 1, 2, 2, 2, 3, 4][rng.random_range(0..8)];
    for _ in 0..rules {
        let message = message(rng);
        // D1 says "not executed" only before a statement runs.
        let timing = if message.documented_class() != Some(FailureClass::NotExecuted)
            && !rng.random_bool(0.5)
        {
            Timing::AfterExecution
        } else {
            Timing::BeforeExecution
        };
        let mut fault = Fault::new(message).timing(timing);
        let mut text = format!("{message:?} {timing:?}");
        match rng.random_range(0..4) {
            0 => {}
            1 => {
                let fragment = FRAGMENTS[rng.random_range(0..FRAGMENTS.len())];
                fault = fault.when_sql_contains(fragment);
                text += &format!(" sql~{fragment:?}");
            }
            2 => {
                let operation = OPERATIONS[rng.random_range(0..OPERATIONS.len())];
                fault = fault.on(operation);
                text += &format!(" on {operation:?}");
            }
            _ => {
                let fragment = FRAGMENTS[rng.random_range(0..FRAGMENTS.len())];
                let operation = OPERATIONS[rng.random_range(0..OPERATIONS.len())];
                fault = fault.when_sql_contains(fragment).on(operation);
                text += &format!(" sql~{fragment:?} on {operation:?}");
            }
        }
        match rng.random_range(0..3) {
            0 => {
                let start = rng.random_range(0..12);
                let len = rng.random_range(1..=5);
                fault = fault.on_calls(start..start + len);
                text += &format!(" calls {start}..{}", start + len);
            }
            1 => {
                let probability = [0.05, 0.1, 0.2, 0.35, 0.5, 0.8][rng.random_range(0..6)];
                let seed: u64 = rng.random();
                fault = fault.with_probability(probability, seed);
                text += &format!(" p={probability} seed={seed:#x}");
            }
            _ => text += " every call",
        }
        if rng.random_bool(0.6) {
            let times = rng.random_range(1..=8);
            fault = fault.times(times);
            text += &format!(" times {times}");
        }
        plan.push(fault);
        described.push(text);
    }
    (plan, described)
}
