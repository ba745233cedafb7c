//! Sorting a failed D1 call into a [`FailureClass`] by what its error says.
//!
//! D1 tells a caller whether a statement ran only through the text of its error messages,
//! so the classifier reads texts, and reads them strictly: a retry of a statement that did
//! run can run a write twice, so anything not recognized for sure is permanent.
//!
//! - [`vocabulary`]: the documented messages, the prefixes, the rule for a message's start
//!   and for D1's part of a message behind the user's own text.
//! - [`head`]: the allocation-free reading of one message, streamed from its `Display`.
//! - [`parts`]: every D1 part of a message, which must all agree for a verdict to stand.
//! - [`link`]: how one link of a chain is read (by its `Display`, or with the `worker`
//!   feature, a `worker::Error` from its JavaScript texts, in `worker_error.rs`).
//! - [`log_text`]: the short text that stands for a failure in logs.
//! - [`class`]: the three classes; [`failure`]: a failed attempt as the retry loops see it,
//!   its class and the text it is logged by, from one reading of the error.
//! - this file: the walk down a `source()` chain, and what a [`Failure`] keeps of it.
//!
//! Everything about reading errors lives here, behind the `worker` feature where it needs
//! the `worker` crate; the `worker` module only runs things inside a Worker, and nothing here
//! calls into it.
//!
//! [`Failure`]: crate::classify::failure::Failure

pub(crate) mod class;
pub(crate) mod failure;
mod head;
mod link;
mod log_text;
mod parts;
mod vocabulary;
#[cfg(feature = "worker")]
mod worker_error;

pub(crate) use vocabulary::PHRASES;

use core::fmt;
use std::error::Error;

use self::link::Link;
use crate::FailureClass;

/// [`fmt::Write::write_char`] as the default method writes it, through `write_str`, for
/// every writer here. The default is compiled again for each writer, since each one's
/// `dyn fmt::Write` vtable holds it, and its UTF-8 encoding is most of that method's
/// bytes: sharing this one takes 0.8 KB off the example Worker's release wasm (0.6 KB with
/// the size profile; BENCHMARKS.md, ninth round).
#[inline(never)]
fn write_char(out: &mut dyn fmt::Write, c: char) -> fmt::Result {
    out.write_str(c.encode_utf8(&mut [0; 4]))
}

/// Copies as much of `from` as fits into the start of `into`; returns how many bytes it
/// copied. A zip rather than `copy_from_slice`, whose length check the optimiser could not
/// prove equal at the readers' calls: it linked a panic path (and its message and source
/// location) into every Worker, where a panic kills the request (BENCHMARKS.md,
/// forty-fifth round).
fn copy_prefix(into: &mut [u8], from: &[u8]) -> usize {
    for (slot, byte) in into.iter_mut().zip(from) {
        *slot = *byte;
    }
    into.len().min(from.len())
}

/// An error whose `Display` writes its text one `char` at a time, through `write_char`, as
/// the `Debug` of a string writes its escapes: every writer here must read it as it reads
/// the whole text written at once.
#[cfg(test)]
#[derive(Debug)]
struct CharByChar(&'static str);

#[cfg(test)]
impl fmt::Display for CharByChar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write as _;
        self.0.chars().try_for_each(|c| f.write_char(c))
    }
}

#[cfg(test)]
impl Error for CharByChar {}

/// How many links of a `source()` chain are read. Real chains are two or three links long;
/// the bound only keeps a chain that loops back on itself from hanging the request, and a
/// chain with links left unread is permanent.
const MAX_CHAIN_LEN: usize = 32;

/// Classifies one D1 error message.
///
/// The message is recognized by how it *starts*: after `Error: ` and `D1_ERROR: ` prefixes
/// (in any order, stacked at least as deep as `Error: D1_ERROR: Error: D1_ERROR: `), it
/// must begin with one of the phrases in the table of [`classify`], followed by the end of
/// the message, punctuation (`.`, `,`, `;`, `:`) or whitespace, so the final period and
/// any trailing detail are optional.
///
/// A message an error type of your own wrote its own text in front of
/// (`Database error: D1_ERROR: Network connection lost.`) is recognized by D1's part: the
/// first `D1_` on the message's first line, right after a space, read as if it started the
/// message. A phrase there counts only behind `D1_ERROR: `, only if `SQLITE_` occurs
/// nowhere in the message, and only if every other D1 part of the message, on any line,
/// says the same (a client's text the user's error shows beside D1's own message may hold
/// one); rule 3 of [`classify`] has the details.
///
/// Anything else is [`Permanent`](FailureClass::Permanent): a phrase quoted further on, in
/// echoed SQL, a constraint's value or your own text without D1's marker, never counts.
/// This is exactly the class [`classify`] gives an error with this message and no source.
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
/// // D1's message behind the prefix of a user's error type.
/// assert_eq!(
///     classify_message(
///         "Database error: D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node."
///     ),
///     FailureClass::NotExecuted,
/// );
/// // Without D1's marker, a phrase inside the user's text is not D1's message.
/// assert_eq!(
///     classify_message("retry after Network connection lost."),
///     FailureClass::Permanent,
/// );
/// ```
#[must_use]
pub fn classify_message(message: &str) -> FailureClass {
    head::message_class(message)
}

