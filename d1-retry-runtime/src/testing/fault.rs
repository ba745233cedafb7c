//! One fault rule: which calls it looks at, when it strikes, what it injects (a failure, a
//! stall, or both), and whether the statement runs first.
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

/// When an injected fault strikes, relative to the statement: its failure, and its stall
/// ([`Fault::stalling`]) unless [`Fault::stall_timing`] places the stall elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Timing {
    /// The call fails (or stalls) before the statement runs: the database is unchanged. A
    /// call dropped during a stall before execution never runs.
    BeforeExecution,
    /// The statement runs and its changes are committed, then the caller gets the error
    /// anyway: the case that makes retrying a write dangerous. A stall after execution
    /// hangs with the changes already committed, so a caller that gives up during it
    /// leaves them in the database.
    AfterExecution,
}

/// What a rule does to a call it strikes, as the database carries it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Strike {
    /// The failure the caller gets, and when; `None` for a stall that ends in success.
    pub(crate) failure: Option<(Message, Timing)>,
    /// How long the call hangs, and where: before the statement runs, or after.
    pub(crate) stall: Option<(Duration, Timing)>,
}

impl Strike {
    /// A failure without a stall (the shape of every strike before stalls existed).
    #[cfg(test)]
    pub(crate) fn fails(message: Message, timing: Timing) -> Self {
        Strike {
            failure: Some((message, timing)),
            stall: None,
        }
    }

    /// Whether the statement runs: no failure, or a failure after execution.
    pub(crate) fn executes(&self) -> bool {
        self.failure
            .is_none_or(|(_, timing)| timing == Timing::AfterExecution)
    }

    /// Whether the stall comes before the statement runs: placed there, or on a call whose
    /// statement never runs.
    pub(crate) fn stalls_first(&self) -> bool {
        self.stall
            .is_some_and(|(_, at)| at == Timing::BeforeExecution || !self.executes())
    }
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
/// D1 also hangs: a call stalls for tens of seconds before its storage object resets.
/// [`Fault::stall`] makes the calls it strikes hang, then go through;
/// [`stalling`](Self::stalling) makes a failing rule hang before its failure. The stall
/// waits through the database's sleeper ([`D1Database::set_sleeper`](super::D1Database::set_sleeper);
/// tokio's clock by default), so under tokio's paused clock it takes virtual time only.
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
/// // The next write commits, hangs 45 s, then the storage object resets.
/// let _ = Fault::new(Message::StorageReset)
///     .when_sql_contains("INSERT")
///     .after_execution()
///     .stalling(core::time::Duration::from_secs(45))
///     .times(1);
/// ```
#[derive(Debug)]
#[must_use = "a Fault does nothing until it is added to a FaultPlan or a D1Database"]
pub struct Fault {
    /// `None` for a rule that only stalls ([`Fault::stall`]).
    message: Option<Message>,
    timing: Timing,
    stall: Option<Duration>,
    /// Where the stall sits; `None` follows `timing`.
    stall_timing: Option<Timing>,
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
        Fault::rule(Some(message), None)
    }

    /// A rule making every call hang for `duration`, then go through: the statement runs
    /// and the caller gets its rows, `duration` later. Narrowed, scheduled and capped like
    /// any rule; with [`after_execution`](Self::after_execution), the statement runs first
    /// and the answer hangs (a caller that gives up then has written without knowing it).
    ///
    /// A caller that drops the call's future during a stall before execution cancels the
    /// call: nothing runs. The journal marks such a call [`dropped`](super::Call::dropped).
    ///
    /// ```
    /// use core::time::Duration;
    /// use d1_retry_runtime::testing::{D1Database, Fault, Operation};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let db = D1Database::open_in_memory().unwrap();
    /// db.add_fault(Fault::stall(Duration::from_secs(40)).on(Operation::All).times(1));
    /// let start = tokio::time::Instant::now();
    /// assert!(db.prepare("SELECT 1").all().await.is_ok());
    /// assert_eq!(start.elapsed(), Duration::from_secs(40)); // virtual time
    /// assert_eq!(db.calls()[0].stalled, Some(Duration::from_secs(40)));
    /// # }
    /// ```
    pub fn stall(duration: Duration) -> Self {
        Fault::rule(None, Some(duration))
    }

