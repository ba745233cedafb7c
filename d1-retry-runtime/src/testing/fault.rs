//! Which calls fail, how, and when: the fault plan of the local D1.

use core::fmt;
use core::ops::Range;
use core::time::Duration;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::FailureClass;

/// A failure message D1 documents (or one of your own), as the local D1 reports it:
/// `D1_ERROR: <text>`, with the text alone as the error's `source()`.
///
/// [`documented_class`](Self::documented_class) is what D1's documentation and
/// `shared/notes/d1-errors.md` say the message means; d1-retry's classifier agrees, and
/// the kit's own tests check it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Message {
    /// `Cannot resolve D1 DB due to transient issue on remote node.` (not executed)
    CannotResolve,
    /// `Internal error while starting up D1 DB storage caused object to be reset.` (not executed)
    StartupReset,
    /// `D1 DB is overloaded. Too many requests queued.` (not executed)
    TooManyRequestsQueued,
    /// `Network connection lost.` (maybe executed)
    NetworkConnectionLost,
    /// `Internal error in D1 DB storage caused object to be reset.` (maybe executed)
    StorageReset,
    /// `D1 DB reset because its code was updated.` (maybe executed)
    CodeUpdated,
    /// `Can't read from request stream because client disconnected.` (maybe executed)
    ClientDisconnected,
    /// `D1 DB is overloaded. Requests queued for too long.` (maybe executed)
    RequestsQueuedTooLong,
    /// `D1 DB storage operation exceeded timeout which caused object to be reset.` (permanent)
    StorageTimeout,
    /// `D1 DB's isolate exceeded its memory limit and was reset.` (permanent)
    MemoryLimit,
    /// `D1 DB exceeded its CPU time limit and was reset.` (permanent)
    CpuLimit,
    /// `internal error; reference = <id>`, the message of the 2026-10-16 incident; each
    /// injection gets a fresh reference. (maybe executed)
    InternalError,
    /// `Replica disconnected from primary` (read replication; maybe executed)
    ReplicaDisconnected,
    /// Any other text, reported as `D1_ERROR: <text>`.
    Custom(&'static str),
}

impl Message {
    /// Every message D1 documents, in the order of the notes.
    pub const DOCUMENTED: [Message; 13] = [
        Message::CannotResolve,
        Message::StartupReset,
        Message::TooManyRequestsQueued,
        Message::NetworkConnectionLost,
        Message::StorageReset,
        Message::CodeUpdated,
        Message::ClientDisconnected,
        Message::RequestsQueuedTooLong,
        Message::StorageTimeout,
        Message::MemoryLimit,
        Message::CpuLimit,
        Message::InternalError,
        Message::ReplicaDisconnected,
    ];

    /// The message without the `D1_ERROR: ` prefix. For [`InternalError`](Self::InternalError)
    /// this is the part before the reference id.
    #[must_use]
    pub const fn text(self) -> &'static str {
        match self {
            Message::CannotResolve => "Cannot resolve D1 DB due to transient issue on remote node.",
            Message::StartupReset => {
                "Internal error while starting up D1 DB storage caused object to be reset."
            }
            Message::TooManyRequestsQueued => "D1 DB is overloaded. Too many requests queued.",
            Message::NetworkConnectionLost => "Network connection lost.",
            Message::StorageReset => "Internal error in D1 DB storage caused object to be reset.",
            Message::CodeUpdated => "D1 DB reset because its code was updated.",
            Message::ClientDisconnected => {
                "Can't read from request stream because client disconnected."
            }
            Message::RequestsQueuedTooLong => "D1 DB is overloaded. Requests queued for too long.",
            Message::StorageTimeout => {
                "D1 DB storage operation exceeded timeout which caused object to be reset."
            }
            Message::MemoryLimit => "D1 DB's isolate exceeded its memory limit and was reset.",
            Message::CpuLimit => "D1 DB exceeded its CPU time limit and was reset.",
            Message::InternalError => "internal error; reference = ",
            Message::ReplicaDisconnected => "Replica disconnected from primary",
            Message::Custom(text) => text,
        }
    }

    /// What D1 documents the failure to mean; `None` for [`Custom`](Self::Custom).
    #[must_use]
    pub const fn documented_class(self) -> Option<FailureClass> {
        Some(match self {
            Message::CannotResolve | Message::StartupReset | Message::TooManyRequestsQueued => {
                FailureClass::NotExecuted
            }
            Message::NetworkConnectionLost
            | Message::StorageReset
            | Message::CodeUpdated
            | Message::ClientDisconnected
            | Message::RequestsQueuedTooLong
            | Message::InternalError
            | Message::ReplicaDisconnected => FailureClass::MaybeExecuted,
            Message::StorageTimeout | Message::MemoryLimit | Message::CpuLimit => {
                FailureClass::Permanent
            }
            Message::Custom(_) => return None,
        })
    }
}

