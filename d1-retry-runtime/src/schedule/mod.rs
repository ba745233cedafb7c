//! When to try again: the policy's jittered exponential schedule ([`policy`]) and where its
//! randomness comes from ([`jitter`]), the retry budget shared by all calls ([`budget`]),
//! time limits on an attempt or a call ([`timeout`]), and the waiting itself, through a
//! [`Sleeper`](sleep::Sleeper) that works natively and on wasm32 ([`sleep`]), counted in
//! `u64` arithmetic ([`duration`]), and the sleeps the retry loops hold across polls
//! ([`wait`]).
//!
//! Nothing here knows what failed or why: the retry loops (`retry/`) ask the schedule for
//! a delay only once the retry table has allowed a retry.

pub(crate) mod budget;
pub(crate) mod duration;
pub(crate) mod jitter;
pub(crate) mod policy;
pub(crate) mod sleep;
pub(crate) mod timeout;
pub(crate) mod wait;
