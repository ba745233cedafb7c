//! One fault rule: which calls it looks at, when it strikes, what it injects, and whether
//! the statement runs first.
//!
//! The rule owns its filters and counters; when among its calls it strikes is its
//! [`Schedule`]'s business (`schedule.rs`), and which rule decides a call is the
//! [`FaultPlan`](super::FaultPlan)'s (`plan.rs`).

use core::ops::Range;
use core::time::Duration;

use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::schedule::Schedule;
use super::{CallInfo, Clock, Message, Operation};

/// When an injected failure strikes, relative to the statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timing {
    /// The call fails before the statement runs: the database is unchanged.
    BeforeExecution,
    /// The statement runs and its changes are committed, then the caller gets the error
    /// anyway: the case that makes retrying a write dangerous.
    AfterExecution,
}

/// One rule of a [`FaultPlan`](super::FaultPlan): which calls it applies to, when it
/// strikes, and with what.
///
/// A new fault fails *every* call, before the statement runs. Narrow it with the filters
/// ([`on`](Self::on), [`when_sql_contains`](Self::when_sql_contains)), pick one schedule
/// (the last one given wins: [`on_calls`](Self::on_calls),
/// [`with_probability`](Self::with_probability), [`at`](Self::at),
/// [`during`](Self::during), [`when`](Self::when)), cap it with [`times`](Self::times),
/// and choose [`after_execution`](Self::after_execution) to commit the statement before
/// failing.
///
/// A rule counts only the calls that pass its filters: `on_calls(2..4)` on a rule for
/// `INSERT`s means the third and fourth `INSERT`s it sees.
///
/// ```
/// use d1_retry_runtime::testing::{Fault, Message, Operation};
///
/// // The next two calls fail before D1 runs them.
/// let _ = Fault::new(Message::CannotResolve).times(2);
/// // Every INSERT runs, then the caller hears the connection was lost.
/// let _ = Fault::new(Message::NetworkConnectionLost)
///     .when_sql_contains("INSERT")
///     .after_execution();
/// // One read in twenty fails, reproducibly.
/// let _ = Fault::new(Message::InternalError)
///     .on(Operation::First)
///     .on(Operation::All)
///     .with_probability(0.05, 42);
/// ```
#[derive(Debug)]
#[must_use = "a Fault does nothing until it is added to a FaultPlan or a D1Database"]
pub struct Fault {
    message: Message,
    timing: Timing,
    /// A set of [`Operation::bit`]s; empty means every operation.
    operations: u16,
    sql_contains: Option<String>,
    schedule: Schedule,
    limit: Option<u64>,
    seen: u64,
    injected: u64,
}

impl Fault {
    /// A rule failing every call with `message`, before the statement runs.
    pub fn new(message: Message) -> Self {
        Fault {
            message,
            timing: Timing::BeforeExecution,
            operations: 0,
            sql_contains: None,
            schedule: Schedule::Every,
            limit: None,
            seen: 0,
            injected: 0,
        }
    }

    /// The statement runs and is committed first; then the caller gets the error.
    ///
    /// Meant for the messages D1 documents as *maybe executed* (and for the permanent
    /// ones). A *not executed* message ([`Message::documented_class`]) after execution
    /// simulates D1 breaking its own contract: d1-retry trusts the documentation and would
    /// retry such a write, running it twice. d1-retry's chaos suite found exactly that when
    /// its fault plan did so by mistake.
    pub fn after_execution(mut self) -> Self {
        self.timing = Timing::AfterExecution;
        self
    }

    /// The call fails before the statement runs (the default).
    pub fn before_execution(mut self) -> Self {
        self.timing = Timing::BeforeExecution;
        self
    }

    /// Sets the timing explicitly.
    pub fn timing(mut self, timing: Timing) -> Self {
        self.timing = timing;
        self
    }

    /// Applies only to `operation`; call it again to add more operations.
    pub fn on(mut self, operation: Operation) -> Self {
        self.operations |= operation.bit();
        self
    }

    /// Applies only to calls where some statement's SQL contains `text` (case-sensitive).
    /// A dump has no SQL, so such a rule never applies to it.
    pub fn when_sql_contains(mut self, text: impl Into<String>) -> Self {
        self.sql_contains = Some(text.into());
        self
    }