/// Classifies an error by its message and the messages of its `source()` chain.
///
/// The links are read outermost first; a link whose message is recognized decides, unless
/// a link below it is recognized as less retryable (a user's error that carries a
/// client's text in front of D1's own: the least retryable class of the chain decides).
/// When none is recognized, the failure is [`Permanent`](FailureClass::Permanent). A link is
/// recognized when its message
///
/// 1. contains a SQLite result code (`SQLITE_` as in `: SQLITE_CONSTRAINT`) anywhere, or
///    starts with `D1_EXEC_ERROR`, `D1_TYPE_ERROR` or `D1_COLUMN_NOTFOUND`: the query
///    reached SQLite and failed, which is [`Permanent`](FailureClass::Permanent), and
///    deeper links are not read. Whatever the message or they say (an echoed value that
///    happens to start with a transient phrase, a trigger's `RAISE(FAIL, NEW.name || ..)`
///    whose name reads like one, after the rows before it were written) cannot make a
///    failed query safe to run again;
/// 2. or starts (after `Error: ` and `D1_ERROR: ` prefixes) with a phrase of the table
///    below, followed by the end of the message, punctuation or whitespace; that row
///    decides, and the three permanent lookalikes decide too;
/// 3. or, failing 1 and 2, carries D1's message behind text of the user's own, the most
///    common error style in Workers code (`Database error: D1_ERROR: Cannot resolve D1 DB
///    due to transient issue on remote node.`, `repo failed: D1_ERROR: Network connection
///    lost.`). D1's part starts at the first `D1_` on the first line, and counts only right
///    after a space. It is read as rule 1 and 2 read a start: `D1_ERROR: ` (and further
///    prefixes) then a phrase of the table decides that row; a part starting with
///    `D1_EXEC_ERROR`, `D1_TYPE_ERROR` or `D1_COLUMN_NOTFOUND` is permanent, so SQL it
///    echoes (even an echoed `D1_ERROR: Network connection lost.`) never counts. Only the
///    first `D1_` counts; a part that says anything else (`D1_ERROR: UNIQUE constraint
///    failed`, a bare `D1_ERROR`, `D1_` glued to the user's text) is not recognized.
///
/// A verdict of rule 2 or 3 other than permanent stands only if every D1 part of the
/// message says the same: each `D1_`, wherever it stands and on whatever line, starts a
/// part read as a start is. Else the message decides the least retryable class among the
/// verdict and its parts, a part that says nothing known counting as permanent: one of its
/// parts may be a client's text that the user's error shows beside D1's own message, and
/// which one is D1's is not known. Parts that agree (a stack trace that repeats the
/// message, stacked `D1_ERROR: D1_ERROR: ` prefixes) keep the verdict. A chain longer than
/// 32 links, whose deeper links are not read, is permanent.
///
/// Messages that are not recognized (a context such as `loading user 7`, or a bare
/// `D1_ERROR`, as workers before wrangler 3.1.1 sent, with the detail in its cause) pass
/// the decision on to their source. A phrase in the user's own text without D1's
/// `D1_ERROR: ` marker in front of it (`retry after Network connection lost.`) is not
/// recognized either: only D1's own message is trusted to say whether a statement ran.
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
/// counts only at the very start of a message or of D1's part of it, so only on its first
/// line: a stack trace or echoed SQL that mentions it changes nothing.
///
/// With the `worker` feature, a `worker::Error` in the chain is read from the JavaScript
/// message and causes it carries, never by formatting a `D1Error` (whose `Display` panics in
/// `worker` 0.8.7), and so is the `Display` of a D1 variant forwarded by an error type of
/// your own (`#[error(transparent)]`).
///
/// Classifying allocates nothing (reading a `worker::Error` aside): each message is written
/// through fixed buffers that keep its first 107 bytes and the first 107 bytes of D1's part,
/// and a long message stops being formatted as soon as its class is known. A message whose
/// start decides nothing is read to its end, to look for a SQLite code.
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
///
/// let prefixed = Js("repo failed: D1_ERROR: Network connection lost.");
/// assert_eq!(classify(&prefixed), FailureClass::MaybeExecuted);
/// let prefixed_query_error = Js("repo failed: D1_ERROR: Network connection lost.: SQLITE_IOERR");
/// assert_eq!(classify(&prefixed_query_error), FailureClass::Permanent);
/// ```
#[must_use]
pub fn classify(error: &(dyn Error + 'static)) -> FailureClass {
    walk(error)
        .decision
        .map_or(FailureClass::Permanent, |decision| decision.class)
}

/// Classifies an error like [`classify`], and keeps what its log text needs: the outermost
/// link and the link that decided. Formatting the [`ChainText`] later writes those two links
/// and reads no other, so a chain is walked and classified once per failure.
pub(crate) fn classify_chain<'e>(
    error: &'e (dyn Error + 'static),
) -> (Option<FailureClass>, ChainText<'e>) {
    classified(walk(error))
}