/// When an injected failure strikes, relative to the statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timing {
    /// The call fails before the statement runs: the database is unchanged.
    BeforeExecution,
    /// The statement runs and its changes are committed, then the caller gets the error
    /// anyway: the case that makes retrying a write dangerous.
    AfterExecution,
}

/// The kind of call, as the fault plan and the call journal see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// [`D1PreparedStatement::first`](super::D1PreparedStatement::first).
    First,
    /// [`D1PreparedStatement::all`](super::D1PreparedStatement::all).
    All,
    /// [`D1PreparedStatement::run`](super::D1PreparedStatement::run).
    Run,
    /// [`D1PreparedStatement::raw`](super::D1PreparedStatement::raw).
    Raw,
    /// [`D1Database::batch`](super::D1Database::batch).
    Batch,
    /// [`D1Database::exec`](super::D1Database::exec).
    Exec,
}

impl Operation {
    /// Every operation.
    pub const ALL: [Operation; 6] = [
        Operation::First,
        Operation::All,
        Operation::Run,
        Operation::Raw,
        Operation::Batch,
        Operation::Exec,
    ];

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A caller-provided notion of time for scripted timelines.
///
/// The kit never reads a clock of its own; a timeline asks this one. Under tokio's paused
/// clock, [`Clock::tokio`] gives virtual time since its creation. Any closure works:
/// a step counter, a simulated clock.
///
/// ```
/// use core::time::Duration;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use d1_retry_runtime::testing::Clock;
///
/// let ticks = Arc::new(AtomicU64::new(0));
/// let seen = ticks.clone();
/// let clock = Clock::new(move || Duration::from_secs(seen.load(Ordering::Relaxed)));
/// ticks.store(90, Ordering::Relaxed);
/// assert_eq!(clock.now(), Duration::from_secs(90));
/// ```
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> Duration + Send + Sync>);

impl Clock {
    /// A clock that reads `now`.
    pub fn new(now: impl Fn() -> Duration + Send + Sync + 'static) -> Self {
        Clock(Arc::new(now))
    }

    /// Time elapsed since this call, on tokio's clock (virtual under a paused clock).
    #[cfg(feature = "tokio")]
    #[must_use]
    pub fn tokio() -> Self {
        let start = tokio::time::Instant::now();
        Clock::new(move || start.elapsed())
    }

    /// The time now.
    #[must_use]
    pub fn now(&self) -> Duration {
        (self.0)()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Clock").field(&self.now()).finish()
    }
}

/// What a fault rule is told about a call, to decide with [`Fault::when`].
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct CallInfo<'a> {
    /// The call's number on this database, from 0.
    pub index: u64,
    /// The kind of call.
    pub operation: Operation,
    /// The SQL of every statement in the call (one, except for a batch).
    pub sql: &'a [&'a str],
}

enum Schedule {
    Every,
    Calls(Range<u64>),
    Probability {
        probability: f64,
        rng: SmallRng,
    },
    At {
        clock: Clock,
        times: Vec<Duration>,
        next: usize,
    },
    During {
        clock: Clock,
        windows: Vec<Range<Duration>>,
    },
    When(Box<dyn FnMut(&CallInfo<'_>) -> bool + Send>),
}

impl fmt::Debug for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Every => f.write_str("Every"),
            Schedule::Calls(calls) => f.debug_tuple("Calls").field(calls).finish(),
            Schedule::Probability { probability, .. } => {
                f.debug_tuple("Probability").field(probability).finish()
            }
            Schedule::At { times, next, .. } => f
                .debug_struct("At")
                .field("times", times)
                .field("next", next)
                .finish(),
            Schedule::During { windows, .. } => f.debug_tuple("During").field(windows).finish(),
            Schedule::When(_) => f.write_str("When(..)"),
        }
    }
}

/// One rule of a [`FaultPlan`]: which calls it applies to, when it strikes, and with what.
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
    operations: u8,
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

    /// Whether this rule fails `call`; advances the rule's counters and generator.
    fn strikes(&mut self, call: &CallInfo<'_>) -> bool {
        if !self.applies_to(call) {
            return false;
        }
        let ordinal = self.seen;
        self.seen += 1;
        if self.limit.is_some_and(|limit| self.injected >= limit) {
            return false;
        }
        let strikes = match &mut self.schedule {
            Schedule::Every => true,
            Schedule::Calls(calls) => calls.contains(&ordinal),
            Schedule::Probability { probability, rng } => rng.random_bool(*probability),
            Schedule::At { clock, times, next } => match times.get(*next) {
                Some(due) if clock.now() >= *due => {
                    *next += 1;
                    true
                }
                _ => false,
            },
            Schedule::During { clock, windows } => {
                let now = clock.now();
                windows.iter().any(|window| window.contains(&now))
            }
            Schedule::When(decide) => decide(call),
        };
        if strikes {
            self.injected += 1;
        }
        strikes
    }
}

