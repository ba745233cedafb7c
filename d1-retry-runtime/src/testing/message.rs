//! D1's failure vocabulary: the messages the kit injects, and the class D1 documents for each.
//!
//! Kept apart from the fault machinery because it is D1's vocabulary, not the kit's: when
//! D1 documents a new message, this file and its test change, and nothing else.

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

    /// The text of this message injected into call number `index`. An internal error gets
    /// a reference id derived from the call number, so that a seeded run prints the same
    /// ids every time.
    pub(crate) fn render(self, index: u64) -> String {
        match self {
            Message::InternalError => {
                // Multiplying by an odd constant is a bijection on u64 that scatters
                // consecutive call numbers, so every call gets its own id, and the ids do
                // not look sequential.
                let mut x = index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let mut id = String::with_capacity(13);
                // 13 base-36 digits hold any u64.
                for _ in 0..13 {
                    let digit = u32::try_from(x % 36).unwrap_or(0);
                    id.push(char::from_digit(digit, 36).unwrap_or('0'));
                    x /= 36;
                }
                format!("{}{id}", self.text())
            }
            other => other.text().to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

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
    fn internal_error_references_are_stable_and_distinct() {
        let a = Message::InternalError.render(1);
        assert_eq!(a, Message::InternalError.render(1));
        assert_ne!(a, Message::InternalError.render(2));
        let id = a.strip_prefix("internal error; reference = ").unwrap();
        assert_eq!(id.len(), 13);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        );
        assert_eq!(Message::CpuLimit.render(1), Message::CpuLimit.text());
    }

    #[test]
    fn internal_error_references_look_random() {
        let ids: HashSet<String> = (0..2000)
            .map(|i| Message::InternalError.render(i))
            .collect();
        assert_eq!(ids.len(), 2000);
        let chars: HashSet<char> = ids
            .iter()
            .flat_map(|id| {
                id.trim_start_matches("internal error; reference = ")
                    .chars()
            })
            .collect();
        assert!(chars.len() >= 30, "{chars:?}");
    }
}
