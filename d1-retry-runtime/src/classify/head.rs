//! Reading what one error says without allocating: its `Display` is streamed into a
//! fixed buffer that keeps only the head of the message; past the head, a matcher watches
//! the rest of the stream for a SQLite result code.

use core::fmt;

use super::vocabulary::{HEAD_LEN, SQLITE_CODE, start_class};
use crate::FailureClass;

/// The class one message decides, if it decides one: a recognized start (transient phrase,
/// lookalike, permanent D1 code), else a SQLite result code anywhere, else nothing.
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

/// A `fmt::Write` that keeps the first [`HEAD_LEN`] bytes, and stops the writer (by
/// returning `fmt::Error`) as soon as the rest of the text cannot change the verdict.
struct HeadReader {
    head: [u8; HEAD_LEN],
    len: usize,
    /// The verdict of the start, judged once the text outgrows the head. While the text fits
    /// the head, nothing is judged and nothing is scanned: most texts are short, and a
    /// recognized start makes the scan for a SQLite code pointless.
    start: Option<Option<FailureClass>>,
    /// Fed from the moment the text outgrows the head with an undecided start.
    sqlite_code: SqliteCodeMatcher,
    /// This reader asked the writer to stop; any error the writer returns after that is ours.
    stopped: bool,
}

impl HeadReader {
    fn new() -> Self {
        HeadReader {
            head: [0; HEAD_LEN],
            len: 0,
            start: None,
            sqlite_code: SqliteCodeMatcher::default(),
            stopped: false,
        }
    }

    fn head(&self) -> &[u8] {
        self.head.get(..self.len).unwrap_or_default()
    }

    /// The whole verdict, once the writer has finished or been stopped.
    fn class(&self) -> Option<FailureClass> {
        let start = match self.start {
            Some(start) => start,
            None => start_class(self.head(), true),
        };
        let saw_sqlite_code = match self.start {
            Some(_) => self.sqlite_code.found(),
            None => SqliteCodeMatcher::default().feed(self.head()),
        };
        start.or(saw_sqlite_code.then_some(FailureClass::Permanent))
    }
}

impl fmt::Write for HeadReader {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        if self.stopped {
            return Err(fmt::Error);
        }
        let bytes = text.as_bytes();
        let room = self.head.get_mut(self.len..).unwrap_or_default();
        let taken = room.len().min(bytes.len());
        if let (Some(into), Some(from)) = (room.get_mut(..taken), bytes.get(..taken)) {
            into.copy_from_slice(from);
            self.len += taken;
        }
        if taken == bytes.len() {
            return Ok(());
        }
        let start = match self.start {
            Some(start) => start,
            None => {
                let start = start_class(self.head(), false);
                self.start = Some(start);
                if start.is_none() {
                    // The head was never scanned; the scan starts there.
                    let head = self.head.get(..self.len).unwrap_or_default();
                    self.sqlite_code.feed(head);
                }
                start
            }
        };
        if start.is_some()
            || self
                .sqlite_code
                .feed(bytes.get(taken..).unwrap_or_default())
        {
            self.stopped = true;
            return Err(fmt::Error);
        }
        Ok(())
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
            self.matched = if SQLITE_CODE.get(self.matched) == Some(&byte) {
                self.matched + 1
            } else {
                // Exact because the code's first byte occurs nowhere else in it.
                usize::from(SQLITE_CODE.first() == Some(&byte))
            };
        }
        self.found()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    #[test]
    fn keeps_only_the_head_and_stops_once_the_start_decides() {
        let mut reader = HeadReader::new();
        assert!(reader.write_str("Network connection lost.").is_ok());
        let long = "x".repeat(HEAD_LEN);
        assert!(reader.write_str(&long).is_err(), "the start decided; stop");
        assert!(reader.stopped);
        assert_eq!(reader.head().len(), HEAD_LEN);
        assert!(reader.write_str("more").is_err(), "stays stopped");
        assert_eq!(reader.class(), Some(FailureClass::MaybeExecuted));
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
