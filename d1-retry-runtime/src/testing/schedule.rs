//! When a rule strikes, among the calls it applies to: every time, by call number, by a
//! seeded coin, at scripted instants, inside scripted windows, or by a test's own closure.
//!
//! Apart from [`Fault`](super::Fault) because a schedule only answers "this call?": which
//! calls a rule looks at, and what it injects, are the rule's business.

use core::fmt;
use core::ops::Range;
use core::time::Duration;

use rand::Rng;
use rand::rngs::SmallRng;

use super::{CallInfo, Clock};

/// The schedule of one rule; built through [`Fault`](super::Fault)'s methods.
pub(crate) enum Schedule {
    /// Every call.
    Every,
    /// The calls whose ordinal among the rule's calls is in the range.
    Calls(Range<u64>),
    /// Each call with this probability, drawn from a seeded generator.
    Probability { probability: f64, rng: SmallRng },
    /// The first call at or after each instant (sorted), once per instant.
    At {
        clock: Clock,
        times: Vec<Duration>,
        next: usize,
    },
    /// Every call while the clock reads inside one of the windows.
    During {
        clock: Clock,
        windows: Vec<Range<Duration>>,
    },
    /// Whatever the closure says.
    When(Box<dyn FnMut(&CallInfo<'_>) -> bool + Send>),
}

impl Schedule {
    /// Whether the schedule strikes `call`, the rule's `ordinal`-th call (from 0). Advances
    /// the generator and the timeline, so it is asked once per call.
    pub(crate) fn strikes(&mut self, ordinal: u64, call: &CallInfo<'_>) -> bool {
        match self {
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
        }
    }
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

#[cfg(test)]
mod tests {
    use super::super::{Fault, FaultPlan, Message, Operation};
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn info<'a>(index: u64, operation: Operation, sql: &'a [&'a str]) -> CallInfo<'a> {
        CallInfo {
            index,
            operation,
            sql,
            session: false,
        }
    }

    fn struck(plan: &mut FaultPlan, n: u64) -> Vec<u64> {
        (0..n)
            .filter(|&i| {
                plan.decide(&info(i, Operation::First, &["SELECT"]))
                    .is_some()
            })
            .collect()
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
    fn probability_is_seeded_and_roughly_right() {
        let run = |seed| {
            let mut plan = FaultPlan::new()
                .with(Fault::new(Message::InternalError).with_probability(0.25, seed));
            struck(&mut plan, 4000)
        };
        let a = run(1);
        assert_eq!(a, run(1));
        assert_ne!(a, run(2));
        assert!((850..1150).contains(&a.len()), "{}", a.len());
        let mut never =
            FaultPlan::new().with(Fault::new(Message::InternalError).with_probability(f64::NAN, 1));
        assert!(struck(&mut never, 100).is_empty());
        let mut always =
            FaultPlan::new().with(Fault::new(Message::InternalError).with_probability(7.0, 1));
        assert_eq!(struck(&mut always, 100).len(), 100);
    }

    #[test]
    fn at_fails_the_first_call_at_or_after_each_instant_once() {
        let (clock, millis) = manual_clock();
        let ms = Duration::from_millis;
        let mut plan = FaultPlan::new()
            .with(Fault::new(Message::InternalError).at(&clock, [ms(250), ms(100), ms(110)]));
        let mut failed = Vec::new();
        for (i, now) in (0u64..).zip([0u64, 50, 100, 105, 300, 301, 302, 1000]) {
            millis.store(now, Ordering::Relaxed);
            if plan
                .decide(&info(i, Operation::First, &["SELECT"]))
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
            Fault::new(Message::CpuLimit)
                .when(|call| call.index % 3 == 0 && call.sql[0] == "y" && !call.session),
        );
        assert!(plan.decide(&info(3, Operation::Run, &["y"])).is_some());
        assert!(plan.decide(&info(3, Operation::Run, &["x"])).is_none());
        assert!(plan.decide(&info(4, Operation::Run, &["y"])).is_none());
        let in_session = CallInfo {
            session: true,
            ..info(6, Operation::Run, &["y"])
        };
        assert!(plan.decide(&in_session).is_none());
    }

    #[test]
    fn schedules_describe_themselves() {
        let (clock, _) = manual_clock();
        let ms = Duration::from_millis;
        let text = format!(
            "{:?}",
            [
                Schedule::Every,
                Schedule::Calls(1..2),
                Schedule::At {
                    clock: clock.clone(),
                    times: vec![ms(5)],
                    next: 0
                },
                Schedule::During {
                    clock,
                    windows: vec![ms(0)..ms(1000)]
                },
                Schedule::When(Box::new(|_| true)),
            ]
        );
        assert_eq!(
            text,
            "[Every, Calls(1..2), At { times: [5ms], next: 0 }, During([0ns..1s]), When(..)]"
        );
    }
}
