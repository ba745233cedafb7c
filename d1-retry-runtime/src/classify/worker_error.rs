//! Reading a `worker::Error` (the `worker` feature), for the classifier and the logs, without
//! ever formatting a `D1Error`.
//!
//! Why here, in the classifier, and not in the `worker` module: what a `worker::Error` says
//! is a question of classification, answered with the same reading of one message
//! ([`head::text_class`]) as any other link; the `worker` module is about running inside a
//! Worker (sleeping, [`D1Retry`](crate::worker::D1Retry)). The classifier's chain walk asks
//! [`WorkerLink::displayed`] about every link that is not a `worker::Error`, and reads the
//! links this module knows through it.
//!
//! A D1 failure reaches Rust in several shapes (`shared/notes/d1-errors.md`):
//!
//! - `Error::D1(D1Error)` from `first`, `run`, `raw`, `batch`, `exec` and `dump` when the
//!   JavaScript message starts with `D1`. Its `source()` is `None` and its `Display` is the
//!   `Debug` of the JavaScript *cause*, stack trace included, so the real texts are read
//!   from the JavaScript error itself. `D1Error`'s own `Display` panics in `worker` 0.8.7
//!   when the cause is an `Error` object (the request then hangs until it is cancelled), so
//!   nothing here formats a `D1Error`: its texts are read through `AsRef<js_sys::Error>`.
//! - `Error::UnknownJsError { message, cause, .. }` from `all()`, and for any JavaScript
//!   error whose message does not start with `D1`; `source()` yields the cause.
//! - `Error::JsError(String)` for a thrown string, `Error::RustError(String)` for text
//!   built in Rust.
//!
//! An error type of the user's own that forwards both `Display` and `source()` to a
//! `worker::Error` (thiserror's `#[error(transparent)]`) hides the `worker::Error` from the
//! chain: all that is left of a D1 variant is its `Display`, `D1: D1Error { cause:
//! JsValue(<name>: <message>\n<stack>) }`, which [`DisplayedD1Cause`] reads the cause from.
//!
//! Reading a `worker::Error` may copy its texts into `String`s (the JavaScript strings of a
//! D1 variant, the `Display` of variants that are not D1's), on the failure path only; every
//! other link is read without allocating.

use core::fmt;
use core::ops::ControlFlow;
use std::error::Error as StdError;

use worker::wasm_bindgen::JsCast;
use worker::{D1Error, Error, js_sys};

use super::head;
use crate::FailureClass;

/// JavaScript cause chains can be cyclic; `worker` stops at the same depth.
const MAX_CAUSE_DEPTH: usize = 16;

/// What [`for_each_text`] calls with each text: it breaks with the class a text decides.
type Visit<'v> = &'v mut dyn FnMut(&str) -> ControlFlow<FailureClass>;