/// The rules that decide which calls of a [`D1Database`](super::D1Database) fail.
///
/// For each call, the rules are asked in order; the first that strikes decides the
/// failure, and the rules after it are not asked (their counters do not see that call).
/// A plan with no rules lets every call through.
///
/// ```
/// use d1_retry_runtime::testing::{Fault, FaultPlan, Message};
///
/// let plan = FaultPlan::new()
///     .with(Fault::new(Message::CannotResolve).times(1))
///     .with(Fault::new(Message::NetworkConnectionLost).after_execution().on_calls(3..4));
/// assert_eq!(plan.len(), 2);
/// ```
#[derive(Debug, Default)]
#[must_use]
pub struct FaultPlan {
    rules: Vec<Fault>,
}

impl FaultPlan {
    /// A plan that fails nothing.
    pub fn new() -> Self {
        FaultPlan::default()
    }

    /// The plan with `fault` added after the existing rules.
    pub fn with(mut self, fault: Fault) -> Self {
        self.rules.push(fault);
        self
    }

    /// Adds `fault` after the existing rules.
    pub fn push(&mut self, fault: Fault) {
        self.rules.push(fault);
    }

    /// The number of rules.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether the plan has no rules.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules, with how many calls each has failed so far.
    pub fn rules(&self) -> &[Fault] {
        &self.rules
    }

