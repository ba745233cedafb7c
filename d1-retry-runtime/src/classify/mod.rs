//! Sorting a failed D1 call into a [`FailureClass`] by what its error says.
//!
//! The vocabulary lives in [`vocabulary`], the allocation-free reading of one message in
//! [`head`], and the log text in [`log_text`]; this file walks cause chains.

mod head;
mod log_text;
mod vocabulary;

pub(crate) use vocabulary::PHRASES;

use core::fmt;
use std::error::Error;

use crate::FailureClass;

/// How many links of a `source()` chain are read. Real chains are two or three links long;
/// the bound only keeps a chain that loops back on itself from hanging the request.
const MAX_CHAIN_LEN: usize = 32;

/// Classifies one D1 error message.
///
/// The message is recognized by how it *starts*: after `Error: ` and `D1_ERROR: ` prefixes
/// (in any order, stacked at least as deep as `Error: D1_ERROR: Error: D1_ERROR: `), it
/// must begin with one of the phrases in the table of [`classify`], followed by the end of
/// the message, punctuation (`.`, `,`, `;`, `:`) or whitespace, so the final period and
/// any trailing detail are optional. Anything else is
/// [`Permanent`](FailureClass::Permanent): a phrase quoted further on, in echoed SQL or a
/// constraint's value, never counts.
///
/// ```
/// use d1_retry_runtime::{classify_message, FailureClass};
///
/// assert_eq!(
///     classify_message("D1_ERROR: internal error; reference = 6cs6dbfq4tb5lmtrbc3t0lis"),
///     FailureClass::MaybeExecuted,
/// );
/// assert_eq!(
///     classify_message("Error: D1_ERROR: D1 DB is overloaded. Too many requests queued."),
///     FailureClass::NotExecuted,
/// );
/// // A lookalike: the query itself was too big, so it would fail again.
/// assert_eq!(
///     classify_message("D1 DB storage operation exceeded timeout which caused object to be reset."),
///     FailureClass::Permanent,
/// );
/// // The phrase is only echoed SQL.
/// assert_eq!(
///     classify_message(
///         "D1_EXEC_ERROR: Error in line 1: INSERT INTO t VALUES('Network connection lost.'): \
///          no such table: t: SQLITE_ERROR"
///     ),
///     FailureClass::Permanent,
/// );
/// ```
#[must_use]
pub fn classify_message(message: &str) -> FailureClass {
    // Judge exactly the head `classify` would keep, so both always agree.
    let bytes = message.as_bytes();
    let head = bytes.get(..vocabulary::HEAD_LEN).unwrap_or(bytes);
    vocabulary::start_class(head, head.len() == bytes.len()).unwrap_or(FailureClass::Permanent)
}

