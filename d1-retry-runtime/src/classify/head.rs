//! Reading what one error says without allocating: its `Display` is streamed into a
//! fixed buffer that keeps only the head of the message; past the head, a scan watches the
//! rest of the stream for a SQLite result code and for D1's part of a message the user's own
//! error type wrote text in front of.
//!
//! Why streaming: formatting an error into a `String` would allocate on every failure, and a
//! message can be kilobytes of echoed SQL and stack trace; the verdict depends only on its
//! first bytes, its first line and whether `SQLITE_` occurs, so a few hundred bytes of state
//! on the stack are enough, and a recognized start stops the formatting early.

use core::fmt;

use super::parts::{self, CodeMatcher, PartScan, Verdicts};
use super::vocabulary::{
    D1_CODE, D1_PART_SEPARATOR, HEAD_LEN, SQLITE_CODE, d1_part_class, start_class,
};
use crate::FailureClass;

/// The class one message decides, if it decides one, in this order:
///
/// 1. a SQLite result code anywhere: [`Permanent`](FailureClass::Permanent), whatever the
///    message starts with: SQLite ran the statement and refused it, and the rest of the
///    text may be the user's data (a trigger's `RAISE(FAIL, NEW.name || ..)` whose name
///    reads like a D1 phrase, after the rows before it were written);
/// 2. else a recognized start (transient phrase, lookalike, permanent D1 code), see
///    [`start_class`];
/// 3. else D1's part of the message behind the user's own text, see [`d1_part_class`];
/// 4. else nothing.
///
/// A verdict of 2 or 3 that lets a call be made again stands only if every D1 part of the
/// message, on any line, says the same ([`parts`]): else the message decides nothing.
///
/// A `Display` that fails by itself decides nothing: its text may be cut anywhere, and a cut
/// text is not a D1 message.
pub(super) fn text_class(text: &dyn fmt::Display) -> Option<FailureClass> {
    let mut reader = HeadReader::new();
    let written = fmt::write(&mut reader, format_args!("{text}"));
    if written.is_err() && !reader.stopped {
        return None;
    }
    reader.class()
}

/// The class of a message held as a `&str`, as [`text_class`] would judge it once it is
/// turned into a [`FailureClass`] (nothing decided is permanent).
///
/// Faster than streaming the same text: the whole message is at hand, so the D1 part and the
/// SQLite code are found with `str` searches, and only when the verdict depends on them.
pub(super) fn message_class(message: &str) -> FailureClass {
    let bytes = message.as_bytes();
    let head = bytes.get(..HEAD_LEN).unwrap_or(bytes);
    let base = start_class(head, head.len() == bytes.len()).or_else(|| first_line_part(bytes));
    if base == Some(FailureClass::Permanent) {
        return FailureClass::Permanent;
    }
    // The SQLite code and the other parts are looked for only when the verdict is not
    // already permanent.
    let sqlite_code = base.is_some() && find(bytes, SQLITE_CODE.as_bytes()).is_some();
    let parts = match base {
        Some(_) if !sqlite_code => parts::of_message(bytes),
        _ => Verdicts::default(),
    };
    verdict(base, sqlite_code, parts).unwrap_or(FailureClass::Permanent)
}

/// The class of D1's part of a message held whole, from its first `D1_` if that is on the
/// first line ([`d1_part_class`]).
fn first_line_part(bytes: &[u8]) -> Option<FailureClass> {
    // Found first, then the bytes before it checked for a line break, so the rest of a long
    // message is not read.
    let at = find(bytes, D1_CODE.as_bytes())?;
    if bytes
        .get(..at)
        .unwrap_or_default()
        .iter()
        .any(|&byte| byte == b'\n' || byte == b'\r')
    {
        return None;
    }
    let before = at
        .checked_sub(1)
        .and_then(|before| bytes.get(before))
        .copied();
    let part = bytes.get(at..).unwrap_or_default();
    let kept = part.get(..HEAD_LEN).unwrap_or(part);
    d1_part_class(before, kept, kept.len() == part.len())
}

/// The verdict of a message from what was read of it: `base`, the class its start or its
/// first line's D1 part decides; whether a SQLite code came anywhere; the verdicts of all
/// its D1 parts.
fn verdict(base: Option<FailureClass>, sqlite_code: bool, parts: Verdicts) -> Option<FailureClass> {
    match base {
        // SQLite ran the statement and refused it, whatever the text around says.
        _ if sqlite_code => Some(FailureClass::Permanent),
        Some(FailureClass::Permanent) => Some(FailureClass::Permanent),
        Some(class) if parts.all_say(class) => Some(class),
        // Parts that disagree: which one is D1's own is not known, so the message allows no
        // more than its least retryable part, and still decides, so that a link below it
        // (D1's error, which the message may show beside a client's text) cannot allow
        // more either.
        Some(class) => Some(parts.least_retryable_with(class)),
        // Nothing recognized.
        None => None,
    }
}