/// A link of a chain that is read from JavaScript texts rather than by its `Display`: a
/// `worker::Error`, or an error whose `Display` is that of a D1 variant.
///
/// Its `Display` is the link's log text: for a `worker::Error` its message, then each cause
/// not already part of it (D1 repeats the cause in the message: `D1_ERROR: <cause>`); for a
/// D1 variant's `Display`, the JavaScript cause shown in it.
#[derive(Clone, Copy)]
pub(super) enum WorkerLink<'e> {
    /// A `worker::Error` in the chain.
    Error(&'e Error),
    /// The JavaScript cause shown in a D1 variant's `Display`.
    DisplayedD1(DisplayedD1Cause<'e>),
}

impl<'e> WorkerLink<'e> {
    /// How to read `link`, when this module knows it; `None` to read it by its `Display`.
    /// The chain walk decides the same with `Link::of`, which reads a link's `source()` once.
    #[cfg(test)]
    fn of(link: &'e (dyn StdError + 'static)) -> Option<Self> {
        if let Some(error) = link.downcast_ref::<Error>() {
            return Some(WorkerLink::Error(error));
        }
        Self::displayed(link, link.source())
    }

    /// How to read a link that is not a `worker::Error`, given as its `Display` and its
    /// `source()`: as a D1 variant's `Display` if it shows one, else `None`.
    pub(super) fn displayed(
        text: &'e dyn fmt::Display,
        source: Option<&'e (dyn StdError + 'static)>,
    ) -> Option<Self> {
        shows_d1_debug(text).then_some(WorkerLink::DisplayedD1(DisplayedD1Cause { text, source }))
    }

    /// The next link of the chain: a `worker::Error`'s `source()` (an `UnknownJsError`'s
    /// cause), called on the type itself, so that a `worker::Error` the chain starts with
    /// is never made a `dyn Error` (see `Link::worker`); or the `source()` of the error
    /// that shows a D1 variant's `Display`.
    pub(super) fn source(self) -> Option<&'e (dyn StdError + 'static)> {
        match self {
            WorkerLink::Error(error) => StdError::source(error),
            WorkerLink::DisplayedD1(cause) => cause.source,
        }
    }

    /// The class this link decides, if any.
    ///
    /// The first text of a `worker::Error` that decides, decides the link: the JavaScript
    /// message first, then its causes, so `D1_ERROR: Network connection lost.` decides
    /// before its cause is read, and a bare `D1_ERROR` (wrangler before 3.1.1) leaves the
    /// decision to the cause.
    pub(super) fn class(self) -> Option<FailureClass> {
        match self {
            WorkerLink::Error(error) => {
                let verdict = for_each_text(error, &mut |text| match head::text_class(&text) {
                    Some(class) => ControlFlow::Break(class),
                    None => ControlFlow::Continue(()),
                });
                match verdict {
                    ControlFlow::Break(class) => Some(class),
                    ControlFlow::Continue(()) => None,
                }
            }
            WorkerLink::DisplayedD1(cause) => head::text_class(&cause),
        }
    }
}

impl fmt::Display for WorkerLink<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkerLink::Error(error) => write_worker_text(error, f),
            WorkerLink::DisplayedD1(cause) => cause.fmt(f),
        }
    }
}

/// Calls `visit` with each text of one `worker::Error`, outermost first, until it breaks.
/// Its `source()` (an `UnknownJsError`'s cause) is not visited: the chain walk reaches it
/// as the next link.
///
/// `visit` is a trait object and its break is always a class: the classifier and the log's
/// writer then share one copy of this walk and of its calls into JavaScript, which a Worker
/// would otherwise compile once for each.
fn for_each_text(error: &Error, visit: Visit<'_>) -> ControlFlow<FailureClass> {
    match error {
        Error::D1(d1) => for_each_js_text(d1, visit),
        Error::UnknownJsError { message, .. } => visit(message),
        Error::JsError(text) | Error::RustError(text) => visit(text),
        // The remaining variants are not D1's, and their `Display` is plain text.
        other => visit(&other.to_string()),
    }
}

/// The JavaScript error's message, then each `cause` that is an `Error` (its message) or a
/// string, stopping at the first that is neither.
fn for_each_js_text(d1: &D1Error, visit: Visit<'_>) -> ControlFlow<FailureClass> {
    let outer: &js_sys::Error = d1.as_ref();
    visit(&String::from(outer.message()))?;
    let mut cause = outer.cause();
    for _ in 0..MAX_CAUSE_DEPTH {
        if let Some(error) = cause.dyn_ref::<js_sys::Error>() {
            visit(&String::from(error.message()))?;
            cause = error.cause();
        } else {
            if let Some(text) = cause.as_string() {
                visit(&text)?;
            }
            break;
        }
    }
    ControlFlow::Continue(())
}

fn write_worker_text(error: &Error, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let mut written = String::new();
    let _ = for_each_text(error, &mut |text| {
        if written.is_empty() {
            written.push_str(text);
        } else if !text.is_empty()
            && super::head::find(written.as_bytes(), text.as_bytes()).is_none()
        {
            written.push_str(" (cause: ");
            written.push_str(text);
            written.push(')');
        }
        ControlFlow::Continue(())
    });
    f.write_str(&written)
}

/// `worker::Error`'s `Display` of a D1 variant starts with this, then whitespace (it is
/// pretty-printed), then [`D1_DEBUG_CAUSE`].
const D1_DEBUG_VARIANT: &str = "D1: D1Error {";
const D1_DEBUG_CAUSE: &str = "cause: JsValue(";