/// Classifies an error by its message and the messages of its `source()` chain.
///
/// The links are read outermost first, and the first link whose message is recognized
/// decides; when none is, the failure is [`Permanent`](FailureClass::Permanent). A link is
/// recognized when its message
///
/// 1. starts (after `Error: ` and `D1_ERROR: ` prefixes) with a phrase of the table below,
///    followed by the end of the message, punctuation or whitespace; that row decides, and
///    the three permanent lookalikes decide too;
/// 2. or starts with `D1_EXEC_ERROR`, `D1_TYPE_ERROR` or `D1_COLUMN_NOTFOUND`, or contains a
///    SQLite result code (`SQLITE_` as in `: SQLITE_CONSTRAINT`) anywhere: the query reached
///    SQLite and failed, which is [`Permanent`](FailureClass::Permanent), and deeper links
///    are not read. Whatever they say (an echoed value that happens to start with a
///    transient phrase) cannot make a failed query safe to run again.
///
/// Messages that are not recognized (a context such as `loading user 7`, or a bare
/// `D1_ERROR`, as workers before wrangler 3.1.1 sent, with the detail in its cause) pass
/// the decision on to their source.
///
/// | message (final period optional) | class |
/// |---|---|
/// | `Cannot resolve D1 DB due to transient issue on remote node.` | [`NotExecuted`](FailureClass::NotExecuted) |
/// | `Internal error while starting up D1 DB storage caused object to be reset.` | [`NotExecuted`](FailureClass::NotExecuted) |
/// | `D1 DB is overloaded. Too many requests queued.` | [`NotExecuted`](FailureClass::NotExecuted) |
/// | `Network connection lost.` | [`MaybeExecuted`](FailureClass::MaybeExecuted) |
/// | `Internal error in D1 DB storage caused object to be reset.` | [`MaybeExecuted`](FailureClass::MaybeExecuted) |
/// | `D1 DB reset because its code was updated.` | [`MaybeExecuted`](FailureClass::MaybeExecuted) |
/// | `Can't read from request stream because client disconnected.` | [`MaybeExecuted`](FailureClass::MaybeExecuted) |
/// | `D1 DB is overloaded. Requests queued for too long.` | [`MaybeExecuted`](FailureClass::MaybeExecuted) |
/// | `internal error; reference = <id>` | [`MaybeExecuted`](FailureClass::MaybeExecuted) |
/// | `Replica disconnected from primary` | [`MaybeExecuted`](FailureClass::MaybeExecuted) |
/// | `D1 DB storage operation exceeded timeout which caused object to be reset.` | [`Permanent`](FailureClass::Permanent) (lookalike: a write too large) |
/// | `D1 DB's isolate exceeded its memory limit and was reset.` | [`Permanent`](FailureClass::Permanent) (lookalike: the query caused it) |
/// | `D1 DB exceeded its CPU time limit and was reset.` | [`Permanent`](FailureClass::Permanent) (lookalike: the query caused it) |
/// | `D1_EXEC_ERROR…`, `D1_TYPE_ERROR…`, `D1_COLUMN_NOTFOUND…`, anything with `SQLITE_` | [`Permanent`](FailureClass::Permanent), and the walk stops |
/// | anything else | not recognized; the next link decides, [`Permanent`](FailureClass::Permanent) if none does |
///
/// Matching is case-sensitive, as D1 writes these messages from fixed strings. A phrase
/// counts only at the very start of a message, so only on its first line: a stack trace or
/// echoed SQL that mentions it changes nothing.
///
/// Classifying allocates nothing: each message is written through a fixed buffer that keeps
/// its first 107 bytes, and a long message stops being formatted as soon as its class is
/// known.
///
/// ```
/// use std::error::Error;
/// use std::fmt;
/// use d1_retry_runtime::{classify, FailureClass};
///
/// #[derive(Debug)]
/// struct Js(&'static str);
/// impl fmt::Display for Js {
///     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.0) }
/// }
/// impl Error for Js {}
///
/// #[derive(Debug)]
/// struct Context { what: &'static str, cause: Js }
/// impl fmt::Display for Context {
///     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.what) }
/// }
/// impl Error for Context {
///     fn source(&self) -> Option<&(dyn Error + 'static)> { Some(&self.cause) }
/// }
///
/// let lost = Context { what: "loading user 7", cause: Js("Network connection lost.") };
/// assert_eq!(classify(&lost), FailureClass::MaybeExecuted);
///
/// let unique = Js("Error: D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT");
/// assert_eq!(classify(&unique), FailureClass::Permanent);
/// ```
#[must_use]
pub fn classify(error: &(dyn Error + 'static)) -> FailureClass {
    deciding_link(error).map_or(FailureClass::Permanent, |decision| decision.class)
}

/// Classifies a value that is only `Display` (a `String`, `anyhow`-like errors without a
/// chain) by its text, as [`classify`] reads one link.
pub(crate) fn classify_display(error: &dyn fmt::Display) -> FailureClass {
    head::text_class(error).unwrap_or(FailureClass::Permanent)
}

/// Writes the text logged as `d1.failure`: the first line of the outermost message and, when
/// a deeper link decided the class, `: ` and the first line of that link. Stack traces and
/// long echoed SQL are left out. Never fails unless `f` does, so that formatting a
/// [`Failure`](crate::failure::Failure) cannot panic.
pub(crate) fn write_error_text(
    error: &(dyn Error + 'static),
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let outer_len = write_link(error, f)?;
    if let Some(decision) = deciding_link(error)
        && decision.depth > 0
    {
        if outer_len > 0 {
            f.write_str(": ")?;
        }
        write_link(decision.link, f)?;
    }
    Ok(())
}

/// The link of a chain whose message decided its class.
struct Decision<'e> {
    link: &'e (dyn Error + 'static),
    /// 0 for the outermost error.
    depth: usize,
    class: FailureClass,
}