    /// A rule striking every call, before the statement runs.
    fn rule(message: Option<Message>, stall: Option<Duration>) -> Self {
        Fault {
            message,
            timing: Timing::BeforeExecution,
            stall,
            stall_timing: None,
            operations: 0,
            sql_contains: None,
            schedule: Schedule::Every,
            limit: None,
            seen: 0,
            injected: 0,
        }
    }

    /// The statement runs and is committed first; then the caller gets the error (after the
    /// stall, if the rule has one). On a [`Fault::stall`]: the statement runs first, then
    /// the answer hangs.
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

    /// The call fails (or, for a [`Fault::stall`], hangs) before the statement runs (the
    /// default).
    pub fn before_execution(mut self) -> Self {
        self.timing = Timing::BeforeExecution;
        self
    }

    /// Sets the timing explicitly.
    pub fn timing(mut self, timing: Timing) -> Self {
        self.timing = timing;
        self
    }

    /// The calls this rule strikes hang for `duration` before they fail: a stalled D1
    /// whose storage object resets in the end. The stall comes where the failure does: with
    /// [`after_execution`](Self::after_execution), the statement runs and is committed,
    /// then the call hangs, then fails; otherwise the call hangs, then fails without
    /// running. On a [`Fault::stall`], it replaces the duration.
    ///
    /// ```
    /// use core::time::Duration;
    /// use d1_retry_runtime::testing::{D1Database, Fault, Message};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let db = D1Database::open_in_memory().unwrap();
    /// db.exec("CREATE TABLE t (x)").await.unwrap();
    /// db.add_fault(
    ///     Fault::new(Message::StorageReset)
    ///         .after_execution()
    ///         .stalling(Duration::from_secs(30))
    ///         .times(1),
    /// );
    /// let start = tokio::time::Instant::now();
    /// let error = db.prepare("INSERT INTO t VALUES (1)").run().await.unwrap_err();
    /// assert_eq!(start.elapsed(), Duration::from_secs(30));
    /// assert!(error.to_string().contains("caused object to be reset"));
    /// let rows: i64 = db
    ///     .with_connection(|c| c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)))
    ///     .unwrap();
    /// assert_eq!(rows, 1); // committed before the hang
    /// # }
    /// ```
    pub fn stalling(mut self, duration: Duration) -> Self {
        self.stall = Some(duration);
        self
    }

    /// Places the stall before or after the statement runs, when it should not sit where
    /// the rule's [`Timing`] puts it. `stall_timing(Timing::BeforeExecution)` on an
    /// after-execution rule: the call hangs, then the statement runs and is committed, then
    /// the call fails; a caller that gives up during the hang cancels the statement. A rule
    /// failing before execution never runs the statement, so its stall always comes first.
    pub fn stall_timing(mut self, timing: Timing) -> Self {
        self.stall_timing = Some(timing);
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

    /// Strikes (fails, or stalls) at most `n` calls, then never again.
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

    /// The message this rule injects; `None` for a rule that only stalls ([`Fault::stall`]).
    #[must_use]
    pub fn message(&self) -> Option<Message> {
        self.message
    }

    /// How long the calls this rule strikes hang, if they do.
    #[must_use]
    pub fn stall_duration(&self) -> Option<Duration> {
        self.stall
    }

    /// How many calls this rule has struck (failed, or stalled) so far.
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

    /// What this rule does to `call`, if it strikes; advances the rule's counters,
    /// generator and timeline.
    pub(crate) fn strikes(&mut self, call: &CallInfo<'_>) -> Option<Strike> {
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
        Some(Strike {
            failure: self.message.map(|message| (message, self.timing)),
            stall: self
                .stall
                .map(|stall| (stall, self.stall_timing.unwrap_or(self.timing))),
        })
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
            Some(Strike::fails(
                Message::CannotResolve,
                Timing::BeforeExecution
            ))
        );
        assert_eq!(struck(&mut fault, Operation::First, "SELECT 1", 5).len(), 5);
        assert_eq!(struck(&mut fault, Operation::Dump, "", 1).len(), 1);
    }

