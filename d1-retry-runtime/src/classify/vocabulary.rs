//! The D1 messages d1-retry recognizes, and how the start of a message, or D1's part of a
//! message behind the user's own text, is matched against them.
//!
//! Matching is byte for byte and case-sensitive: D1 writes these messages from fixed strings,
//! so a differently cased or reworded text is not one of them, and "not recognized" means
//! permanent. Matching anchors at a start (of the message, or of D1's part, found by its
//! `D1_` code) rather than searching for phrases anywhere, because D1 and SQLite echo the
//! user's SQL and values: a phrase found further on may be quoted text.

use crate::FailureClass;

/// Wrappers that put a D1 message inside another message without changing it: `Error: ` is a
/// JavaScript error's name as `worker` prints it, `D1_ERROR: ` is how D1 labels the detail.
/// They may be stacked (`Error: D1_ERROR: ...`). `D1_EXEC_ERROR: ` is deliberately absent: what
/// follows it is echoed SQL, not a D1 message.
const PREFIXES: [&[u8]; 2] = [b"Error: ", b"D1_ERROR: "];

/// Every documented D1 message, without its final period, and what it says about the statement.
///
/// No phrase is a phrase of another followed by a boundary (a unit test checks it), so the
/// order of this list cannot change a verdict.
pub(crate) const PHRASES: [(&str, FailureClass); 14] = [
    (
        "Cannot resolve D1 DB due to transient issue on remote node",
        FailureClass::NotExecuted,
    ),
    (
        "Internal error while starting up D1 DB storage caused object to be reset",
        FailureClass::NotExecuted,
    ),
    (
        "D1 DB is overloaded. Too many requests queued",
        FailureClass::NotExecuted,
    ),
    ("Network connection lost", FailureClass::MaybeExecuted),
    (
        "Internal error in D1 DB storage caused object to be reset",
        FailureClass::MaybeExecuted,
    ),
    (
        "D1 DB reset because its code was updated",
        FailureClass::MaybeExecuted,
    ),
    (
        "Can't read from request stream because client disconnected",
        FailureClass::MaybeExecuted,
    ),
    (
        "D1 DB is overloaded. Requests queued for too long",
        FailureClass::MaybeExecuted,
    ),
    // The 2026-10-16 incident. A bare "internal error" is far too common a phrase to trust;
    // the reference is what marks it as D1's (workerd's) own.
    ("internal error; reference =", FailureClass::MaybeExecuted),
    (
        "Replica disconnected from primary",
        FailureClass::MaybeExecuted,
    ),
    // Lookalikes: they read like the resets above but the query itself caused them, so a
    // retry fails the same way. Listed so that they *decide* (and stop the chain walk)
    // instead of merely not matching.
    (
        "D1 DB storage operation exceeded timeout which caused object to be reset",
        FailureClass::Permanent,
    ),
    (
        "D1 DB's isolate exceeded its memory limit and was reset",
        FailureClass::Permanent,
    ),
    (
        "D1 DB exceeded its CPU time limit and was reset",
        FailureClass::Permanent,
    ),
    // Not D1's words but d1-retry's own (`TimedOut`): a call abandoned by a time limit may
    // still run in D1. Recognised so that the error reads right after a conversion into
    // `worker::Error`, a `String` or the testing kit's error.
    (
        crate::schedule::timeout::TIMED_OUT,
        FailureClass::MaybeExecuted,
    ),
];

/// D1 error codes that start a message about the query itself (echoed SQL, a type, a column):
/// permanent whatever follows, so phrases quoted after them never count.
const PERMANENT_CODES: [&[u8]; 3] = [b"D1_EXEC_ERROR", b"D1_TYPE_ERROR", b"D1_COLUMN_NOTFOUND"];

/// The start of a SQLite result code (`SQLITE_CONSTRAINT`, `SQLITE_ERROR`, ...). D1 appends one
/// to every error SQLite raised, so anywhere in a message it means the query reached SQLite
/// and SQLite refused it.
pub(super) const SQLITE_CODE: &str = "SQLITE_";

/// How many leading bytes of a message decide its start: room for the longest stack of
/// prefixes it is sure to see through, `Error: D1_ERROR: Error: D1_ERROR: ` (a JavaScript
/// error rethrown around another one, 34 bytes), the longest phrase (72), and the byte
/// after it that shows where the phrase ends. Shorter phrases leave room for more prefixes.
/// A unit test keeps this in step with [`PHRASES`].
pub(super) const HEAD_LEN: usize = 107;

