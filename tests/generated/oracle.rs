//! The checks after each case: the trace the interpreter kept, the kit's journal and the
//! table, against the rules of per-call retries.

use std::collections::HashMap;
use std::time::Duration;

use d1_retry::FailureClass;
use d1_retry::testing::{Call, Value};
use tokio::time::Instant;

use crate::faults::Stamps;
use crate::runner::{Access, POLICY, ScopeKind, Trace};

/// What one case produced.
pub struct Observed<'a> {
    pub trace: &'a Trace,
    pub journal: &'a [Call],
    pub stamps: &'a Stamps,
    /// Every row of `items`: (tag, id).
    pub rows: &'a [(i64, i64)],
    /// The top-level call's result, as text.
    pub result: &'a Result<(), String>,
    pub elapsed: Duration,
    pub effects: u32,
}

/// What one case exercised.
#[derive(Default, Debug)]
pub struct Counts {
    pub executions: u64,
    pub calls: u64,
    pub faults: u64,
    pub retries: u64,
    pub caller_errors: u64,
    pub exhausted: u64,
    pub whole_body_retries: u64,
}

/// The tag a journal call belongs to: its first parameter, or its `/* tag N */` prefix.
fn tag_of(call: &Call) -> Option<i64> {
    let (sql, params) = call.statements.first()?;
    match params.first() {
        Some(Value::Integer(tag)) => Some(*tag),
        _ => sql.strip_prefix("/* tag ")?.split_once(' ')?.0.parse().ok(),
    }
}

fn class_of(call: &Call) -> Option<FailureClass> {
    match (&call.injected, &call.error) {
        (Some((message, _)), _) => message.documented_class(),
        (None, Some(_)) => Some(FailureClass::Permanent),
        (None, None) => None,
    }
}

/// The rule per execution: not executed → retry; maybe executed → only if read-only;
/// permanent → never. An execution inside a plain helper, and a write through `first` or
/// `raw`, are never retried.
fn retryable(access: Access, class: FailureClass) -> bool {
    match (access, class) {
        (Access::Plain | Access::DecodedWrite, _) | (_, FailureClass::Permanent) => false,
        (_, FailureClass::NotExecuted) => true,
        (Access::Read, FailureClass::MaybeExecuted) => true,
        (Access::Write, FailureClass::MaybeExecuted) => false,
    }
}

macro_rules! ensure {
    ($cond:expr, $($what:tt)+) => {
        if !$cond {
            return Err(format!($($what)+));
        }
    };
}