    /// Fails at most `n` calls, then never again.
    pub fn times(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// Fails the calls whose number, among the calls this rule has seen, is in `calls`
    /// (counting from 0): a timeline by call index.
    pub fn on_calls(mut self, calls: Range<u64>) -> Self {
        self.schedule = Schedule::Calls(calls);
        self
    }

    /// Fails each call with probability `probability` (clamped to 0..=1), drawn from a
    /// generator seeded with `seed`, so a run can be replayed.
    pub fn with_probability(mut self, probability: f64, seed: u64) -> Self {
        let probability = if probability.is_nan() {
            0.0
        } else {
            probability.clamp(0.0, 1.0)
        };
        self.schedule = Schedule::Probability {
            probability,
            rng: SmallRng::seed_from_u64(seed),
        };
        self
    }

    /// A scripted timeline: for each instant in `times` (read on `clock`), the first call
    /// at or after it fails. Exactly one failure per instant, as long as calls keep coming.
    pub fn at(mut self, clock: &Clock, times: impl IntoIterator<Item = Duration>) -> Self {
        let mut times: Vec<Duration> = times.into_iter().collect();
        times.sort_unstable();
        self.schedule = Schedule::At {
            clock: clock.clone(),
            times,
            next: 0,
        };
        self
    }

    /// A scripted outage: every call made while `clock` reads inside `window` fails. Call
    /// it again with the same clock to add windows.
    pub fn during(mut self, clock: &Clock, window: Range<Duration>) -> Self {
        match &mut self.schedule {
            Schedule::During { windows, .. } => windows.push(window),
            _ => {
                self.schedule = Schedule::During {
                    clock: clock.clone(),
                    windows: vec![window],
                }
            }
        }
        self
    }

    /// Fails the calls for which `decide` returns true: any schedule a test can express.
    pub fn when(mut self, decide: impl FnMut(&CallInfo<'_>) -> bool + Send + 'static) -> Self {
        self.schedule = Schedule::When(Box::new(decide));
        self
    }

    /// The message this rule injects.
    #[must_use]
    pub fn message(&self) -> Message {
        self.message
    }

    /// How many calls this rule has failed so far.
    #[must_use]
    pub fn injected(&self) -> u64 {
        self.injected
    }

    fn applies_to(&self, call: &CallInfo<'_>) -> bool {
        if self.operations != 0 && self.operations & call.operation.bit() == 0 {
            return false;
        }
        match &self.sql_contains {
            Some(text) => call.sql.iter().any(|sql| sql.contains(text.as_str())),
            None => true,
        }
    }

    /// The failure this rule injects into `call`, if it strikes; advances the rule's
    /// counters, generator and timeline.
    pub(crate) fn strikes(&mut self, call: &CallInfo<'_>) -> Option<(Message, Timing)> {
        if !self.applies_to(call) {
            return None;
        }
        let ordinal = self.seen;
        self.seen += 1;
        if self.limit.is_some_and(|limit| self.injected >= limit) {
            return None;
        }
        if !self.schedule.strikes(ordinal, call) {
            return None;
        }
        self.injected += 1;
        Some((self.message, self.timing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info<'a>(index: u64, operation: Operation, sql: &'a [&'a str]) -> CallInfo<'a> {
        CallInfo {
            index,
            operation,
            sql,
            session: false,
        }
    }

    fn struck(fault: &mut Fault, operation: Operation, sql: &str, n: u64) -> Vec<u64> {
        (0..n)
            .filter(|&i| fault.strikes(&info(i, operation, &[sql])).is_some())
            .collect()
    }

    #[test]
    fn a_bare_fault_strikes_every_call_before_execution() {
        let mut fault = Fault::new(Message::CannotResolve);
        assert_eq!(
            fault.strikes(&info(0, Operation::Run, &["SELECT 1"])),
            Some((Message::CannotResolve, Timing::BeforeExecution))
        );
        assert_eq!(struck(&mut fault, Operation::First, "SELECT 1", 5).len(), 5);
        assert_eq!(struck(&mut fault, Operation::Dump, "", 1).len(), 1);
    }

    #[test]
    fn timing_builders_set_the_timing() {
        let mut fault = Fault::new(Message::CodeUpdated).after_execution();
        let call = info(0, Operation::Run, &["x"]);
        assert_eq!(
            fault.strikes(&call).map(|s| s.1),
            Some(Timing::AfterExecution)
        );
        fault = fault.before_execution();
        assert_eq!(
            fault.strikes(&call).map(|s| s.1),
            Some(Timing::BeforeExecution)
        );
        fault = fault.timing(Timing::AfterExecution);
        assert_eq!(
            fault.strikes(&call).map(|s| s.1),
            Some(Timing::AfterExecution)
        );
        assert_eq!(fault.message(), Message::CodeUpdated);
    }

    #[test]
    fn times_caps_the_failures() {
        let mut fault = Fault::new(Message::CodeUpdated).times(2);
        assert_eq!(struck(&mut fault, Operation::Run, "x", 10), [0, 1]);
        assert_eq!(fault.injected(), 2);
    }

    #[test]
    fn on_calls_counts_only_the_calls_the_rule_applies_to() {
        let mut fault = Fault::new(Message::NetworkConnectionLost)
            .when_sql_contains("INSERT")
            .on_calls(1..3);
        let mut failed = Vec::new();
        for i in 0..8 {
            let sql = if i % 2 == 0 {
                "INSERT INTO t"
            } else {
                "SELECT"
            };
            if fault.strikes(&info(i, Operation::Run, &[sql])).is_some() {
                failed.push(i);
            }
        }
        // INSERTs are calls 0, 2, 4, 6; the rule's 2nd and 3rd are 2 and 4.
        assert_eq!(failed, [2, 4]);
    }

    #[test]
    fn operations_filter_and_union() {
        let mut fault = Fault::new(Message::StorageReset)
            .on(Operation::Batch)
            .on(Operation::Dump);
        for op in Operation::ALL {
            let hit = fault.strikes(&info(0, op, &["x"])).is_some();
            assert_eq!(
                hit,
                matches!(op, Operation::Batch | Operation::Dump),
                "{op:?}"
            );
        }
    }

    #[test]
    fn sql_filter_looks_at_every_statement_of_a_batch_and_never_matches_a_dump() {
        let mut fault = Fault::new(Message::StorageReset).when_sql_contains("audit");
        let both = ["INSERT INTO a", "INSERT INTO audit"];
        assert!(fault.strikes(&info(0, Operation::Batch, &both)).is_some());
        let neither = ["INSERT INTO a", "INSERT INTO b"];
        assert!(
            fault
                .strikes(&info(1, Operation::Batch, &neither))
                .is_none()
        );
        assert!(fault.strikes(&info(2, Operation::Dump, &[])).is_none());
    }
}