    #[test]
    fn timing_builders_set_the_timing() {
        let mut fault = Fault::new(Message::CodeUpdated).after_execution();
        let call = info(0, Operation::Run, &["x"]);
        assert_eq!(
            fault.strikes(&call).and_then(|s| s.failure).map(|f| f.1),
            Some(Timing::AfterExecution)
        );
        fault = fault.before_execution();
        assert_eq!(
            fault.strikes(&call).and_then(|s| s.failure).map(|f| f.1),
            Some(Timing::BeforeExecution)
        );
        fault = fault.timing(Timing::AfterExecution);
        assert_eq!(
            fault.strikes(&call).and_then(|s| s.failure).map(|f| f.1),
            Some(Timing::AfterExecution)
        );
        assert_eq!(fault.message(), Some(Message::CodeUpdated));
        assert_eq!(fault.stall_duration(), None);
    }

    #[test]
    fn a_stall_strikes_without_a_failure_and_follows_the_timing() {
        let secs = Duration::from_secs;
        let call = info(0, Operation::Run, &["x"]);
        let mut stall = Fault::stall(secs(30));
        assert_eq!(
            (stall.message(), stall.stall_duration()),
            (None, Some(secs(30)))
        );
        let strike = stall.strikes(&call).unwrap();
        assert_eq!(
            strike,
            Strike {
                failure: None,
                stall: Some((secs(30), Timing::BeforeExecution))
            }
        );
        assert!(strike.executes() && strike.stalls_first());
        // After execution: the statement runs, then the answer hangs.
        let strike = stall.after_execution().strikes(&call).unwrap();
        assert_eq!(strike.stall, Some((secs(30), Timing::AfterExecution)));
        assert!(strike.executes() && !strike.stalls_first());
        // `stalling` replaces the duration of a stall.
        let mut stall = Fault::stall(secs(30)).stalling(secs(5));
        assert_eq!(stall.strikes(&call).unwrap().stall.unwrap().0, secs(5));
    }

    #[test]
    fn stalling_adds_a_stall_where_the_failure_strikes_unless_placed() {
        let secs = Duration::from_secs;
        let call = info(0, Operation::Run, &["x"]);
        let reset = || Fault::new(Message::StorageReset).stalling(secs(40));

        let before = reset().strikes(&call).unwrap();
        assert_eq!(
            before.failure,
            Some((Message::StorageReset, Timing::BeforeExecution))
        );
        assert_eq!(before.stall, Some((secs(40), Timing::BeforeExecution)));
        assert!(!before.executes() && before.stalls_first());

        let after = reset().after_execution().strikes(&call).unwrap();
        assert_eq!(after.stall, Some((secs(40), Timing::AfterExecution)));
        assert!(after.executes() && !after.stalls_first());

        // Placed before execution on an after-execution rule: hang, run, fail.
        let placed = reset()
            .after_execution()
            .stall_timing(Timing::BeforeExecution)
            .strikes(&call)
            .unwrap();
        assert_eq!(
            placed.failure,
            Some((Message::StorageReset, Timing::AfterExecution))
        );
        assert!(placed.executes() && placed.stalls_first());

        // Placed after execution on a rule that never runs the statement: it comes first.
        let never_runs = reset()
            .stall_timing(Timing::AfterExecution)
            .strikes(&call)
            .unwrap();
        assert!(!never_runs.executes() && never_runs.stalls_first());
        // Without a stall, nothing stalls first.
        let plain = Fault::new(Message::StorageReset).strikes(&call).unwrap();
        assert!(!plain.stalls_first());
    }

    #[test]
    fn a_stall_is_filtered_and_capped_like_any_rule() {
        let mut stall = Fault::stall(Duration::from_secs(1))
            .when_sql_contains("INSERT")
            .on(Operation::Run)
            .times(2);
        assert!(
            stall
                .strikes(&info(0, Operation::Run, &["SELECT"]))
                .is_none()
        );
        assert!(
            stall
                .strikes(&info(1, Operation::All, &["INSERT"]))
                .is_none()
        );
        assert_eq!(struck(&mut stall, Operation::Run, "INSERT", 5), [0, 1]);
        assert_eq!(stall.injected(), 2);
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
