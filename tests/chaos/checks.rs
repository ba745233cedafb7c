//! The judge of each round: every call against the journal (attempts, classes, the error
//! the caller got, waits within the policy) and the database (no write applied twice).

use std::collections::HashMap;
use std::fmt::Write as _;

use d1_retry::FailureClass;
use d1_retry::testing::{Call, Timing, Value};
use tokio::time::Instant;

use crate::faults::hash;
use crate::harness::{Harness, Outcome};
use crate::ms;
use crate::repository::{Access, Kind};

/// The operation a journal entry belongs to: the first parameter, or the `/* op N */` tag.
fn op_of(call: &Call) -> Option<i64> {
    let (sql, params) = call.statements.first()?;
    match params.first() {
        Some(Value::Integer(op)) => Some(*op),
        _ => sql.strip_prefix("/* op ")?.split_once(' ')?.0.parse().ok(),
    }
}

/// What the journal says a call's failure means (`None`: it succeeded).
fn class_of(call: &Call) -> Option<FailureClass> {
    match (&call.injected, &call.error) {
        (Some((message, _)), _) => message.documented_class(),
        (None, Some(_)) => Some(FailureClass::Permanent),
        (None, None) => None,
    }
}

impl Harness {
    /// Checks every operation of a finished round against the journal and the database.
    pub fn verify_round(&self) {
        let calls = self.db.take_calls();
        let mut by_op: HashMap<i64, Vec<Call>> = HashMap::new();
        for call in calls {
            let op = op_of(&call);
            self.check(op.is_some(), || {
                format!("a call without an operation id: {call:?}")
            });
            if let Some(op) = op {
                by_op.entry(op).or_default().push(call);
            }
        }
        let outcomes = std::mem::take(&mut *self.outcomes.borrow_mut());
        let first = outcomes.iter().map(|o| o.op).min().unwrap_or(0);
        let last = outcomes.iter().map(|o| o.op).max().unwrap_or(0);
        let written: HashMap<i64, i64> = self.db.with_connection(|c| {
            let mut statement = c
                .prepare(
                    "SELECT op_id, count(*) FROM writes WHERE op_id BETWEEN ?1 AND ?2 \
                     GROUP BY op_id",
                )
                .expect("the count query prepares");
            statement
                .query_map([first, last], |row| Ok((row.get(0)?, row.get(1)?)))
                .expect("the count query runs")
                .collect::<Result<_, _>>()
                .expect("the counts read")
        });
        for outcome in &outcomes {
            let calls = by_op.remove(&outcome.op).unwrap_or_default();
            self.verify(
                outcome,
                &calls,
                written.get(&outcome.op).copied().unwrap_or(0),
            );
        }
        self.check(by_op.is_empty(), || {
            format!(
                "calls of operations that never finished: {:?}",
                by_op.keys()
            )
        });
    }