/// Where `needle` first occurs in `haystack`: a byte loop, because messages are short and
/// `str::find` sets up a two-way searcher that costs more than the search (about 150 ns on
/// a permanent SQLite error) and brings its code into a Worker's wasm.
pub(super) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    haystack
        .iter()
        .enumerate()
        .filter(|&(_, &byte)| byte == first)
        .map(|(at, _)| at)
        .find(|&at| {
            haystack
                .get(at + 1..at + needle.len())
                .is_some_and(|tail| tail == rest)
        })
}

/// A `fmt::Write` that keeps the first [`HEAD_LEN`] bytes, and stops the writer (by
/// returning `fmt::Error`) as soon as the rest of the text cannot change the verdict.
struct HeadReader {
    head: [u8; HEAD_LEN],
    len: usize,
    /// The verdict of the start, judged once the text outgrows the head. While the text fits
    /// the head, nothing is judged and nothing is scanned: most texts are short, and a
    /// recognized start makes the scan pointless.
    start: Option<Option<FailureClass>>,
    /// Fed from the moment the text outgrows the head with an undecided start.
    rest: RestScan,
    /// This reader asked the writer to stop; any error the writer returns after that is ours.
    stopped: bool,
}

impl HeadReader {
    fn new() -> Self {
        HeadReader {
            head: [0; HEAD_LEN],
            len: 0,
            start: None,
            rest: RestScan::new(),
            stopped: false,
        }
    }

    fn head(&self) -> &[u8] {
        self.head.get(..self.len).unwrap_or_default()
    }

    /// The whole verdict, once the writer has finished or been stopped.
    fn class(&self) -> Option<FailureClass> {
        match self.start {
            // The rest was not read: a permanent start is final.
            Some(Some(FailureClass::Permanent)) => Some(FailureClass::Permanent),
            Some(start) => self.rest.class(start),
            // The whole text fits the head: judged at once.
            None => {
                let mut rest = RestScan::new();
                rest.feed(self.head());
                rest.class(start_class(self.head(), true))
            }
        }
    }
}

impl fmt::Write for HeadReader {
    fn write_char(&mut self, c: char) -> fmt::Result {
        super::write_char(self, c)
    }

    fn write_str(&mut self, text: &str) -> fmt::Result {
        if self.stopped {
            return Err(fmt::Error);
        }
        let bytes = text.as_bytes();
        let taken = super::copy_prefix(self.head.get_mut(self.len..).unwrap_or_default(), bytes);
        self.len += taken;
        if taken == bytes.len() {
            return Ok(());
        }
        let start = match self.start {
            Some(start) => start,
            None => {
                let start = start_class(self.head(), false);
                self.start = Some(start);
                if start != Some(FailureClass::Permanent) {
                    // The head was never scanned; the scan starts there. A transient start
                    // is still overruled by a SQLite code anywhere, so it is scanned too.
                    let head = self.head.get(..self.len).unwrap_or_default();
                    self.rest.feed(head);
                }
                start
            }
        };
        // Only a permanent verdict is final before the end of the text.
        if start == Some(FailureClass::Permanent)
            || self.rest.feed(bytes.get(taken..).unwrap_or_default())
        {
            self.stopped = true;
            return Err(fmt::Error);
        }
        Ok(())
    }
}

/// What the whole of a message whose start is not permanent says, read as it streams by:
/// whether it holds a SQLite result code, its D1 part (from the first [`D1_CODE`] on its
/// first line), and what all its D1 parts say. Fed with every byte of the message, in
/// order, in pieces of any size.
struct RestScan {
    sqlite_code: SqliteCodeMatcher,
    d1_part: D1PartFinder,
    parts: PartScan,
}

impl RestScan {
    fn new() -> Self {
        RestScan {
            sqlite_code: SqliteCodeMatcher::default(),
            d1_part: D1PartFinder::new(),
            parts: PartScan::new(),
        }
    }