/// Checks one case; the error says which invariant broke.
pub fn check(o: &Observed<'_>) -> Result<Counts, String> {
    let max = POLICY.max_attempts();
    let tick = Duration::from_millis(1);
    let trace = o.trace;
    let mut counts = Counts {
        executions: trace.execs.len() as u64,
        calls: o.journal.len() as u64,
        ..Counts::default()
    };
    let at = |position: usize| -> Instant { o.stamps.get(o.journal[position].index) };
    let failed = |position: usize| o.journal[position].error.is_some();

    // The journal, by execution.
    let mut by_tag: HashMap<i64, Vec<usize>> = HashMap::new();
    for (position, call) in o.journal.iter().enumerate() {
        let tag = tag_of(call).ok_or_else(|| format!("a call without a tag: {call:?}"))?;
        ensure!(
            tag >= 1 && tag as usize <= trace.execs.len(),
            "call #{} has tag {tag}, which no execution was given",
            call.index
        );
        ensure!(
            call.injected.is_some() || call.error.is_none(),
            "call #{} failed on its own (the program's SQL is wrong): {:?}",
            call.index,
            call.error
        );
        if call.injected.is_some() {
            counts.faults += 1;
        }
        by_tag.entry(tag).or_default().push(position);
    }
    let calls_of = |tag: i64| by_tag.get(&tag).map(Vec::as_slice).unwrap_or(&[]);

    // The table: no id twice; each execution's rows exactly as often as the journal says
    // it ran, at most once; every write the body saw succeed is there exactly once.
    let mut per_id: HashMap<i64, u32> = HashMap::new();
    let mut per_tag: HashMap<i64, Vec<i64>> = HashMap::new();
    for &(tag, id) in o.rows {
        *per_id.entry(id).or_default() += 1;
        per_tag.entry(tag).or_default().push(id);
    }
    let duplicates: Vec<_> = per_id.iter().filter(|(_, n)| **n > 1).collect();
    ensure!(
        duplicates.is_empty(),
        "writes applied twice (id, copies): {duplicates:?}"
    );

    // Scopes: nested when an enclosing call retries its whole body.
    let scopes = &trace.scopes;
    let nested = |mut scope: usize| -> bool {
        while let Some((parent, _, _)) = scopes[scope].parent {
            if scopes[parent].kind == ScopeKind::WholeBody {
                return true;
            }
            scope = parent;
        }
        false
    };
    // The outermost retrying whole-body attempt an execution runs in, if any.
    fn root(trace: &Trace, scope: usize, attempt: u32) -> Option<(usize, u32)> {
        let s = &trace.scopes[scope];
        if let Some(up) = s.parent.and_then(|(p, pa, _)| root(trace, p, pa)) {
            return Some(up);
        }
        (s.kind == ScopeKind::WholeBody).then_some((scope, attempt))
    }
    for (id, scope) in scopes.iter().enumerate() {
        let expected = match (scope.kind, nested(id)) {
            (ScopeKind::PerCall, _) | (ScopeKind::WholeBody, true) => 1..=1,
            (ScopeKind::WholeBody, false) => 1..=max,
        };
        ensure!(
            expected.contains(&scope.entries),
            "scope {id} ({}, nested: {}) ran its body {} times, expected {expected:?}",
            scope.name,
            nested(id),
            scope.entries
        );
    }

    for exec in &trace.execs {
        let calls = calls_of(exec.tag);
        let n = calls.len() as u32;
        ensure!(n >= 1, "execution {exec:?} made no D1 call");
        ensure!(
            n <= max,
            "execution {exec:?} made {n} D1 calls, the policy allows {max}"
        );
        if exec.access == Access::Plain || nested(exec.scope) {
            ensure!(
                n == 1,
                "execution {exec:?} retried on its own ({n} calls), though {}",
                if exec.access == Access::Plain {
                    "it is in a plain helper"
                } else {
                    "an enclosing whole-body attempt decides"
                }
            );
        }
        let (last, earlier) = calls.split_last().expect("n >= 1");
        for &position in earlier {
            ensure!(
                failed(position),
                "execution {exec:?} ran again after it succeeded (call #{})",
                o.journal[position].index
            );
        }
        ensure!(
            exec.done != failed(*last),
            "execution {exec:?}: the body saw {}, the last call {}",
            if exec.done { "success" } else { "no success" },
            if failed(*last) { "failed" } else { "succeeded" }
        );
        let executed = calls.iter().filter(|&&p| o.journal[p].executed).count();
        let rows = per_tag.get(&exec.tag).map(Vec::as_slice).unwrap_or(&[]);
        ensure!(
            rows.len() == executed * exec.ids.len(),
            "execution {exec:?}: {} rows, the journal says it ran {executed} times",
            rows.len()
        );
        ensure!(
            executed <= 1 || exec.ids.is_empty(),
            "write {exec:?} ran {executed} times"
        );
        if exec.done {
            let mut ids = rows.to_vec();
            ids.sort_unstable();
            ensure!(
                ids == exec.ids,
                "write {exec:?} reported done, but its rows are {ids:?}"
            );
        }
    }

    // Per-call schedules: an execution is retried only as the rule allows, stops only when
    // the rule forbids or the call's retries are spent; all executions of one call share
    // `max_attempts - 1` retries, the n-th waiting the n-th delay.
    let mut schedules = 0u32;
    for (id, scope) in scopes.iter().enumerate() {
        if scope.kind != ScopeKind::PerCall || nested(id) {
            continue;
        }
        schedules += 1;
        let mut retries = 0u32;
        let mut waited = Duration::ZERO;
        for exec in trace.execs.iter().filter(|e| e.scope == id) {
            let calls = calls_of(exec.tag);
            let (last, earlier) = calls.split_last().expect("checked above");
            for (k, &position) in earlier.iter().enumerate() {
                let call = &o.journal[position];
                let class = class_of(call).expect("failed");
                ensure!(
                    retryable(exec.access, class),
                    "execution {exec:?} was retried after {:?} ({class:?}), which the rule forbids",
                    call.injected
                );
                retries += 1;
                ensure!(
                    retries < max,
                    "scope {id} ({}) made {retries} retries, the call allows {}",
                    scope.name,
                    max - 1
                );
                let gap = at(calls[k + 1]) - at(position);
                let (min, most) = POLICY.delay_bounds(retries);
                ensure!(
                    min <= gap && gap <= most + tick,
                    "retry {retries} of scope {id} waited {gap:?}, the policy allows {min:?}..={most:?}"
                );
                waited += gap;
            }
            if failed(*last) {
                let class = class_of(&o.journal[*last]).expect("failed");
                let exhausted = retries == max - 1;
                ensure!(
                    !retryable(exec.access, class) || exhausted,
                    "execution {exec:?} gave up on {class:?} after {retries} retries of {}",
                    max - 1
                );
                if retryable(exec.access, class) {
                    counts.exhausted += 1;
                }
            }
        }
        counts.retries += u64::from(retries);
        ensure!(
            waited <= POLICY.max_total_delay() + tick * retries,
            "scope {id} waited {waited:?}, max_total_delay is {:?}",
            POLICY.max_total_delay()
        );
    }

    // A failure ends its call, and every caller up to the nearest retrying whole-body
    // attempt: the next D1 call, if any, is that attempt's retry.
    for exec in &trace.execs {
        let calls = calls_of(exec.tag);
        let last = *calls.last().expect("checked above");
        if !failed(last) {
            continue;
        }
        let next = last + 1;
        match root(trace, exec.scope, exec.attempt) {
            None => ensure!(
                next == o.journal.len(),
                "the body went on after execution {exec:?} failed for good"
            ),
            Some((w, i)) => {
                if next < o.journal.len() {
                    let tag = tag_of(&o.journal[next]).expect("checked");
                    let after = &trace.execs[tag as usize - 1];
                    let next_root = root(trace, after.scope, after.attempt);
                    ensure!(
                        next_root == Some((w, i + 1)),
                        "after execution {exec:?} failed in attempt {i} of scope {w}, the next \
                         call belongs to {next_root:?}"
                    );
                }
            }
        }
    }

    // Whole-body schedules: attempts end at a failure the table retries, wait their
    // delay, and stop at success, at a permanent failure or after `max_attempts`.
    for (w, scope) in scopes.iter().enumerate() {
        if scope.kind != ScopeKind::WholeBody || nested(w) {
            continue;
        }
        schedules += 1;
        let positions = |i: u32| -> Vec<usize> {
            let mut ps: Vec<usize> = trace
                .execs
                .iter()
                .filter(|e| root(trace, e.scope, e.attempt) == Some((w, i)))
                .flat_map(|e| calls_of(e.tag).iter().copied())
                .collect();
            ps.sort_unstable();
            ps
        };
        let mut waited = Duration::ZERO;
        for i in 1..=scope.entries {
            let ps = positions(i);
            if i < scope.entries {
                let last = *ps.last().ok_or_else(|| {
                    format!("attempt {i} of scope {w} made no call but was retried")
                })?;
                ensure!(
                    failed(last),
                    "attempt {i} of scope {w} was retried after its last call succeeded"
                );
                let class = class_of(&o.journal[last]).expect("failed");
                ensure!(
                    class != FailureClass::Permanent,
                    "attempt {i} of scope {w} was retried after a permanent failure"
                );
                let first_next = *positions(i + 1)
                    .first()
                    .ok_or_else(|| format!("attempt {} of scope {w} made no call", i + 1))?;
                let gap = at(first_next) - at(last);
                let (min, most) = POLICY.delay_bounds(i);
                ensure!(
                    min <= gap && gap <= most + tick,
                    "whole-body retry {i} of scope {w} waited {gap:?}, the policy allows {min:?}..={most:?}"
                );
                waited += gap;
            } else if let Some(&last) = ps.last()
                && failed(last)
            {
                let class = class_of(&o.journal[last]).expect("failed");
                ensure!(
                    class == FailureClass::Permanent || i == max,
                    "scope {w} gave up on {class:?} after {i} attempts of {max}"
                );
                if class != FailureClass::Permanent {
                    counts.exhausted += 1;
                }
            }
        }
        counts.whole_body_retries += u64::from(scope.entries - 1);
        counts.retries += u64::from(scope.entries - 1);
        ensure!(
            waited <= POLICY.max_total_delay() + tick * scope.entries,
            "scope {w} waited {waited:?}, max_total_delay is {:?}",
            POLICY.max_total_delay()
        );
    }

    // The caller got the last call's outcome.
    let last_failed = o.journal.last().and_then(|c| c.error.clone());
    ensure!(
        o.result.as_ref().err() == last_failed.as_ref(),
        "the call returned {:?}, the last D1 call ended with {last_failed:?}",
        o.result
    );
    if o.result.is_err() {
        counts.caller_errors += 1;
    }

    // Leaves: each attempt of an interpreter walks its program in order, once, and stops
    // exactly at the leaf whose execution failed; effects ran once per leaf reached.
    let failing_exec = |scope: usize, attempt: u32| {
        // The last call made under (scope, attempt), if it failed: its execution.
        let mut under: Vec<usize> = trace
            .execs
            .iter()
            .filter(|e| within(trace, e.scope, e.attempt, scope, attempt))
            .flat_map(|e| calls_of(e.tag).iter().copied())
            .collect();
        under.sort_unstable();
        under
            .last()
            .filter(|&&p| failed(p))
            .map(|&p| &trace.execs[tag_of(&o.journal[p]).expect("checked") as usize - 1])
    };
    let mut expected_effects = 0u32;
    for (id, scope) in scopes.iter().enumerate() {
        let interpreter = scope.name == "run" || scope.name == "read_block";
        if !interpreter {
            continue;
        }
        for attempt in 1..=scope.entries {
            let reached: Vec<usize> = trace
                .leaves
                .iter()
                .filter(|l| l.scope == id && l.attempt == attempt)
                .map(|l| l.index)
                .collect();
            ensure!(
                reached.iter().copied().eq(0..reached.len()),
                "scope {id} ({}) attempt {attempt} walked its leaves as {reached:?}",
                scope.name
            );
            match failing_exec(id, attempt) {
                None => ensure!(
                    reached.len() == scope.flat.len(),
                    "scope {id} ({}) attempt {attempt} succeeded after {} of {} leaves",
                    scope.name,
                    reached.len(),
                    scope.flat.len()
                ),
                Some(exec) => {
                    let at_leaf = leaf_in(trace, exec.scope, exec.leaf, id);
                    ensure!(
                        reached.len() == at_leaf + 1,
                        "scope {id} ({}) attempt {attempt} failed at leaf {at_leaf} but reached {} leaves",
                        scope.name,
                        reached.len()
                    );
                }
            }
            expected_effects += scope.flat[..reached.len()].iter().filter(|e| **e).count() as u32;
        }
    }
    ensure!(
        o.effects == expected_effects,
        "{} effects outside D1 ran, the leaves reached hold {expected_effects}",
        o.effects
    );

    // Virtual time: every schedule waits at most `max_total_delay`.
    let bound = POLICY.max_total_delay() * schedules.max(1) + tick * o.journal.len() as u32;
    ensure!(
        o.elapsed <= bound,
        "the call took {:?} of virtual time, {schedules} schedules allow {bound:?}",
        o.elapsed
    );
    Ok(counts)
}

/// Whether (scope, attempt) runs inside (outer, outer_attempt), or is it.
fn within(
    trace: &Trace,
    mut scope: usize,
    mut attempt: u32,
    outer: usize,
    outer_attempt: u32,
) -> bool {
    loop {
        if scope == outer {
            return attempt == outer_attempt;
        }
        match trace.scopes[scope].parent {
            Some((p, pa, _)) => {
                scope = p;
                attempt = pa;
            }
            None => return false,
        }
    }
}

/// The leaf of `target` an execution at (scope, leaf) was reached from.
fn leaf_in(trace: &Trace, mut scope: usize, mut leaf: usize, target: usize) -> usize {
    while scope != target {
        let (p, _, pl) = trace.scopes[scope]
            .parent
            .expect("target encloses the execution");
        scope = p;
        leaf = pl;
    }
    leaf
}