/// [`classify_chain`] for an error of a known type that is not a `worker::Error`, given as
/// its `Display` and its `source()` (see [`Link::shown`]).
pub(crate) fn classify_shown_chain<'e>(
    text: &'e dyn fmt::Display,
    source: Option<&'e (dyn Error + 'static)>,
) -> (Option<FailureClass>, ChainText<'e>) {
    classified(walk_from(Link::shown(text, source)))
}

/// [`classify_chain`] for a `worker::Error`, read as the outermost link without being made a
/// `dyn Error` (see [`Link::worker`]).
#[cfg(feature = "worker")]
pub(crate) fn classify_worker_chain(
    error: &worker::Error,
) -> (Option<FailureClass>, ChainText<'_>) {
    classified(walk_from(Link::worker(error)))
}

/// The class a recognized link told, `None` when no link told one (a text that is not
/// D1's, which is permanent), and the chain's text.
fn classified(walk: Walk<'_>) -> (Option<FailureClass>, ChainText<'_>) {
    let class = walk.decision.map(|decision| decision.class);
    let decider = walk
        .decision
        .filter(|decision| decision.depth > 0)
        .map(|decision| decision.link);
    let text = ChainText {
        outer: walk.outer,
        decider,
    };
    (class, text)
}

/// Classifies a value that is only `Display` (a `String`, `anyhow`-like errors without a
/// chain) by its text, as [`classify`] reads one link.
pub(crate) fn classify_display(error: &dyn fmt::Display) -> Option<FailureClass> {
    head::text_class(error)
}

/// The text logged as `d1.failure` for a classified chain: the first line of the outermost
/// message and, when a deeper link decided the class, `: ` and the first line of that link.
/// Stack traces and long echoed SQL are left out.
///
/// It holds the two links [`classify_chain`] found, already read the way their types call
/// for, so writing it neither walks the chain (`source()`) nor classifies anything again.
/// Writing never fails unless the formatter does, so that formatting a
/// [`Failure`](crate::classify::failure::Failure) cannot panic.
#[derive(Clone, Copy)]
pub(crate) struct ChainText<'e> {
    outer: Link<'e>,
    /// The link that decided the class, when it is not the outermost one.
    decider: Option<Link<'e>>,
}

impl fmt::Display for ChainText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outer_len = self.outer.write_first_line(f)?;
        if let Some(decider) = self.decider {
            if outer_len > 0 {
                f.write_str(": ")?;
            }
            decider.write_first_line(f)?;
        }
        Ok(())
    }
}

/// What one walk down a chain found.
struct Walk<'e> {
    /// The outermost link, as read.
    outer: Link<'e>,
    decision: Option<Decision<'e>>,
}

/// The link of a chain whose message decided its class.
#[derive(Clone, Copy)]
struct Decision<'e> {
    link: Link<'e>,
    /// 0 for the outermost error.
    depth: usize,
    class: FailureClass,
}