    /// Feeds the next bytes; returns whether the verdict is known for sure (a SQLite code was
    /// seen), so that the rest of the text need not be read.
    fn feed(&mut self, bytes: &[u8]) -> bool {
        if self.sqlite_code.found() {
            return true;
        }
        self.d1_part.feed(bytes);
        self.parts.feed(bytes);
        self.sqlite_code.feed(bytes)
    }

    /// The verdict once the whole text has been fed, or the scan has said it is known;
    /// `start` is what the message's start decided.
    fn class(&self, start: Option<FailureClass>) -> Option<FailureClass> {
        let base = start.or_else(|| self.d1_part.class());
        let sqlite_code = self.sqlite_code.found();
        let parts = match base {
            Some(_) if !sqlite_code => self.parts.verdicts(),
            _ => Verdicts::default(),
        };
        verdict(base, sqlite_code, parts)
    }
}

/// Finds [`SQLITE_CODE`] in text that arrives in pieces.
#[derive(Default)]
struct SqliteCodeMatcher {
    /// How many bytes of the code the bytes fed so far end with.
    matched: usize,
}

impl SqliteCodeMatcher {
    fn found(&self) -> bool {
        self.matched == SQLITE_CODE.len()
    }

    /// Feeds the next bytes of the text; returns whether the code has been seen.
    fn feed(&mut self, bytes: &[u8]) -> bool {
        for &byte in bytes {
            if self.found() {
                break;
            }
            self.matched = if SQLITE_CODE.as_bytes().get(self.matched) == Some(&byte) {
                self.matched + 1
            } else {
                // Exact because the code's first byte occurs nowhere else in it.
                usize::from(SQLITE_CODE.as_bytes().first() == Some(&byte))
            };
        }
        self.found()
    }
}