/// The class a message's start decides, if any.
///
/// `head` is the message or its first [`HEAD_LEN`] bytes; `complete` says whether it is the
/// whole message, because a phrase that fills the head exactly may go on beyond it.
pub(super) fn start_class(head: &[u8], complete: bool) -> Option<FailureClass> {
    let message = strip_prefixes(head);
    let first = message.first();
    for &(phrase, class) in &PHRASES {
        // The first byte rules out most phrases without a call to `memcmp`.
        if phrase.as_bytes().first() == first
            && let Some(after) = message.strip_prefix(phrase.as_bytes())
            && ends_phrase(after, complete)
        {
            return Some(class);
        }
    }
    if PERMANENT_CODES.iter().any(|code| message.starts_with(code)) {
        return Some(FailureClass::Permanent);
    }
    None
}

/// Where a D1 code starts (`D1_ERROR`, `D1_EXEC_ERROR`, ...). The first occurrence on a
/// message's first line is where D1's part of a message begins when an error type of the
/// user's own puts its own text in front of it (`Database error: D1_ERROR: ...`).
pub(super) const D1_CODE: &str = "D1_";

/// The byte that must come right before a D1 part behind the user's own text for the part to
/// count: the space of `Database error: D1_ERROR: ...` or `repo failed - D1_ERROR: ...`.
/// Quotes, brackets or letters glued to the code are more likely quoting than wrapping.
pub(super) const D1_PART_SEPARATOR: u8 = b' ';

/// The class the D1 part of a message decides, if any, judged exactly like the start of a
/// message ([`start_class`]).
///
/// `before` is the byte in front of the part (`None` at the start of the message): only a
/// part behind a space counts. `part` starts at the message's first [`D1_CODE`] (on its first
/// line) and holds at most [`HEAD_LEN`] bytes; `complete` says whether it reaches the end of
/// the message.
///
/// The caller still owes a check the start of a message does not need: a message with a
/// SQLite result code anywhere is [`Permanent`](FailureClass::Permanent), whatever its D1 part
/// says. Behind text of the user's own, a phrase is less sure to be D1's own message.
pub(super) fn d1_part_class(
    before: Option<u8>,
    part: &[u8],
    complete: bool,
) -> Option<FailureClass> {
    if before != Some(D1_PART_SEPARATOR) {
        return None;
    }
    start_class(part, complete)
}

fn strip_prefixes(mut message: &[u8]) -> &[u8] {
    while let Some(rest) = PREFIXES
        .iter()
        .find_map(|prefix| message.strip_prefix(*prefix))
    {
        message = rest;
    }
    message
}

/// Whether a phrase is whole: the message ends with it, or goes on with punctuation or
/// whitespace (`.`, `. (retry later)`, `; reference = ...`, a newline and a stack trace). A
/// letter or digit right after it means a longer, different message.
fn ends_phrase(after: &[u8], complete: bool) -> bool {
    match after.first() {
        None => complete,
        Some(byte) => matches!(
            byte,
            b'.' | b',' | b';' | b':' | b' ' | b'\t' | b'\n' | b'\r'
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONGEST_PREFIXES: &str = "Error: D1_ERROR: Error: D1_ERROR: ";

    #[test]
    fn no_phrase_is_a_whole_phrase_at_the_start_of_another() {
        for (shorter, _) in PHRASES {
            for (longer, _) in PHRASES {
                if shorter == longer {
                    continue;
                }
                if let Some(after) = longer.as_bytes().strip_prefix(shorter.as_bytes()) {
                    assert!(
                        !ends_phrase(after, true),
                        "{shorter:?} would decide {longer:?}: the order of PHRASES would matter"
                    );
                }
            }
        }
    }

    #[test]
    fn the_head_holds_the_longest_prefixes_and_phrase_and_one_more_byte() {
        let longest = PHRASES
            .iter()
            .map(|(phrase, _)| phrase.len())
            .max()
            .unwrap_or(0);
        assert_eq!(HEAD_LEN, LONGEST_PREFIXES.len() + longest + 1);
    }

    #[test]
    fn every_phrase_matches_after_the_longest_prefixes_inside_a_full_head() {
        for &(phrase, class) in &PHRASES {
            let beyond = "x".repeat(HEAD_LEN);
            let message = format!("{LONGEST_PREFIXES}{phrase}.{beyond}");
            let head = message.as_bytes().get(..HEAD_LEN).unwrap_or_default();
            assert_eq!(start_class(head, false), Some(class), "{phrase}");
        }
    }

    #[test]
    fn a_phrase_cut_by_the_end_of_the_head_is_not_whole() {
        let head = b"Network connection lost";
        assert_eq!(start_class(head, false), None);
        assert_eq!(start_class(head, true), Some(FailureClass::MaybeExecuted));
    }

    #[test]
    fn sqlite_code_starts_with_a_byte_it_never_repeats() {
        // The streaming matcher in `head` restarts only on this byte after a mismatch,
        // which is exact only if the first byte occurs nowhere else in the pattern.
        // The same holds for the D1 code and `head`'s D1 part finder.
        for code in [SQLITE_CODE, D1_CODE] {
            let (first, rest) = code.as_bytes().split_first().unwrap_or((&0, &[]));
            assert!(!rest.contains(first), "{code}");
        }
    }
}