/// Whether a link's `Display` is that of a D1 variant. Stops formatting at the first byte
/// that differs, so other links cost a few bytes of formatting.
fn shows_d1_debug(link: &dyn fmt::Display) -> bool {
    let mut discard = Discard;
    let mut probe = AfterD1Debug::new(&mut discard);
    let _ = fmt::write(&mut probe, format_args!("{link}"));
    probe.state == Match::Cause(D1_DEBUG_CAUSE.len())
}

/// Writes what follows `D1: D1Error { cause: JsValue(` in a link's `Display`: the
/// JavaScript cause as `<name>: <message>`, then its stack. Writes nothing when the
/// `Display` is not that of a D1 variant.
#[derive(Clone, Copy)]
pub(super) struct DisplayedD1Cause<'e> {
    /// The link's `Display`.
    text: &'e dyn fmt::Display,
    /// The link's `source()`, the next link of the chain.
    source: Option<&'e (dyn StdError + 'static)>,
}

impl fmt::Display for DisplayedD1Cause<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut after = AfterD1Debug::new(f);
        let written = fmt::write(&mut after, format_args!("{}", self.text));
        match after.state {
            // Our own stop at a mismatch; the text is simply not a D1 variant's.
            Match::Mismatch => Ok(()),
            _ => written,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Match {
    /// This many bytes of [`D1_DEBUG_VARIANT`] matched.
    Variant(usize),
    /// The variant matched; whitespace before the field.
    Space,
    /// This many bytes of [`D1_DEBUG_CAUSE`] matched; all of them: forwarding the rest.
    Cause(usize),
    Mismatch,
}

/// A `fmt::Write` that matches the D1 variant's `Display` prefix and forwards what follows.
///
/// Its output is a trait object: the probe and the log's writer share one copy of this
/// code, which a Worker would otherwise compile once for each.
struct AfterD1Debug<'w> {
    out: &'w mut dyn fmt::Write,
    state: Match,
}

impl<'w> AfterD1Debug<'w> {
    fn new(out: &'w mut dyn fmt::Write) -> Self {
        AfterD1Debug {
            out,
            state: Match::Variant(0),
        }
    }

    fn step(&self, byte: u8) -> Match {
        let expect = |pattern: &str, at: usize| pattern.as_bytes().get(at) == Some(&byte);
        match self.state {
            Match::Variant(at) if expect(D1_DEBUG_VARIANT, at) => {
                if at + 1 == D1_DEBUG_VARIANT.len() {
                    Match::Space
                } else {
                    Match::Variant(at + 1)
                }
            }
            Match::Space if byte.is_ascii_whitespace() => Match::Space,
            Match::Space if expect(D1_DEBUG_CAUSE, 0) => Match::Cause(1),
            Match::Cause(at) if at < D1_DEBUG_CAUSE.len() && expect(D1_DEBUG_CAUSE, at) => {
                Match::Cause(at + 1)
            }
            _ => Match::Mismatch,
        }
    }
}

impl fmt::Write for AfterD1Debug<'_> {
    fn write_char(&mut self, c: char) -> fmt::Result {
        super::write_char(self, c)
    }

    fn write_str(&mut self, text: &str) -> fmt::Result {
        for (index, byte) in text.bytes().enumerate() {
            if self.state == Match::Cause(D1_DEBUG_CAUSE.len()) {
                // The prefix is ASCII, so `index` is a character boundary.
                return self.out.write_str(text.get(index..).unwrap_or_default());
            }
            self.state = self.step(byte);
            if self.state == Match::Mismatch {
                return Err(fmt::Error);
            }
        }
        Ok(())
    }
}

/// The output of [`shows_d1_debug`]'s probe, which only needs to know whether it matched.
struct Discard;