/// Reads the links of a chain, outermost first, until one decides. Every link is read
/// through [`Link`] and nowhere else, so the classifier and the log text see each link the
/// same way.
fn walk<'e>(error: &'e (dyn Error + 'static)) -> Walk<'e> {
    walk_from(Link::of(error))
}

///
/// A link that says the call may be retried does not end the walk: the links below it are
/// read too, and the least retryable class any of them gives decides (the outermost link
/// giving it is the decider). The outer links are the user's, and may carry text a client
/// chose (`saving note "hi D1_ERROR: D1 DB is overloaded. Too many requests queued."`:
/// its first `D1_` is the client's), while D1's own error, the source below them, says
/// what happened (`Network connection lost.`, or a trigger's `SQLITE_CONSTRAINT` after
/// some rows were written). Text can then only make a failure less retryable, never more.
fn walk_from(outer: Link<'_>) -> Walk<'_> {
    let mut link = outer;
    let mut decision: Option<Decision<'_>> = None;
    for depth in 0..MAX_CHAIN_LEN {
        if let Some(class) = link.class() {
            if decision.is_none_or(|decided| class.retryability() < decided.class.retryability()) {
                decision = Some(Decision { link, depth, class });
            }
            if class == FailureClass::Permanent {
                return Walk { outer, decision };
            }
        }
        match link.source() {
            Some(source) => link = Link::of(source),
            None => return Walk { outer, decision },
        }
    }
    // Links are left unread (a chain that loops, or one deeper than any real one): one of
    // them may be D1's refusal of the query, which would make it permanent, so it is. No
    // link read said so: the outermost stands for the chain in the log.
    Walk {
        outer,
        decision: Some(Decision {
            link: outer,
            depth: 0,
            class: FailureClass::Permanent,
        }),
    }
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

    fn log_text(error: &(dyn Error + 'static)) -> String {
        classify_chain(error).1.to_string()
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

    /// A chain longer than the walk reads is permanent: the link left unread may be D1's
    /// refusal of the query (helper-57: a UNIQUE constraint 32 links down, under a
    /// transient outer text, was classed "not executed").
    #[test]
    fn a_chain_with_links_left_unread_is_permanent() {
        let overloaded = "saving: D1_ERROR: D1 DB is overloaded. Too many requests queued.";
        let unique = "Error: D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT";
        for (depth, expected) in [
            (2, FailureClass::Permanent),
            (MAX_CHAIN_LEN - 1, FailureClass::Permanent),
            (MAX_CHAIN_LEN, FailureClass::Permanent),
            (MAX_CHAIN_LEN + 8, FailureClass::Permanent),
        ] {
            let mut links = vec![overloaded];
            links.resize(depth, "context");
            links.push(unique);
            assert_eq!(classify(&chain(&links)), expected, "depth {depth}");
        }
        // Read to its end, a chain within the bound keeps its verdict.
        let mut links = vec![overloaded];
        links.resize(MAX_CHAIN_LEN, "context");
        assert_eq!(classify(&chain(&links)), FailureClass::NotExecuted);
        links.push("context");
        assert_eq!(classify(&chain(&links)), FailureClass::Permanent);
    }

    /// An outer link whose D1 parts disagree decides their least retryable class, so a
    /// transient link below it cannot allow more (helper-57: each of these was "not
    /// executed" over a `Cannot resolve` source).
    #[test]
    fn a_link_whose_parts_disagree_bounds_the_links_below() {
        let resolve = "D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node.";
        for (outer, expected) in [
            (
                "repo failed: D1_ERROR: Network connection lost. D1_TYPE_ERROR: Type 'object' \
                 not supported",
                FailureClass::Permanent,
            ),
            (
                "D1_ERROR: Network connection lost. D1_ERROR: UNIQUE constraint failed",
                FailureClass::Permanent,
            ),
            (
                "saving note hi D1_ERROR: D1 DB is overloaded. Too many requests queued.: \
                 D1_ERROR: Network connection lost.",
                FailureClass::MaybeExecuted,
            ),
        ] {
            assert_eq!(classify(&chain(&[outer, resolve])), expected, "{outer}");
            assert_eq!(classify_message(outer), expected, "{outer}");
        }
    }

    #[test]
    fn the_deciding_link_is_found_with_its_depth() {
        let error = chain(&["loading user", "D1_ERROR", "Network connection lost."]);
        let decision = walk(&error).decision;
        assert!(matches!(
            decision,
            Some(Decision {
                depth: 2,
                class: FailureClass::MaybeExecuted,
                ..
            })
        ));
        assert_eq!(
            decision.map(|d| d.link.to_text()),
            Some("Network connection lost.".to_owned())
        );
    }

    /// A link that allows a retry does not end the walk: a link below it that allows less
    /// (D1's own error under a user's text that quotes a client) decides, and the outermost
    /// link giving the least decides among equals.
    #[test]
    fn the_least_retryable_link_of_the_chain_decides() {
        let overloaded = "note hi D1_ERROR: D1 DB is overloaded. Too many requests queued.";
        let depth_and_class = |links: &[&'static str]| {
            walk(&chain(links))
                .decision
                .map(|decision| (decision.depth, decision.class))
        };
        let lost = "Network connection lost.";
        let refused = "D1_ERROR: CHECK constraint failed: SQLITE_CONSTRAINT";
        assert_eq!(
            depth_and_class(&[overloaded, lost]),
            Some((1, FailureClass::MaybeExecuted))
        );
        assert_eq!(
            depth_and_class(&[overloaded, "ctx", refused]),
            Some((2, FailureClass::Permanent))
        );
        assert_eq!(
            depth_and_class(&[lost, overloaded]),
            Some((0, FailureClass::MaybeExecuted))
        );
        assert_eq!(
            depth_and_class(&[overloaded, "D1 DB is overloaded. Too many requests queued."]),
            Some((0, FailureClass::NotExecuted))
        );
        assert_eq!(
            classify(&chain(&[refused, lost])),
            FailureClass::Permanent,
            "a permanent link ends the walk"
        );
    }

    #[test]
    fn the_chain_text_keeps_the_outer_and_the_deciding_link_only() {
        let error = chain(&["loading user", "D1_ERROR", "Network connection lost."]);
        let (class, text) = classify_chain(&error);
        assert_eq!(class, Some(FailureClass::MaybeExecuted));
        assert_eq!(text.outer.to_text(), "loading user");
        assert_eq!(
            text.decider.map(|link| link.to_text()),
            Some("Network connection lost.".to_owned())
        );
        let outer = chain(&["Network connection lost.", "x"]);
        assert!(classify_chain(&outer).1.decider.is_none());
        let undecided = chain(&["loading user", "odd"]);
        let (_, undecided) = classify_chain(&undecided);
        assert!(undecided.decider.is_none());
    }

    #[test]
    fn log_text_is_the_outer_line_and_the_deciding_line() {
        let error = chain(&["loading user 7\n  at query", "Network connection lost."]);
        assert_eq!(log_text(&error), "loading user 7: Network connection lost.");
    }

    #[test]
    fn log_text_of_an_outer_deciding_link_is_that_link_alone() {
        let error = chain(&[
            "Error: D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT",
            "UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT",
        ]);
        assert_eq!(
            log_text(&error),
            "Error: D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT"
        );
    }

    #[test]
    fn log_text_skips_the_separator_after_an_empty_outer_message() {
        let error = chain(&["", "D1 DB reset because its code was updated."]);
        assert_eq!(
            log_text(&error),
            "D1 DB reset because its code was updated."
        );
    }

    #[test]
    fn log_text_without_a_deciding_link_is_the_outer_line() {
        let error = chain(&["loading user 7", "something odd"]);
        assert_eq!(log_text(&error), "loading user 7");
    }

    #[test]
    fn log_text_is_cut_at_the_first_line_and_at_a_char_boundary() {
        let error = Message(
            "Error: Network connection lost.\n    at worker.js:1:1",
            None,
        );
        assert_eq!(log_text(&error), "Error: Network connection lost.");
        let crlf = Message("first\r\nsecond", None);
        assert_eq!(log_text(&crlf), "first");

        let long: &'static str = "é".repeat(200).leak();
        let text = log_text(&Message(long, None));
        assert_eq!(text, format!("{}…", "é".repeat(128)));
    }

    #[test]
    fn a_text_written_char_by_char_is_classified_and_logged_as_a_whole() {
        let lost = CharByChar("D1_ERROR: Network connection lost.\n    at worker.js:1:1");
        assert_eq!(classify(&lost), FailureClass::MaybeExecuted);
        assert_eq!(log_text(&lost), "D1_ERROR: Network connection lost.");
        let mixed = CharByChar("Données: D1_ERROR: D1 DB is overloaded. Too many requests queued.");
        assert_eq!(classify(&mixed), FailureClass::NotExecuted);
        assert_eq!(log_text(&mixed), mixed.0);
        let long: &'static str = "é".repeat(200).leak();
        assert_eq!(log_text(&CharByChar(long)), format!("{}…", "é".repeat(128)));
    }
}