fn deciding_link<'e>(error: &'e (dyn Error + 'static)) -> Option<Decision<'e>> {
    let mut link = error;
    for depth in 0..MAX_CHAIN_LEN {
        if let Some(class) = link_class(link) {
            return Some(Decision { link, depth, class });
        }
        link = link.source()?;
    }
    None
}

/// What one link of a chain says about the failure, if anything. The chain walk reads every
/// link through here and nowhere else.
fn link_class(link: &(dyn Error + 'static)) -> Option<FailureClass> {
    // A `worker::Error` is read from the JavaScript texts it carries: its D1 variant must
    // never be formatted (`D1Error`'s `Display` panics in worker 0.8.7).
    #[cfg(feature = "worker")]
    if let Some(verdict) = crate::worker::link_class(link, head::text_class) {
        return verdict;
    }
    head::text_class(&link)
}

/// Writes one link for the log text and returns how many bytes it wrote. The log text
/// writes links through here and nowhere else.
fn write_link(
    link: &(dyn Error + 'static),
    f: &mut fmt::Formatter<'_>,
) -> Result<usize, fmt::Error> {
    // As in `link_class`: a `worker::Error` is written from its JavaScript texts.
    #[cfg(feature = "worker")]
    if let Some(text) = crate::worker::link_text(link) {
        return log_text::write_first_line(&text, f);
    }
    log_text::write_first_line(&link, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Message(&'static str, Option<Box<Message>>);

    impl fmt::Display for Message {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Message {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|m| m as &(dyn Error + 'static))
        }
    }

    struct LogText<'e>(&'e (dyn Error + 'static));

    impl fmt::Display for LogText<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write_error_text(self.0, f)
        }
    }

    fn chain(messages: &[&'static str]) -> Message {
        messages
            .iter()
            .rev()
            .fold(None, |source, text| {
                Some(Message(text, source.map(Box::new)))
            })
            .unwrap_or(Message("", None))
    }

    #[test]
    fn the_deciding_link_is_found_with_its_depth() {
        let error = chain(&["loading user", "D1_ERROR", "Network connection lost."]);
        let decision = deciding_link(&error);
        assert!(matches!(
            decision,
            Some(Decision {
                depth: 2,
                class: FailureClass::MaybeExecuted,
                ..
            })
        ));
        assert_eq!(
            decision.map(|d| d.link.to_string()),
            Some("Network connection lost.".to_owned())
        );
    }

    #[test]
    fn log_text_is_the_outer_line_and_the_deciding_line() {
        let error = chain(&["loading user 7\n  at query", "Network connection lost."]);
        assert_eq!(
            LogText(&error).to_string(),
            "loading user 7: Network connection lost."
        );
    }

    #[test]
    fn log_text_of_an_outer_deciding_link_is_that_link_alone() {
        let error = chain(&[
            "Error: D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT",
            "UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT",
        ]);
        assert_eq!(
            LogText(&error).to_string(),
            "Error: D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT"
        );
    }

    #[test]
    fn log_text_skips_the_separator_after_an_empty_outer_message() {
        let error = chain(&["", "D1 DB reset because its code was updated."]);
        assert_eq!(
            LogText(&error).to_string(),
            "D1 DB reset because its code was updated."
        );
    }

    #[test]
    fn log_text_without_a_deciding_link_is_the_outer_line() {
        let error = chain(&["loading user 7", "something odd"]);
        assert_eq!(LogText(&error).to_string(), "loading user 7");
    }

    #[test]
    fn log_text_is_cut_at_the_first_line_and_at_a_char_boundary() {
        let error = Message(
            "Error: Network connection lost.\n    at worker.js:1:1",
            None,
        );
        assert_eq!(
            LogText(&error).to_string(),
            "Error: Network connection lost."
        );
        let crlf = Message("first\r\nsecond", None);
        assert_eq!(LogText(&crlf).to_string(), "first");

        let long: &'static str = "é".repeat(200).leak();
        let text = LogText(&Message(long, None)).to_string();
        assert_eq!(text, format!("{}…", "é".repeat(128)));
    }
}
