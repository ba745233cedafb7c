//! Every D1 part of a message, wherever it stands, and whether they all agree.
//!
//! Why: a message may carry D1's words more than once. A stack trace repeats the message on
//! its next line, which is harmless. But an error type of the user's own may also write a
//! client's text next to D1's message (`saving {note}: {e}`, `{note}\ncaused by: {e}`,
//! anyhow's `{:?}`), and a client who names a note `D1_ERROR: D1 DB is overloaded. Too
//! many requests queued.` then puts D1's "not executed" words in a message whose real D1
//! part says the write may have run. Nothing in the text shows which part is D1's own, so
//! a verdict that lets a call be made again stands only when every D1 part says the same.
//!
//! A part starts at each [`D1_CODE`], whatever comes before it and on whatever line, and
//! is read from its first [`HEAD_LEN`] bytes as the start of a message is
//! ([`start_class`]). Parts may overlap (`D1_ERROR: D1_ERROR: ...` is two parts that say
//! the same), so a part is read from its own bytes, never cut at the next.

use super::head::find;
use super::vocabulary::{D1_CODE, HEAD_LEN, start_class};
use crate::FailureClass;

/// The verdicts of the D1 parts read so far, as a set: one bit per class, and one for a
/// part that decides nothing (not a D1 message d1-retry knows).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(super) struct Verdicts(u8);

impl Verdicts {
    fn bit(class: Option<FailureClass>) -> u8 {
        match class {
            None => 1,
            Some(FailureClass::NotExecuted) => 2,
            Some(FailureClass::MaybeExecuted) => 4,
            Some(FailureClass::Permanent) => 8,
        }
    }

    fn add(&mut self, class: Option<FailureClass>) {
        self.0 |= Self::bit(class);
    }

    /// Whether every part read says `class` (also when there is none).
    pub(super) fn all_say(self, class: FailureClass) -> bool {
        self.0 & !Self::bit(Some(class)) == 0
    }

    /// The least retryable of `class` and the parts' verdicts. A part that decides nothing
    /// counts as permanent: it may be D1's own refusal of the query in words d1-retry does
    /// not know (`D1_ERROR: UNIQUE constraint failed`, without its SQLite code).
    pub(super) fn least_retryable_with(self, class: FailureClass) -> FailureClass {
        let permanent = Self::bit(None) | Self::bit(Some(FailureClass::Permanent));
        if self.0 & permanent != 0 || class == FailureClass::Permanent {
            FailureClass::Permanent
        } else if self.0 & Self::bit(Some(FailureClass::MaybeExecuted)) != 0 {
            FailureClass::MaybeExecuted
        } else {
            class
        }
    }
}

/// The verdicts of every D1 part of a message held whole.
pub(super) fn of_message(message: &[u8]) -> Verdicts {
    let mut verdicts = Verdicts::default();
    let mut rest = message;
    while let Some(at) = next_code(rest) {
        let part = rest.get(at..).unwrap_or_default();
        let kept = part.get(..HEAD_LEN).unwrap_or(part);
        verdicts.add(start_class(kept, kept.len() == part.len()));
        rest = part.get(1..).unwrap_or_default();
    }
    verdicts
}

/// Where the next whole [`D1_CODE`] starts in `bytes`: the classifier's one byte search
/// (`head::find`), which compares the code only where its first byte stands, not a
/// three-byte window at every byte.
fn next_code(bytes: &[u8]) -> Option<usize> {
    find(bytes, D1_CODE.as_bytes())
}

/// Matches [`D1_CODE`] in text that arrives one byte at a time, and keeps the byte in front
/// of the occurrence being matched.
#[derive(Clone, Copy, Default)]
pub(super) struct CodeMatcher {
    /// Bytes of the code matched so far.
    matched: usize,
    /// The byte in front of the occurrence being matched (or just matched).
    pub(super) before: Option<u8>,
}