    /// The failure for `call`, if a rule strikes.
    pub(crate) fn decide(&mut self, call: &CallInfo<'_>) -> Option<(Message, Timing)> {
        self.rules
            .iter_mut()
            .find_map(|rule| rule.strikes(call).then_some((rule.message, rule.timing)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn info<'a>(index: u64, operation: Operation, sql: &'a [&'a str]) -> CallInfo<'a> {
        CallInfo {
            index,
            operation,
            sql,
        }
    }

    fn struck(plan: &mut FaultPlan, operation: Operation, sql: &str, n: u64) -> Vec<u64> {
        (0..n)
            .filter(|&i| plan.decide(&info(i, operation, &[sql])).is_some())
            .collect()
    }

    #[test]
    fn documented_messages_have_the_documented_classes() {
        use FailureClass::*;
        let expected = [
            NotExecuted,
            NotExecuted,
            NotExecuted,
            MaybeExecuted,
            MaybeExecuted,
            MaybeExecuted,
            MaybeExecuted,
            MaybeExecuted,
            Permanent,
            Permanent,
            Permanent,
            MaybeExecuted,
            MaybeExecuted,
        ];
        for (message, class) in Message::DOCUMENTED.iter().zip(expected) {
            assert_eq!(message.documented_class(), Some(class), "{message:?}");
        }
        assert_eq!(Message::Custom("x").documented_class(), None);
        assert_eq!(Message::Custom("boom").text(), "boom");
    }

    #[test]
    fn a_bare_fault_strikes_every_call_before_execution() {
        let mut plan = FaultPlan::new().with(Fault::new(Message::CannotResolve));
        let decided = plan.decide(&info(0, Operation::Run, &["SELECT 1"]));
        assert_eq!(
            decided,
            Some((Message::CannotResolve, Timing::BeforeExecution))
        );
        assert_eq!(struck(&mut plan, Operation::First, "SELECT 1", 5).len(), 5);
    }

    #[test]
    fn times_caps_the_failures() {
        let mut plan = FaultPlan::new().with(Fault::new(Message::CodeUpdated).times(2));
        assert_eq!(struck(&mut plan, Operation::Run, "x", 10), [0, 1]);
        assert_eq!(plan.rules()[0].injected(), 2);
    }

    #[test]
    fn on_calls_counts_only_the_calls_the_rule_applies_to() {
        let mut plan = FaultPlan::new().with(
            Fault::new(Message::NetworkConnectionLost)
                .when_sql_contains("INSERT")
                .on_calls(1..3),
        );
        let mut failed = Vec::new();
        for i in 0..8 {
            let sql = if i % 2 == 0 {
                "INSERT INTO t"
            } else {
                "SELECT"
            };
            if plan.decide(&info(i, Operation::Run, &[sql])).is_some() {
                failed.push(i);
            }
        }
        // INSERTs are calls 0, 2, 4, 6; the rule's 2nd and 3rd are 2 and 4.
        assert_eq!(failed, [2, 4]);
    }

    #[test]
    fn operations_filter_and_union() {
        let mut plan = FaultPlan::new().with(
            Fault::new(Message::StorageReset)
                .on(Operation::Batch)
                .on(Operation::Exec),
        );
        for op in Operation::ALL {
            let hit = plan.decide(&info(0, op, &["x"])).is_some();
            assert_eq!(
                hit,
                matches!(op, Operation::Batch | Operation::Exec),
                "{op:?}"
            );
        }
    }

    #[test]
    fn sql_filter_looks_at_every_statement_of_a_batch() {
        let mut plan =
            FaultPlan::new().with(Fault::new(Message::StorageReset).when_sql_contains("audit"));
        assert!(
            plan.decide(&info(
                0,
                Operation::Batch,
                &["INSERT INTO a", "INSERT INTO audit"]
            ))
            .is_some()
        );
        assert!(
            plan.decide(&info(
                1,
                Operation::Batch,
                &["INSERT INTO a", "INSERT INTO b"]
            ))
            .is_none()
        );
    }

    #[test]
    fn probability_is_seeded_and_roughly_right() {
        let run = |seed| {
            let mut plan = FaultPlan::new()
                .with(Fault::new(Message::InternalError).with_probability(0.25, seed));
            struck(&mut plan, Operation::First, "SELECT", 4000)
        };
        let a = run(1);
        assert_eq!(a, run(1));
        assert_ne!(a, run(2));
        assert!((850..1150).contains(&a.len()), "{}", a.len());
        let mut never =
            FaultPlan::new().with(Fault::new(Message::InternalError).with_probability(f64::NAN, 1));
        assert!(struck(&mut never, Operation::First, "SELECT", 100).is_empty());
        let mut always =
            FaultPlan::new().with(Fault::new(Message::InternalError).with_probability(7.0, 1));
        assert_eq!(
            struck(&mut always, Operation::First, "SELECT", 100).len(),
            100
        );
    }

    fn manual_clock() -> (Clock, Arc<AtomicU64>) {
        let millis = Arc::new(AtomicU64::new(0));
        let read = millis.clone();
        (
            Clock::new(move || Duration::from_millis(read.load(Ordering::Relaxed))),
            millis,
        )
    }

    #[test]
    fn at_fails_the_first_call_at_or_after_each_instant_once() {
        let (clock, millis) = manual_clock();
        let ms = Duration::from_millis;
        let mut plan = FaultPlan::new()
            .with(Fault::new(Message::InternalError).at(&clock, [ms(250), ms(100), ms(110)]));
        let mut failed = Vec::new();
        for (i, now) in [0u64, 50, 100, 105, 300, 301, 302, 1000]
            .into_iter()
            .enumerate()
        {
            millis.store(now, Ordering::Relaxed);
            if plan
                .decide(&info(i as u64, Operation::First, &["SELECT"]))
                .is_some()
            {
                failed.push(now);
            }
        }
        // 100 at 100; 110 is due at 300; 250 is still due at 301; nothing is left after.
        assert_eq!(failed, [100, 300, 301]);
    }

    #[test]
    fn during_fails_every_call_inside_the_windows() {
        let (clock, millis) = manual_clock();
        let ms = Duration::from_millis;
        let mut plan = FaultPlan::new().with(
            Fault::new(Message::TooManyRequestsQueued)
                .during(&clock, ms(10)..ms(20))
                .during(&clock, ms(40)..ms(41)),
        );
        let mut failed = Vec::new();
        for now in 0..60 {
            millis.store(now, Ordering::Relaxed);
            if plan.decide(&info(now, Operation::Run, &["x"])).is_some() {
                failed.push(now);
            }
        }
        let expected: Vec<u64> = (10..20).chain([40]).collect();
        assert_eq!(failed, expected);
    }

    #[test]
    fn when_sees_the_call() {
        let mut plan = FaultPlan::new().with(
            Fault::new(Message::CpuLimit).when(|call| call.index % 3 == 0 && call.sql[0] == "y"),
        );
        assert!(plan.decide(&info(3, Operation::Run, &["y"])).is_some());
        assert!(plan.decide(&info(3, Operation::Run, &["x"])).is_none());
        assert!(plan.decide(&info(4, Operation::Run, &["y"])).is_none());
    }

    #[test]
    fn first_striking_rule_decides_and_later_rules_do_not_see_the_call() {
        let mut plan = FaultPlan::new()
            .with(Fault::new(Message::CannotResolve).times(1))
            .with(
                Fault::new(Message::NetworkConnectionLost)
                    .after_execution()
                    .on_calls(0..1),
            );
        let first = plan.decide(&info(0, Operation::Run, &["x"]));
        let second = plan.decide(&info(1, Operation::Run, &["x"]));
        let third = plan.decide(&info(2, Operation::Run, &["x"]));
        assert_eq!(
            first,
            Some((Message::CannotResolve, Timing::BeforeExecution))
        );
        // The second rule's first call is call 1, the one the first rule let through.
        assert_eq!(
            second,
            Some((Message::NetworkConnectionLost, Timing::AfterExecution))
        );
        assert_eq!(third, None);
    }
}