/// Finds the first [`D1_CODE`] on the first line of text that arrives in pieces, and keeps
/// the [`HEAD_LEN`] bytes that start there: D1's part of a message the user's own error type
/// wrote text in front of.
struct D1PartFinder {
    state: PartState,
    /// The last byte seen.
    last: Option<u8>,
    /// Matches the first code.
    code: CodeMatcher,
    /// The byte in front of the first code.
    before: Option<u8>,
    part: [u8; HEAD_LEN],
    len: usize,
    /// Bytes came after the part was full: it does not reach the end of the message.
    cut: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PartState {
    /// Looking for the first [`D1_CODE`].
    Searching,
    /// Found behind a space: keeping its bytes.
    Keeping,
    /// The first line ended first, or the code was found behind another byte than a space:
    /// there is no D1 part that counts, and the rest of the text is ignored.
    Absent,
}

impl D1PartFinder {
    fn new() -> Self {
        D1PartFinder {
            state: PartState::Searching,
            last: None,
            code: CodeMatcher::default(),
            before: None,
            part: [0; HEAD_LEN],
            len: 0,
            cut: false,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while self.state == PartState::Searching {
            let Some((&byte, tail)) = rest.split_first() else {
                return;
            };
            rest = tail;
            if byte == b'\n' || byte == b'\r' {
                self.state = PartState::Absent;
            } else if self.code.matched(byte, self.last) {
                self.before = self.code.before;
                self.state = self.found();
            }
            self.last = Some(byte);
        }
        if self.state == PartState::Keeping {
            self.keep(rest);
        }
    }

    /// The code was just matched: keep it if it counts.
    fn found(&mut self) -> PartState {
        if self.before != Some(D1_PART_SEPARATOR) {
            return PartState::Absent;
        }
        self.keep(D1_CODE.as_bytes());
        PartState::Keeping
    }

    fn keep(&mut self, bytes: &[u8]) {
        let taken = super::copy_prefix(self.part.get_mut(self.len..).unwrap_or_default(), bytes);
        self.len += taken;
        if taken < bytes.len() {
            self.cut = true;
        }
    }

    fn class(&self) -> Option<FailureClass> {
        if self.state != PartState::Keeping {
            return None;
        }
        let part = self.part.get(..self.len).unwrap_or_default();
        d1_part_class(self.before, part, !self.cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    #[test]
    fn find_agrees_with_str_find() {
        let haystacks = [
            "",
            "D",
            "D1",
            "D1_",
            "xD1_",
            "DD1_x D1_",
            "a\nD1_",
            "SQLITE",
            "x SQLITE_",
            "SQLSQLITE_",
        ];
        for haystack in haystacks {
            for needle in ["D1_", "SQLITE_", "x"] {
                assert_eq!(
                    find(haystack.as_bytes(), needle.as_bytes()),
                    haystack.find(needle),
                    "{needle:?} in {haystack:?}"
                );
            }
        }
        assert_eq!(
            find(b"abc", b""),
            None,
            "an empty needle is never looked for"
        );
    }

    #[test]
    fn keeps_only_the_head_and_stops_once_the_verdict_is_final() {
        // A transient start is final only at the end of the text: a SQLite code may follow.
        let mut reader = HeadReader::new();
        assert!(reader.write_str("Network connection lost.").is_ok());
        let long = "x".repeat(HEAD_LEN);
        assert!(
            reader.write_str(&long).is_ok(),
            "a transient start reads on"
        );
        assert_eq!(reader.head().len(), HEAD_LEN);
        assert_eq!(reader.class(), Some(FailureClass::MaybeExecuted));
        assert!(
            reader.write_str(": SQLITE_CONSTRAINT").is_err(),
            "code seen; stop"
        );
        assert!(reader.stopped);
        assert!(reader.write_str("more").is_err(), "stays stopped");
        assert_eq!(reader.class(), Some(FailureClass::Permanent));
        // A permanent start stops at once.
        let mut reader = HeadReader::new();
        assert!(reader.write_str("D1_EXEC_ERROR: Error in line 1").is_ok());
        assert!(reader.write_str(&long).is_err(), "the start decided; stop");
        assert!(reader.stopped);
        assert_eq!(reader.class(), Some(FailureClass::Permanent));
    }

    /// A trigger's `RAISE(FAIL, NEW.name || ': too long')` puts the user's data in SQLite's
    /// message, after the rows before it were written: a name that reads like a D1 phrase
    /// must not make the failure look like one D1 sent before running the statement.
    #[test]
    fn a_sqlite_code_overrules_a_transient_start() {
        let raised = "D1_ERROR: D1 DB is overloaded. Too many requests queued. (my tag): \
                      too long: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_TRIGGER)";
        let padded = format!(
            "D1_ERROR: Network connection lost. {}: too long: SQLITE_CONSTRAINT",
            "x".repeat(2 * HEAD_LEN)
        );
        let in_the_head = "Network connection lost.: SQLITE_IOERR";
        for text in [raised, padded.as_str(), in_the_head] {
            assert_eq!(message_class(text), FailureClass::Permanent, "{text}");
            assert_eq!(text_class(&text), Some(FailureClass::Permanent), "{text}");
        }
        for text in [
            "D1_ERROR: D1 DB is overloaded. Too many requests queued.",
            "D1_ERROR: Network connection lost.",
        ] {
            assert_ne!(message_class(text), FailureClass::Permanent, "{text}");
            assert_ne!(text_class(&text), Some(FailureClass::Permanent), "{text}");
        }
    }

    #[test]
    fn an_undecided_start_keeps_reading_for_a_sqlite_code() {
        let mut reader = HeadReader::new();
        let long = "y".repeat(HEAD_LEN + 1);
        assert!(reader.write_str(&long).is_ok(), "nothing known yet");
        assert_eq!(reader.start, Some(None));
        assert!(reader.write_str("...: SQLI").is_ok());
        assert!(
            reader.write_str("TE_CONSTRAINT").is_err(),
            "code seen; stop"
        );
        assert_eq!(reader.class(), Some(FailureClass::Permanent));
    }

    #[test]
    fn a_code_straddling_the_end_of_the_head_is_seen() {
        for split in 0..=SQLITE_CODE.len() {
            let mut reader = HeadReader::new();
            let text = format!("{}SQLITE_ERROR and more", "z".repeat(HEAD_LEN - split));
            assert!(reader.write_str(&text).is_err(), "split {split}");
            assert_eq!(
                reader.class(),
                Some(FailureClass::Permanent),
                "split {split}"
            );
        }
    }

    #[test]
    fn a_short_text_is_judged_whole_at_the_end() {
        let mut reader = HeadReader::new();
        assert!(reader.write_str("Network connection lost").is_ok());
        assert_eq!(reader.start, None);
        assert_eq!(reader.class(), Some(FailureClass::MaybeExecuted));
        let mut reader = HeadReader::new();
        assert!(reader.write_str("no such table: t: SQLITE_ERROR").is_ok());
        assert_eq!(reader.class(), Some(FailureClass::Permanent));
    }

    /// `text` written into a reader `piece` bytes at a time, as `text_class` reads it.
    fn streamed(text: &str, piece: usize) -> Option<FailureClass> {
        let mut reader = HeadReader::new();
        for chunk in text.as_bytes().chunks(piece) {
            let chunk = core::str::from_utf8(chunk).unwrap_or_default();
            if reader.write_str(chunk).is_err() {
                break;
            }
        }
        reader.class()
    }

    #[test]
    fn a_d1_part_is_read_wherever_it_falls_against_the_head() {
        let longest = "Internal error while starting up D1 DB storage caused object to be reset";
        for pad in 0..HEAD_LEN + 40 {
            let prefixed = format!("{}: D1_ERROR: {longest}. more", "a".repeat(pad));
            for piece in [1, 2, 7, 64, prefixed.len()] {
                assert_eq!(
                    streamed(&prefixed, piece),
                    Some(FailureClass::NotExecuted),
                    "pad {pad}, piece {piece}"
                );
            }
            assert_eq!(message_class(&prefixed), FailureClass::NotExecuted, "{pad}");
            // The same part cut one byte short of the phrase's end is not recognized.
            let cut = format!("{}: D1_ERROR: {longest}X", "a".repeat(pad));
            assert_eq!(streamed(&cut, 3), None, "pad {pad}");
            assert_eq!(message_class(&cut), FailureClass::Permanent, "{pad}");
        }
    }

    #[test]
    fn the_d1_part_keeps_head_len_bytes_and_knows_when_it_was_cut() {
        let stacked = format!("ctx {}Network connection lost", "D1_ERROR: ".repeat(7));
        let part = stacked.len() - "ctx ".len();
        assert!(part < HEAD_LEN);
        assert_eq!(streamed(&stacked, 5), Some(FailureClass::MaybeExecuted));
        // A phrase followed by a letter within the kept bytes is another message.
        let filled = format!(
            "ctx {}Network connection lost{}",
            "D1_ERROR: ".repeat(7),
            "x".repeat(HEAD_LEN - part)
        );
        assert_eq!(streamed(&filled, 5), None);
        assert_eq!(message_class(&filled), FailureClass::Permanent);
        // A phrase that ends exactly where the kept bytes end is whole only if the message
        // ends there too: the part knows it was cut when more came after it.
        let exact = format!(
            "{}Internal error in D1 DB storage caused object to be reset",
            "D1_ERROR: ".repeat(5)
        );
        assert_eq!(exact.len(), HEAD_LEN);
        let ends = format!("ctx {exact}");
        assert_eq!(streamed(&ends, 5), Some(FailureClass::MaybeExecuted));
        assert_eq!(message_class(&ends), FailureClass::MaybeExecuted);
        let goes_on = format!("ctx {exact}X");
        for piece in [1, 5, goes_on.len()] {
            assert_eq!(streamed(&goes_on, piece), None, "piece {piece}");
        }
        assert_eq!(message_class(&goes_on), FailureClass::Permanent);
    }

    #[test]
    fn the_first_d1_code_on_the_first_line_decides_with_every_other_part() {
        for (text, expected) in [
            (
                "ctx D1_ERROR: Network connection lost.",
                Some(FailureClass::MaybeExecuted),
            ),
            (
                "ctx D1_EXEC_ERROR: x D1_ERROR: Network connection lost.",
                Some(FailureClass::Permanent),
            ),
            ("ctx D1_FOO D1_ERROR: Network connection lost.", None),
            // A client's text quoting D1's words in front of D1's own message.
            (
                "saving note hi D1_ERROR: D1 DB is overloaded. Too many requests queued.: \
                 D1_ERROR: Network connection lost.",
                Some(FailureClass::MaybeExecuted),
            ),
            // Two parts that say the same (a stack trace repeats the message).
            (
                "ctx D1_ERROR: Network connection lost. D1_ERROR: Network connection lost.",
                Some(FailureClass::MaybeExecuted),
            ),
            (
                "ctx D1_ERROR: Network connection lost.\nError: D1_ERROR: Network connection \
                 lost.\n    at D1Database._send (d1:1:2)",
                Some(FailureClass::MaybeExecuted),
            ),
            // Further parts that do not, behind any byte and on any line: the least
            // retryable decides, a part that says nothing known counting as permanent.
            (
                "ctx D1_ERROR: Network connection lost. (D1_ERROR: x)",
                Some(FailureClass::Permanent),
            ),
            (
                "ctx D1_ERROR: Network connection lost.\n D1_ERROR: x",
                Some(FailureClass::Permanent),
            ),
            (
                "ctx D1_ERROR: D1 DB is overloaded. Too many requests queued.:D1_ERROR: \
                 Network connection lost.",
                Some(FailureClass::MaybeExecuted),
            ),
            (
                "D1 DB is overloaded. Too many requests queued.: D1_ERROR: Network \
                 connection lost.",
                Some(FailureClass::MaybeExecuted),
            ),
            (
                "D1_ERROR: D1 DB is overloaded. Too many requests queued.\ncaused by: \
                 D1_ERROR: Network connection lost.",
                Some(FailureClass::MaybeExecuted),
            ),
            ("ctx D1_ERROR: odd D1_ERROR: Network connection lost.", None),
            ("ctx:D1_ERROR: Network connection lost.", None),
            ("ctx 'D1_ERROR: Network connection lost.'", None),
            ("ctx\n D1_ERROR: Network connection lost.", None),
            ("ctx\r D1_ERROR: Network connection lost.", None),
            ("ctx DD1_ERROR: Network connection lost.", None),
            (
                "ctx D D1_ERROR: Network connection lost.",
                Some(FailureClass::MaybeExecuted),
            ),
            (
                "ctx D1_ERROR: Network connection lost.\nSQLITE_ERROR",
                Some(FailureClass::Permanent),
            ),
        ] {
            for piece in [1, 2, 3, text.len()] {
                assert_eq!(
                    streamed(text, piece),
                    expected,
                    "{text:?} in {piece}-byte pieces"
                );
            }
            let class = expected.unwrap_or(FailureClass::Permanent);
            assert_eq!(message_class(text), class, "{text:?}");
        }
    }

    /// A second D1 part past the kept bytes of the first is seen as the text streams by,
    /// on the first line and on a later one.
    #[test]
    fn a_second_d1_part_past_the_kept_bytes_is_seen() {
        let first = "note D1_ERROR: D1 DB is overloaded. Too many requests queued. ";
        let far = format!(
            "{first}{} D1_ERROR: Network connection lost.",
            "x".repeat(HEAD_LEN)
        );
        let next_line = format!(
            "{first}{}\n D1_ERROR: Network connection lost.",
            "x".repeat(HEAD_LEN)
        );
        // The first part alone says "not executed"; the second may have run it.
        for piece in [1, 2, 7, far.len()] {
            let maybe = Some(FailureClass::MaybeExecuted);
            assert_eq!(streamed(&far, piece), maybe, "{piece}-byte pieces");
            assert_eq!(streamed(&next_line, piece), maybe, "{piece}-byte pieces");
        }
        assert_eq!(message_class(&far), FailureClass::MaybeExecuted);
        assert_eq!(message_class(&next_line), FailureClass::MaybeExecuted);
    }

    /// A phrase that ends exactly at the end of the head is whole when the message ends
    /// there, and not when the message goes on past the head with a letter.
    #[test]
    fn a_phrase_ending_with_the_head_is_whole_only_at_the_message_s_end() {
        let longest = "Internal error while starting up D1 DB storage caused object to be reset";
        let exact = format!("{}{longest}", "Error: ".repeat(5));
        assert_eq!(exact.len(), HEAD_LEN);
        assert_eq!(message_class(&exact), FailureClass::NotExecuted);
        assert_eq!(streamed(&exact, 5), Some(FailureClass::NotExecuted));
        let longer = format!("{exact}X");
        assert_eq!(message_class(&longer), FailureClass::Permanent);
        assert_eq!(streamed(&longer, 5), None);
        // The same for D1's part behind the user's text: a phrase that ends the message.
        let behind = "ctx D1_ERROR: Network connection lost";
        assert_eq!(message_class(behind), FailureClass::MaybeExecuted);
        assert_eq!(streamed(behind, 5), Some(FailureClass::MaybeExecuted));
    }

    #[test]
    fn sqlite_code_matcher_restarts_correctly() {
        for (text, expected) in [
            ("SQLITE_", true),
            ("SSQLITE_", true),
            ("SQLSQLITE_", true),
            ("SQLITESQLITE_", true),
            ("SQLITE_ and then S", true),
            ("SQLITE", false),
            ("sqlite_", false),
            ("SQLITE-", false),
            ("xQLITE_", false),
            ("S Q L I T E _", false),
        ] {
            assert_eq!(
                SqliteCodeMatcher::default().feed(text.as_bytes()),
                expected,
                "{text:?}"
            );
        }
    }

    #[test]
    fn the_sqlite_code_may_arrive_one_byte_at_a_time() {
        let mut matcher = SqliteCodeMatcher::default();
        for byte in "x: SQLITE_ERROR".bytes() {
            matcher.feed(&[byte]);
        }
        assert!(matcher.found());
    }
}