impl CodeMatcher {
    /// Feeds `byte`, which came after `last`; returns whether an occurrence ends with it.
    pub(super) fn matched(&mut self, byte: u8, last: Option<u8>) -> bool {
        let code = D1_CODE.as_bytes();
        if code.get(self.matched) == Some(&byte) {
            if self.matched == 0 {
                self.before = last;
            }
            self.matched += 1;
        } else if code.first() == Some(&byte) {
            // Exact because the code's first byte occurs nowhere else in it.
            self.before = last;
            self.matched = 1;
        } else {
            self.matched = 0;
        }
        let whole = self.matched == code.len();
        if whole {
            self.matched = 0;
        }
        whole
    }
}

/// The verdicts of every D1 part of a text that arrives in pieces, without allocating: the
/// bytes are kept from the start of the oldest part not yet read, up to [`HEAD_LEN`] of
/// them; once it is read, the next part is looked for in the bytes kept.
#[derive(Clone, Copy)]
pub(super) struct PartScan {
    code: CodeMatcher,
    last: Option<u8>,
    /// From the start of the oldest part not yet read; `len == 0`: none is pending.
    kept: [u8; HEAD_LEN],
    len: usize,
    read: Verdicts,
}

impl PartScan {
    pub(super) fn new() -> Self {
        PartScan {
            code: CodeMatcher::default(),
            last: None,
            kept: [0; HEAD_LEN],
            len: 0,
            read: Verdicts::default(),
        }
    }