impl fmt::Write for Discard {
    fn write_str(&mut self, _: &str) -> fmt::Result {
        // Stop the formatting: the prefix matched, and the rest is not needed.
        Err(fmt::Error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use worker::wasm_bindgen::JsValue;

    /// What `all()` returns for a real D1 failure. `original` is the JavaScript error,
    /// which native tests cannot create; `undefined` needs no JavaScript to hold or drop.
    fn unknown_js(message: &str, cause: Option<Error>) -> Error {
        Error::UnknownJsError {
            original: JsValue::UNDEFINED,
            name: Some("Error".to_owned()),
            message: message.to_owned(),
            code: None,
            cause: cause.map(Box::new),
        }
    }

    /// `Some(verdict)` when this module reads the link, `None` when it leaves it to `Display`.
    fn class_of(link: &(dyn StdError + 'static)) -> Option<Option<FailureClass>> {
        WorkerLink::of(link).map(WorkerLink::class)
    }

    fn log_text(link: &(dyn StdError + 'static)) -> Option<String> {
        WorkerLink::of(link).map(|text| text.to_string())
    }

    /// A user error that forwards `Display` and `source()`, as `#[error(transparent)]` does.
    #[derive(Debug)]
    struct Transparent(&'static str);

    impl fmt::Display for Transparent {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            // Written in pieces, as `{:#?}` writes it.
            for piece in self.0.split_inclusive([' ', '(']) {
                f.write_str(piece)?;
            }
            Ok(())
        }
    }

    impl StdError for Transparent {}

    const D1_DISPLAY: &str = "D1: D1Error {\n    cause: JsValue(Error: Network connection lost.\n    \
                              Error: Network connection lost.\n        at D1Database._send (d1:1:2)),\n}";

    #[test]
    fn unknown_js_error_is_decided_by_its_message_and_leaves_the_cause_to_the_chain() {
        let error = unknown_js(
            "D1_ERROR: Network connection lost.",
            Some(unknown_js(
                "UNIQUE constraint failed: SQLITE_CONSTRAINT",
                None,
            )),
        );
        assert_eq!(class_of(&error), Some(Some(FailureClass::MaybeExecuted)));

        let bare = unknown_js(
            "D1_ERROR",
            Some(unknown_js("Network connection lost.", None)),
        );
        assert_eq!(class_of(&bare), Some(None), "the cause is the next link's");
        let source = bare.source();
        assert_eq!(
            source.map(class_of),
            Some(Some(Some(FailureClass::MaybeExecuted)))
        );
    }

    /// A `worker::Error` a call failed with is read without being made a `dyn Error`
    /// (`Failure::of`): the same class and log text as through one, chain included.
    #[test]
    fn a_worker_error_read_as_its_own_type_reads_as_through_dyn_error() {
        use crate::classify::failure::Failure;
        let cases = [
            (
                unknown_js(
                    "D1_ERROR",
                    Some(unknown_js(
                        "D1_ERROR",
                        Some(unknown_js("Network connection lost.", None)),
                    )),
                ),
                FailureClass::MaybeExecuted,
                "D1_ERROR: Network connection lost.",
            ),
            (
                unknown_js(
                    "loading",
                    Some(unknown_js("UNIQUE: SQLITE_CONSTRAINT", None)),
                ),
                FailureClass::Permanent,
                "loading: UNIQUE: SQLITE_CONSTRAINT",
            ),
            (
                unknown_js("loading", Some(unknown_js("no rows", None))),
                FailureClass::Permanent,
                "loading",
            ),
            (
                Error::JsError("D1 DB is overloaded. Too many requests queued.".to_owned()),
                FailureClass::NotExecuted,
                "D1 DB is overloaded. Too many requests queued.",
            ),
            (
                Error::BindingError("DB".to_owned()),
                FailureClass::Permanent,
                "no binding found for `DB`",
            ),
        ];
        for (error, class, text) in cases {
            let own = Failure::of(&error);
            let erased = Failure::from_error(&error);
            assert_eq!((own.class(), own.to_string()), (class, text.to_owned()));
            assert_eq!(
                (erased.class(), erased.to_string()),
                (class, text.to_owned())
            );
        }
    }

    #[test]
    fn string_variants_are_read_as_messages() {
        let thrown = Error::JsError("D1 DB is overloaded. Too many requests queued.".to_owned());
        assert_eq!(class_of(&thrown), Some(Some(FailureClass::NotExecuted)));
        let rust = Error::RustError("Network connection lost.".to_owned());
        assert_eq!(class_of(&rust), Some(Some(FailureClass::MaybeExecuted)));
        let other = Error::RustError("no rows".to_owned());
        assert_eq!(class_of(&other), Some(None));
    }

    #[test]
    fn other_variants_are_read_by_their_display() {
        assert_eq!(
            log_text(&Error::BindingError("DB".to_owned())).as_deref(),
            Some("no binding found for `DB`")
        );
        assert_eq!(class_of(&Error::BodyUsed), Some(None));
    }

    #[test]
    fn worker_errors_log_their_message() {
        let error = unknown_js("D1_ERROR: internal error; reference = 1", None);
        assert_eq!(
            log_text(&error).as_deref(),
            Some("D1_ERROR: internal error; reference = 1")
        );
        let rust = Error::RustError("boom".to_owned());
        assert_eq!(log_text(&rust).as_deref(), Some("boom"));
    }

    #[test]
    fn a_transparent_wrapper_of_a_d1_variant_is_read_from_its_display() {
        let wrapper = Transparent(D1_DISPLAY);
        assert_eq!(class_of(&wrapper), Some(Some(FailureClass::MaybeExecuted)));
        let text = log_text(&wrapper);
        assert_eq!(
            text.as_deref().and_then(|t| t.lines().next()),
            Some("Error: Network connection lost.")
        );
        // Compact `{:?}` output has no newline after the brace.
        let compact =
            Transparent("D1: D1Error { cause: JsValue(Error: UNIQUE: SQLITE_CONSTRAINT) }");
        assert_eq!(class_of(&compact), Some(Some(FailureClass::Permanent)));
        assert_eq!(
            log_text(&compact).as_deref(),
            Some("Error: UNIQUE: SQLITE_CONSTRAINT) }")
        );
    }

    #[test]
    fn a_d1_variant_displayed_char_by_char_is_read_as_a_whole() {
        let by_char = super::super::CharByChar(D1_DISPLAY);
        assert_eq!(class_of(&by_char), Some(Some(FailureClass::MaybeExecuted)));
        assert_eq!(
            log_text(&by_char).as_deref().and_then(|t| t.lines().next()),
            Some("Error: Network connection lost.")
        );
    }

    #[test]
    fn other_displays_are_left_to_the_classifier() {
        for text in [
            "Network connection lost.",
            "context: D1: D1Error { cause: JsValue(Error: Network connection lost.) }",
            "D1: D1Error { other: JsValue(Error: Network connection lost.) }",
            // One byte off in each part of the prefix: the variant, the field's first byte,
            // a later byte of the field.
            "D2: D1Error { cause: JsValue(Error: Network connection lost.) }",
            "D1: D1Error { kause: JsValue(Error: Network connection lost.) }",
            "D1: D1Error { cause: JsVal_e(Error: Network connection lost.) }",
            "D1: D1Error {",
            "D1: D1Error { cause: JsValue",
            "",
        ] {
            let wrapper = Transparent(text);
            assert_eq!(class_of(&wrapper), None, "{text:?}");
            assert!(log_text(&wrapper).is_none(), "{text:?}");
        }
    }

    /// An error of the user's own showing a D1 variant's `Display` passes the decision on
    /// to its own `source()` when the text shown decides nothing.
    #[test]
    fn a_displayed_d1_variant_that_decides_nothing_leaves_it_to_its_source() {
        #[derive(Debug)]
        struct Shown(&'static str, Error);
        impl fmt::Display for Shown {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
        }
        impl StdError for Shown {
            fn source(&self) -> Option<&(dyn StdError + 'static)> {
                Some(&self.1)
            }
        }
        let shown = Shown(
            "D1: D1Error { cause: JsValue(Error: D1_ERROR) }",
            unknown_js("Network connection lost.", None),
        );
        assert_eq!(
            class_of(&shown),
            Some(None),
            "the text shown decides nothing"
        );
        assert_eq!(
            crate::classify::classify(&shown),
            FailureClass::MaybeExecuted
        );
    }

    #[test]
    fn displayed_cause_writes_nothing_for_other_text() {
        let other = Transparent("Network connection lost.");
        let cause = DisplayedD1Cause {
            text: &other,
            source: None,
        };
        assert_eq!(cause.to_string(), "");
    }
}
