//! What a call is, to the rest of the kit: its kind, what a fault rule is told about it,
//! and what the journal keeps of it.
//!
//! These three describe one call seen from three places (the API, the fault plan, the
//! test reading the journal), so they change together when a call kind is added.

use core::time::Duration;

use super::{Message, Timing, Value};

/// The kind of call, as the fault plan and the call journal see it.
///
/// A statement prepared from a [`D1DatabaseSession`](super::D1DatabaseSession) makes the
/// same kinds of calls as one prepared from the database; [`CallInfo::session`] tells them
/// apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// [`D1PreparedStatement::first`](super::D1PreparedStatement::first).
    First,
    /// [`D1PreparedStatement::all`](super::D1PreparedStatement::all).
    All,
    /// [`D1PreparedStatement::run`](super::D1PreparedStatement::run), also what awaiting a
    /// statement does.
    Run,
    /// [`D1PreparedStatement::raw`](super::D1PreparedStatement::raw) and
    /// [`raw_js_value`](super::D1PreparedStatement::raw_js_value): one D1 call, `raw()`,
    /// read two ways.
    Raw,
    /// [`D1Database::batch`](super::D1Database::batch) and
    /// [`D1DatabaseSession::batch`](super::D1DatabaseSession::batch).
    Batch,
    /// [`D1Database::exec`](super::D1Database::exec).
    Exec,
    /// [`D1Database::dump`](super::D1Database::dump).
    Dump,
}

impl Operation {
    /// Every operation.
    pub const ALL: [Operation; 7] = [
        Operation::First,
        Operation::All,
        Operation::Run,
        Operation::Raw,
        Operation::Batch,
        Operation::Exec,
        Operation::Dump,
    ];

    /// This operation's bit in a [`Fault`](super::Fault)'s set of operations.
    pub(crate) const fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// What a fault rule is told about a call, to decide with [`Fault::when`](super::Fault::when).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct CallInfo<'a> {
    /// The call's number on this database, from 0.
    pub index: u64,
    /// The kind of call.
    pub operation: Operation,
    /// The SQL of every statement in the call (one, except for a batch; none for a dump).
    pub sql: &'a [&'a str],
    /// Whether the call was made through a [`D1DatabaseSession`](super::D1DatabaseSession).
    pub session: bool,
}

/// One call as the journal recorded it.
///
/// A call is recorded when it answers, or, if the caller drops its future during a stall,
/// when it is dropped ([`dropped`](Self::dropped)); a call still stalled is not in the
/// journal yet. So concurrent stalled calls may appear out of [`index`](Self::index) order.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Call {
    /// The call's number on this database, from 0.
    pub index: u64,
    /// The kind of call.
    pub operation: Operation,
    /// The SQL of each statement (several for a batch, none for a dump), with its parameters.
    pub statements: Vec<(String, Vec<Value>)>,
    /// Whether the call was made through a [`D1DatabaseSession`](super::D1DatabaseSession).
    pub session: bool,
    /// The failure the fault plan injected, if any (`None` for a call that only stalled,
    /// [`Fault::stall`](super::Fault::stall)).
    pub injected: Option<(Message, Timing)>,
    /// How long the fault plan made the call hang, if it did (the whole stall, even when
    /// the caller dropped the call before its end).
    pub stalled: Option<Duration>,
    /// Whether the call ran: for a write, whether its changes are in the database (for
    /// `exec`: at least one line's).
    pub executed: bool,
    /// Whether the caller dropped the call's future during its stall, before it answered:
    /// the caller got neither rows nor an error (`error` is `None`). A stall before
    /// execution ends with nothing run; a stall after execution leaves the statement
    /// committed ([`executed`](Self::executed)).
    pub dropped: bool,
    /// The message of the error the caller got, if any.
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_its_own_bit() {
        let mut seen = 0u16;
        for operation in Operation::ALL {
            assert_eq!(seen & operation.bit(), 0, "{operation:?}");
            seen |= operation.bit();
        }
        assert_eq!(seen.count_ones() as usize, Operation::ALL.len());
    }
}