    /// Feeds the next bytes of the text, in order.
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            // A code that ends here while a part is pending lies in the kept bytes, where
            // it is found once the parts before it are read.
            let code_ends = self.code.matched(byte, self.last);
            self.last = Some(byte);
            if self.len == HEAD_LEN {
                // The oldest part has its bytes and goes on past them. Judged only now, as
                // a byte comes after them: a part that fills them and ends the text is
                // whole (`verdicts` reads it), as `of_message` reads it.
                self.read.add(start_class(&self.kept, false));
                self.next_part();
            }
            if self.len > 0 {
                self.keep(byte);
            } else if code_ends {
                self.start_part();
            }
        }
    }

    fn start_part(&mut self) {
        let code = D1_CODE.as_bytes();
        if let Some(into) = self.kept.get_mut(..code.len()) {
            self.len = super::copy_prefix(into, code);
        }
    }

    fn keep(&mut self, byte: u8) {
        if let Some(slot) = self.kept.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
    }

    /// The oldest part has been read: the kept bytes now start at the next part in them,
    /// or there is none pending (a code cut by their end is matched as the text goes on).
    fn next_part(&mut self) {
        let after = self.kept.get(1..self.len).unwrap_or_default();
        let Some(at) = next_code(after) else {
            self.len = 0;
            return;
        };
        // Moved down byte by byte rather than by `copy_within`, whose bounds check would
        // bring a panic path into a Worker.
        let from = 1 + at;
        for to in 0..self.len - from {
            let byte = self.kept.get(to + from).copied().unwrap_or_default();
            if let Some(slot) = self.kept.get_mut(to) {
                *slot = byte;
            }
        }
        self.len -= from;
    }

    /// The verdicts of every part, once the whole text has been fed: the parts still
    /// pending reach the end of the text.
    pub(super) fn verdicts(&self) -> Verdicts {
        let pending = self.kept.get(..self.len).unwrap_or_default();
        let mut verdicts = self.read;
        if !pending.is_empty() {
            let rest = of_message(pending);
            verdicts.0 |= rest.0;
        }
        verdicts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(text: &str, piece: usize) -> Verdicts {
        let mut scan = PartScan::new();
        for chunk in text.as_bytes().chunks(piece) {
            scan.feed(chunk);
        }
        scan.verdicts()
    }

    fn set(classes: &[Option<FailureClass>]) -> Verdicts {
        let mut verdicts = Verdicts::default();
        for &class in classes {
            verdicts.add(class);
        }
        verdicts
    }

    const LOST: Option<FailureClass> = Some(FailureClass::MaybeExecuted);
    const QUEUED: Option<FailureClass> = Some(FailureClass::NotExecuted);

    #[test]
    fn every_part_is_read_whatever_comes_before_it_and_on_any_line() {
        let pad = "x".repeat(HEAD_LEN);
        let cases: [(String, Verdicts); 10] = [
            ("no part here".into(), set(&[])),
            ("D1_ERROR: Network connection lost.".into(), set(&[LOST])),
            (
                "D1_ERROR: D1_ERROR: Network connection lost.".into(),
                set(&[LOST]),
            ),
            (
                "n 'D1_ERROR: D1 DB is overloaded. Too many requests queued.' \
                 (D1_ERROR: Network connection lost.)"
                    .into(),
                set(&[QUEUED, LOST]),
            ),
            (
                "D1_ERROR: D1 DB is overloaded. Too many requests queued.\n\
                 caused by:D1_ERROR: Network connection lost."
                    .into(),
                set(&[QUEUED, LOST]),
            ),
            ("a D1_ERROR: odd".into(), set(&[None])),
            // A part longer than the kept bytes, then another far behind it.
            (
                format!(
                    "D1_ERROR: Network connection lost. {pad} D1_ERROR: D1 DB is \
                     overloaded. Too many requests queued."
                ),
                set(&[LOST, QUEUED]),
            ),
            // A second part inside the kept bytes of a first that goes on past them: the
            // bytes are moved down to it once the first is read.
            (
                format!(
                    "D1_ERROR: Network connection lost. D1_ERROR: D1 DB is overloaded. Too \
                     many requests queued. {pad}"
                ),
                set(&[LOST, QUEUED]),
            ),
            // A phrase that fills a part's kept bytes exactly goes on past them.
            // (7 codes and 2 names: 84 bytes, and the phrase's 23.)
            (
                format!(
                    "{}Error: Error: Network connection lost.",
                    "D1_ERROR: ".repeat(7)
                ),
                set(&[None, LOST]),
            ),
            // A code cut by the end of the kept bytes of the part before it.
            (
                format!(
                    "D1_ERROR: {}D1_ERROR: Network connection lost.",
                    "y".repeat(HEAD_LEN - 12)
                ),
                set(&[None, LOST]),
            ),
        ];
        for (text, expected) in &cases {
            assert_eq!(of_message(text.as_bytes()), *expected, "{text:?}");
            for piece in [1, 2, 3, 7, 64, text.len().max(1)] {
                assert_eq!(streamed(text, piece), *expected, "{text:?} in {piece}s");
            }
        }
    }

    /// A part exactly as long as the bytes kept of it: whole if the text ends there, as a
    /// message held whole reads it, and cut if anything comes after, even the period that
    /// would end the phrase (the kept bytes leave no room to see it; the parts behind it,
    /// shorter, see theirs).
    #[test]
    fn a_part_that_fills_its_kept_bytes_is_whole_only_at_the_text_s_end() {
        let part = format!(
            "{}Internal error in D1 DB storage caused object to be reset",
            "D1_ERROR: ".repeat(5)
        );
        assert_eq!(part.len(), HEAD_LEN);
        for (text, expected) in [
            (format!("ctx {part}"), set(&[LOST])),
            (format!("ctx {part}."), set(&[None, LOST])),
            (format!("ctx {part}X"), set(&[None])),
        ] {
            assert_eq!(of_message(text.as_bytes()), expected, "{text}");
            for piece in [1, 3, text.len()] {
                assert_eq!(streamed(&text, piece), expected, "{text}, piece {piece}");
            }
        }
    }

    #[test]
    fn all_say_holds_only_for_one_class() {
        assert!(set(&[]).all_say(FailureClass::NotExecuted));
        assert!(set(&[LOST]).all_say(FailureClass::MaybeExecuted));
        assert!(!set(&[LOST]).all_say(FailureClass::NotExecuted));
        assert!(!set(&[LOST, QUEUED]).all_say(FailureClass::MaybeExecuted));
        assert!(!set(&[None, QUEUED]).all_say(FailureClass::NotExecuted));
        assert!(!set(&[Some(FailureClass::Permanent)]).all_say(FailureClass::NotExecuted));
    }
}
