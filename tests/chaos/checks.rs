//! The judge of each round: every call against the journal (attempts, classes, the error
//! the caller got, waits within the policy, stalls cut exactly at their time limit, no
//! call past its deadline) and the database (no write applied twice).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

use d1_retry::testing::{Call, Timing, Value};
use d1_retry::{FailureClass, RetryPolicy, TimeLimit};
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

/// What the journal says a call's failure means (`None`: it succeeded). A call cut by a
/// time limit (its future dropped mid-stall) failed as maybe executed, whatever D1 would
/// have answered.
fn class_of(call: &Call) -> Option<FailureClass> {
    if call.dropped {
        return Some(FailureClass::MaybeExecuted);
    }
    match (&call.injected, &call.error) {
        (Some((message, _)), _) => message.documented_class(),
        (None, Some(_)) => Some(FailureClass::Permanent),
        (None, None) => None,
    }
}

/// Whether the call answered with rows (not an error, nor cut by a time limit).
fn succeeded(call: &Call) -> bool {
    call.error.is_none() && !call.dropped
}

/// The limit a call made `elapsed` into its operation raced against: the attempt timeout,
/// or what was left of the deadline if that was sooner.
fn limit_at(policy: &RetryPolicy, elapsed: Duration) -> Option<(Duration, TimeLimit)> {
    let timeout = policy.attempt_timeout();
    let left = policy.deadline().map(|d| d.saturating_sub(elapsed));
    match (timeout, left) {
        (Some(t), Some(l)) if l <= t => Some((l, TimeLimit::Deadline)),
        (Some(t), _) => Some((t, TimeLimit::Attempt)),
        (None, Some(l)) => Some((l, TimeLimit::Deadline)),
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
        let plan = kind.executions(outcome.items, self.path);
        let describe = || {
            let mut text = format!("operation {outcome:#?}\njournal:\n");
            for call in calls {
                let _ = writeln!(
                    text,
                    "  #{} {:?} {:?} injected={:?} stalled={:?} dropped={} executed={} error={:?}",
                    call.index,
                    call.operation,
                    call.statements.first().map(|(sql, _)| sql),
                    call.injected,
                    call.stalled,
                    call.dropped,
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

        // When each call was made, and when its caller had its answer: at once, after its
        // stall, or when a time limit cut it (its future dropped mid-stall).
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
        let limits: Vec<Option<(Duration, TimeLimit)>> = times
            .iter()
            .map(|&time| limit_at(&policy, time - outcome.started))
            .collect();
        let mut ends = Vec::with_capacity(calls.len());
        for ((call, &time), &limit) in calls.iter().zip(&times).zip(&limits) {
            self.check(kind.timed() || call.stalled.is_none(), || {
                format!(
                    "call #{} of an operation without time limits stalled\n{}",
                    call.index,
                    describe()
                )
            });
            // A stall longer than the call's limit is cut at the limit, and no other.
            let cut = limit.is_some_and(|(limit, _)| call.stalled.is_some_and(|s| s > limit));
            self.check(call.dropped == cut, || {
                format!(
                    "call #{} stalled {:?} under the limit {limit:?}; dropped: {}\n{}",
                    call.index,
                    call.stalled,
                    call.dropped,
                    describe()
                )
            });
            ends.push(match limit {
                Some((limit, _)) if call.dropped => time + limit,
                _ => time + call.stalled.unwrap_or_default(),
            });
        }
        let last_end = ends.last().copied().unwrap_or(outcome.ended);
        // The caller had its answer when the last call answered or was cut: a cut call's
        // caller at the limit, not when D1 answers.
        self.check(outcome.ended == last_end, || {
            format!(
                "the caller had its answer {:?} after the start, the last call ended {:?} \
                 after it\n{}",
                outcome.ended - outcome.started,
                last_end - outcome.started,
                describe()
            )
        });
        // No call passes its deadline.
        if let Some(deadline) = policy.deadline() {
            let took = outcome.ended - outcome.started;
            self.check(took <= deadline, || {
                format!(
                    "the call took {took:?}, its deadline is {deadline:?}\n{}",
                    describe()
                )
            });
        }

        // The executions: the calls split after each success. The body awaits each
        // execution before the next, so an execution's calls are consecutive, and each
        // call of one execution runs the same statement with the same parameters.
        let mut executions: Vec<&[Call]> = Vec::new();
        let mut start = 0;
        for (i, call) in calls.iter().enumerate() {
            if succeeded(call) || i + 1 == calls.len() {
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
        let mut cut_reads_retried = 0;
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
            // Every call but the last failed in a way the retry table retries (a call cut
            // by a time limit: maybe executed, so a read's is retried and a write's not).
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
                if call.dropped {
                    cut_reads_retried += 1;
                }
            }
            if n > 0 {
                later_retries += tries - 1;
            }
            // A write ran at most once, whatever its caller heard: stalled, cut, or not.
            let executed =
                i64::try_from(execution.iter().filter(|c| c.executed).count()).unwrap_or(i64::MAX);
            if per_execution > 0 {
                self.check(executed <= 1, || {
                    format!(
                        "execution {n} ran {executed} times: a write applied twice\n{}",
                        describe()
                    )
                });
                if execution.iter().any(|c| c.stalled.is_some()) {
                    self.check(executed <= 1, || {
                        format!("a stalled write applied twice\n{}", describe())
                    });
                }
            }
            executed_rows += per_execution * executed;
        }
        // The caller got the last call's outcome, unchanged; or, if a time limit cut the
        // last call, a `TimedOut` naming that limit.
        if last.dropped {
            let expected = limits.last().copied().flatten().map(|(_, limit)| {
                let configured = match limit {
                    TimeLimit::Attempt => policy.attempt_timeout(),
                    TimeLimit::Deadline => policy.deadline(),
                };
                format!(
                    " passed its {} of {} ms",
                    limit.as_str(),
                    configured.unwrap_or_default().as_millis()
                )
            });
            self.check(
                outcome.error.as_deref().is_some_and(|error| {
                    error.starts_with("D1 call timed out: ")
                        && expected.as_deref().is_some_and(|e| error.ends_with(e))
                }),
                || {
                    format!(
                        "the last call was cut ({expected:?}), the caller got {:?}\n{}",
                        outcome.error,
                        describe()
                    )
                },
            );
        } else {
            self.check(outcome.error == last.error, || {
                format!(
                    "the caller got {:?}, the last call {:?}\n{}",
                    outcome.error,
                    last.error,
                    describe()
                )
            });
        }
        // It stopped for a reason: success, a failure it must not retry, the call's last
        // retry, (for a budgeted policy) an exhausted budget, or (for a policy with a
        // deadline) the deadline: the last call was cut by it, or the next retry's wait
        // would have ended at or after it.
        let mut tally = self.tally.borrow_mut();
        if kind.timed() {
            tally.timed_operations += 1;
        }
        tally.timed_out_reads_retried += cut_reads_retried;
        for (call, limit) in calls.iter().zip(&limits) {
            if call.stalled.is_some() {
                tally.stalled_calls += 1;
            }
            match limit {
                Some((_, TimeLimit::Attempt)) if call.dropped => tally.attempt_timeouts += 1,
                Some((_, TimeLimit::Deadline)) if call.dropped => tally.deadline_cuts += 1,
                _ => {}
            }
        }
        if let Some(class) = class_of(last) {
            tally.caller_errors += 1;
            let access = plan[(executions.len() - 1).min(plan.len() - 1)].0;
            let retryable = access.retries(class);
            let at_limit = retries == max_attempts - 1;
            let deadline_stop = policy.deadline().is_some_and(|deadline| {
                let cut_by_deadline =
                    last.dropped && matches!(limits.last(), Some(Some((_, TimeLimit::Deadline))));
                let left = deadline.saturating_sub(last_end - outcome.started);
                let (_, longest_wait) = policy.delay_bounds(retries + 1);
                cut_by_deadline || longest_wait >= left
            });
            if class == FailureClass::Permanent {
                tally.permanent_errors += 1;
            }
            if class == FailureClass::MaybeExecuted && access == Access::Write {
                tally.maybe_executed_write_errors += 1;
                if last.dropped {
                    tally.timed_out_writes_handed_back += 1;
                    if last.executed {
                        tally.timed_out_writes_in_database += 1;
                    }
                }
            }
            if retryable && at_limit {
                tally.exhausted += 1;
            }
            if retryable && !at_limit {
                if policy.budget().is_none() && deadline_stop {
                    tally.deadline_stops += 1;
                } else {
                    tally.budget_stops += 1;
                }
            }
            drop(tally);
            self.check(
                !retryable || at_limit || policy.budget().is_some() || deadline_stop,
                || {
                    format!(
                        "gave up on a retryable failure before the call's last retry\n{}",
                        describe()
                    )
                },
            );
        } else {
            drop(tally);
        }

        // The database: no write applied twice; exactly as often as the journal says it ran
        // (a write cut by a time limit: there once if D1 ran it before the cut, else not).
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

        // Waits, from the end of a call (its answer, or its cut) to the next: the call's
        // n-th retry within the policy's bounds for retry n, the next execution at once,
        // the total within the schedule.
        // tokio's timer fires on whole milliseconds.
        let tick = ms(1);
        let mut retry = 0;
        let mut total = Duration::ZERO;
        for ((pair, call), &end) in times.windows(2).zip(calls).zip(&ends) {
            self.check(end <= pair[1], || {
                format!(
                    "call #{} ended after the next call started\n{}",
                    call.index,
                    describe()
                )
            });
            let waited = pair[1] - end;
            total += waited;
            if succeeded(call) {
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
        let bound = policy.max_total_delay() + tick * attempts;
        self.check(total <= bound, || {
            format!(
                "waited {total:?} in all, the schedule allows {:?}\n{}",
                policy.max_total_delay(),
                describe()
            )
        });

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
