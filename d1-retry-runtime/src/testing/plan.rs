//! The ordered rules of a database: which one decides a call.
//!
//! Separate from [`Fault`] because the ordering is a contract of its own: the first rule
//! that strikes decides, and the rules after it never see the call, so their counters
//! (`times`, `on_calls`) count only the calls that reached them.

use super::fault::Strike;
use super::{CallInfo, Fault};

/// The rules that decide which calls of a [`D1Database`](super::D1Database) fail or stall.
///
/// For each call, the rules are asked in order; the first that strikes decides the
/// failure (and the stall), and the rules after it are not asked (their counters do not
/// see that call). A plan with no rules lets every call through. A call that must both
/// hang and fail takes one rule with both ([`Fault::stalling`]): a [`Fault::stall`] that
/// strikes first lets its call through, whatever the rules after it say.
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

    /// What happens to `call`, if a rule strikes.
    pub(crate) fn decide(&mut self, call: &CallInfo<'_>) -> Option<Strike> {
        self.rules.iter_mut().find_map(|rule| rule.strikes(call))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Message, Operation, Timing};
    use super::*;
    use core::time::Duration;

    fn info(index: u64) -> CallInfo<'static> {
        CallInfo {
            index,
            operation: Operation::Run,
            sql: &["x"],
            session: false,
        }
    }

    #[test]
    fn an_empty_plan_fails_nothing() {
        let mut plan = FaultPlan::new();
        assert!(plan.is_empty());
        assert_eq!(plan.len(), 0);
        assert_eq!(plan.decide(&info(0)), None);
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
        assert!(!plan.is_empty());
        assert_eq!(plan.len(), 2);
        assert_eq!(
            plan.decide(&info(0)),
            Some(Strike::fails(
                Message::CannotResolve,
                Timing::BeforeExecution
            ))
        );
        // The second rule's first call is call 1, the one the first rule let through.
        assert_eq!(
            plan.decide(&info(1)),
            Some(Strike::fails(
                Message::NetworkConnectionLost,
                Timing::AfterExecution
            ))
        );
        assert_eq!(plan.decide(&info(2)), None);
        let injected: Vec<u64> = plan.rules().iter().map(Fault::injected).collect();
        assert_eq!(injected, [1, 1]);
    }

    #[test]
    fn push_appends_like_with() {
        let mut plan = FaultPlan::new();
        plan.push(Fault::new(Message::CpuLimit).on_calls(1..2));
        assert_eq!(plan.decide(&info(0)), None);
        assert_eq!(
            plan.decide(&info(1)),
            Some(Strike::fails(Message::CpuLimit, Timing::BeforeExecution))
        );
        let text = format!("{plan:?}");
        assert!(text.contains("Calls(1..2)"), "{text}");
    }

    #[test]
    fn a_stall_that_strikes_first_shadows_the_rules_after_it() {
        let mut plan = FaultPlan::new()
            .with(Fault::stall(Duration::from_secs(3)).times(1))
            .with(Fault::new(Message::CpuLimit));
        let stalled = plan.decide(&info(0)).unwrap();
        assert_eq!(stalled.failure, None);
        assert_eq!(
            stalled.stall,
            Some((Duration::from_secs(3), Timing::BeforeExecution))
        );
        assert_eq!(
            plan.decide(&info(1)),
            Some(Strike::fails(Message::CpuLimit, Timing::BeforeExecution))
        );
        let injected: Vec<u64> = plan.rules().iter().map(Fault::injected).collect();
        assert_eq!(injected, [1, 1]);
    }
}