    fn verify(&self, outcome: &Outcome, calls: &[Call], rows: i64) {
        let Outcome { op, kind, .. } = *outcome;
        let policy = kind.policy(self.path);
        let max_attempts = policy.max_attempts();
        let plan = kind.executions(outcome.items);
        let describe = || {
            let mut text = format!("operation {outcome:#?}\njournal:\n");
            for call in calls {
                let _ = writeln!(
                    text,
                    "  #{} {:?} {:?} injected={:?} executed={} error={:?}",
                    call.index,
                    call.operation,
                    call.statements.first().map(|(sql, _)| sql),
                    call.injected,
                    call.executed,
                    call.error
                );
            }
            let _ = write!(text, "rows in `writes` for this operation: {rows}");
            text
        };
        let attempts = u32::try_from(calls.len()).unwrap_or(u32::MAX);
        self.check(attempts >= 1, || format!("no call made\n{}", describe()));
        let Some(last) = calls.last() else { return };

        // The executions: the calls split after each success. The body awaits each
        // execution before the next, so an execution's calls are consecutive, and each
        // call of one execution runs the same statement with the same parameters.
        let mut executions: Vec<&[Call]> = Vec::new();
        let mut start = 0;
        for (i, call) in calls.iter().enumerate() {
            if call.error.is_none() || i + 1 == calls.len() {
                executions.push(&calls[start..=i]);
                start = i + 1;
            }
        }
        self.check(executions.len() <= plan.len(), || {
            format!(
                "{} executions, the operation makes {}\n{}",
                executions.len(),
                plan.len(),
                describe()
            )
        });
        if outcome.error.is_none() {
            self.check(executions.len() == plan.len(), || {
                format!(
                    "succeeded after {} of its {} executions\n{}",
                    executions.len(),
                    plan.len(),
                    describe()
                )
            });
        }
        // One schedule per call: its executions share `max_attempts - 1` retries.
        let retries = attempts - u32::try_from(executions.len()).unwrap_or(u32::MAX);
        self.check(retries < max_attempts, || {
            format!(
                "{retries} retries in one call, the policy allows {}\n{}",
                max_attempts - 1,
                describe()
            )
        });
        let mut later_retries = 0;
        let mut executed_rows = 0;
        for (n, (execution, &(access, per_execution))) in
            executions.iter().zip(plan.iter()).enumerate()
        {
            let tries = u32::try_from(execution.len()).unwrap_or(u32::MAX);
            self.check(tries <= max_attempts, || {
                format!(
                    "execution {n} made {tries} attempts, the policy allows {max_attempts}\n{}",
                    describe()
                )
            });
            self.check(
                execution
                    .iter()
                    .all(|c| c.statements == execution[0].statements),
                || format!("execution {n} ran different statements\n{}", describe()),
            );
            // Every call but the last failed in a way the retry table retries.
            for call in &execution[..execution.len() - 1] {
                let class = class_of(call);
                self.check(class.is_some_and(|c| access.retries(c)), || {
                    format!(
                        "execution {n} retried after call #{} ({class:?}), which {access:?} \
                         must not retry\n{}",
                        call.index,
                        describe()
                    )
                });
            }
            if n > 0 {
                later_retries += tries - 1;
            }
            // A write ran at most once, whatever its caller heard.
            let executed =
                i64::try_from(execution.iter().filter(|c| c.executed).count()).unwrap_or(i64::MAX);
            if per_execution > 0 {
                self.check(executed <= 1, || {
                    format!(
                        "execution {n} ran {executed} times: a write applied twice\n{}",
                        describe()
                    )
                });
            }
            executed_rows += per_execution * executed;
        }
        // The caller got the last call's outcome, unchanged.
        self.check(outcome.error == last.error, || {
            format!(
                "the caller got {:?}, the last call {:?}\n{}",
                outcome.error,
                last.error,
                describe()
            )
        });
        // It stopped for a reason: success, a failure it must not retry, the call's last
        // retry, or (for a budgeted policy) an exhausted budget.
        let mut tally = self.tally.borrow_mut();
        if let Some(class) = class_of(last) {
            tally.caller_errors += 1;
            let access = plan[(executions.len() - 1).min(plan.len() - 1)].0;
            let retryable = access.retries(class);
            let at_limit = retries == max_attempts - 1;
            if class == FailureClass::Permanent {
                tally.permanent_errors += 1;
            }
            if class == FailureClass::MaybeExecuted && access == Access::Write {
                tally.maybe_executed_write_errors += 1;
            }
            if retryable && at_limit {
                tally.exhausted += 1;
            }
            if retryable && !at_limit {
                tally.budget_stops += 1;
            }
            drop(tally);
            self.check(!retryable || at_limit || policy.budget().is_some(), || {
                format!(
                    "gave up on a retryable failure before the call's last retry\n{}",
                    describe()
                )
            });
        } else {
            drop(tally);
        }

        // The database: no write applied twice; exactly as often as the journal says it ran.
        let all_rows: i64 = plan.iter().map(|(_, rows)| rows).sum();
        self.check(rows == executed_rows, || {
            format!(
                "{rows} rows written, the journal says {executed_rows}\n{}",
                describe()
            )
        });
        self.check(rows <= all_rows, || {
            format!("a write applied twice\n{}", describe())
        });
        if outcome.error.is_none() {
            self.check(rows == all_rows, || {
                format!(
                    "a write the caller saw succeed is not there exactly once\n{}",
                    describe()
                )
            });
        }
        if all_rows == 0 {
            self.check(rows == 0, || {
                format!("a read or upsert wrote to `writes`\n{}", describe())
            });
        }
        if kind == Kind::Duplicate {
            self.check(
                outcome.error.as_deref().is_some_and(|e| !e.is_empty()),
                || format!("a duplicate insert succeeded\n{}", describe()),
            );
        }

        // Nothing in the body ran twice: a `#[d1_retry]` method's body runs once, however
        // often D1 is called; a whole-body attempt (the driver, `idempotent`) runs it once
        // per call, as the call is made.
        let times: Vec<Instant> = calls
            .iter()
            .map(|call| {
                let time = self.call_stamps.take(call.index);
                self.check(time.is_some(), || {
                    format!("call #{} was not stamped", call.index)
                });
                time.unwrap_or_else(Instant::now)
            })
            .collect();
        if kind.body_runs_once(self.path) {
            self.check(outcome.stamps.len() == 1, || {
                format!(
                    "the body ran {} times for one call\n{}",
                    outcome.stamps.len(),
                    describe()
                )
            });
        } else {
            self.check(outcome.stamps == times, || {
                format!(
                    "attempts started at {:?}, calls made at {times:?}\n{}",
                    outcome.stamps,
                    describe()
                )
            });
        }

        // Waits: the call's n-th retry within the policy's bounds for retry n, the next
        // execution at once, the total within the schedule.
        // tokio's timer fires on whole milliseconds.
        let tick = ms(1);
        let mut retry = 0;
        for (pair, call) in times.windows(2).zip(calls) {
            let waited = pair[1] - pair[0];
            if call.error.is_none() {
                self.check(waited <= tick, || {
                    format!(
                        "the next execution started {waited:?} after call #{} succeeded\n{}",
                        call.index,
                        describe()
                    )
                });
                continue;
            }
            retry += 1;
            let (min, max) = policy.delay_bounds(retry);
            self.check(min <= waited && waited <= max + tick, || {
                format!(
                    "retry {retry} waited {waited:?}, the policy allows {min:?}..={max:?}\n{}",
                    describe()
                )
            });
        }
        if let (Some(first), Some(last_time)) = (times.first(), times.last()) {
            let total = *last_time - *first;
            let bound = policy.max_total_delay() + tick * attempts;
            self.check(total <= bound, || {
                format!(
                    "waited {total:?} in all, the schedule allows {:?}\n{}",
                    policy.max_total_delay(),
                    describe()
                )
            });
        }

        let mut tally = self.tally.borrow_mut();
        tally.operations += 1;
        tally.calls += u64::from(attempts);
        tally.retries += u64::from(retries);
        if plan.len() > 1 {
            tally.multi_execution_ops += 1;
            tally.later_execution_retries += u64::from(later_retries);
        }
        for call in calls {
            match call.injected {
                Some((_, Timing::BeforeExecution)) => tally.faults_before += 1,
                Some((_, Timing::AfterExecution)) => tally.faults_after += 1,
                None => {}
            }
        }
        tally.fingerprint = hash(&[
            tally.fingerprint,
            u64::try_from(op).unwrap_or(0),
            outcome.lane,
            u64::from(attempts),
            u64::from(outcome.error.is_some()),
            u64::try_from(rows).unwrap_or(0),
        ]);
    }

    /// No write anywhere in the database applied more often than one execution writes (an
    /// insert loop writes one row per item, each of its own kind).
    pub fn verify_database(&self) {
        let over: Vec<(i64, i64)> = self.db.with_connection(|c| {
            let mut statement = c
                .prepare(
                    "SELECT op_id, count(*) AS n FROM writes GROUP BY op_id, kind \
                     HAVING n > 2 OR (n = 2 AND kind <> 'batch')",
                )
                .expect("the duplicate query prepares");
            statement
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                .expect("the duplicate query runs")
                .collect::<Result<_, _>>()
                .expect("the duplicates read")
        });
        self.check(over.is_empty(), || {
            format!("writes applied twice: {over:?}")
        });
        let dupes: i64 = self
            .db
            .with_connection(|c| c.query_row("SELECT count(*) FROM uniq", [], |row| row.get(0)))
            .expect("the uniq count reads");
        self.check(dupes == 1, || {
            format!("{dupes} rows in `uniq`, the constraint allows 1")
        });
    }
}
