//! The classifier against every D1 message in `shared/notes/d1-errors.md`, in the shapes
//! they reach Rust in, and against the traps listed there.

use std::cell::Cell;
use std::error::Error;
use std::fmt;

use d1_retry_runtime::__private::Failure;
use d1_retry_runtime::{FailureClass, classify, classify_message};
use proptest::prelude::*;

use FailureClass::{MaybeExecuted, NotExecuted, Permanent};

/// Counts allocations per thread, for `classifying_allocates_nothing`.
#[global_allocator]
static ALLOCATOR: test_support::CountingAllocator = test_support::CountingAllocator;

/// Every documented message, without its final period.
const DOCUMENTED: [(&str, FailureClass); 13] = [
    (
        "Cannot resolve D1 DB due to transient issue on remote node",
        NotExecuted,
    ),
    (
        "Internal error while starting up D1 DB storage caused object to be reset",
        NotExecuted,
    ),
    ("D1 DB is overloaded. Too many requests queued", NotExecuted),
    ("Network connection lost", MaybeExecuted),
    (
        "Internal error in D1 DB storage caused object to be reset",
        MaybeExecuted,
    ),
    ("D1 DB reset because its code was updated", MaybeExecuted),
    (
        "Can't read from request stream because client disconnected",
        MaybeExecuted,
    ),
    (
        "D1 DB is overloaded. Requests queued for too long",
        MaybeExecuted,
    ),
    (
        "internal error; reference = 6cs6dbfq4tb5lmtrbc3t0lis",
        MaybeExecuted,
    ),
    ("Replica disconnected from primary", MaybeExecuted),
    (
        "D1 DB storage operation exceeded timeout which caused object to be reset",
        Permanent,
    ),
    (
        "D1 DB's isolate exceeded its memory limit and was reset",
        Permanent,
    ),
    ("D1 DB exceeded its CPU time limit and was reset", Permanent),
];

const PREFIXES: [&str; 6] = [
    "",
    "Error: ",
    "D1_ERROR: ",
    "Error: D1_ERROR: ",
    "D1_ERROR: Error: ",
    "Error: D1_ERROR: D1_ERROR: ",
];

const TAILS: [&str; 6] = [
    "",
    ".",
    ". (retry later)",
    ".\n    at D1Database._send (cloudflare-internal:d1-api:130:22)",
    "\n    at D1Database._send (cloudflare-internal:d1-api:130:22)",
    " ",
];

/// Text an error type of the user's own writes in front of D1's message, marker included: the
/// `thiserror` style `#[error("Database error: {0}")]`, a context with `: `, and one that
/// keeps a JavaScript error's name on both sides.
const USER_PREFIXES: [&str; 3] = [
    "Database error: D1_ERROR: ",
    "repo failed: D1_ERROR: ",
    "Error: loading user 7 (users.find) D1_ERROR: Error: ",
];

/// The tails of [`TAILS`] a prefixed message may carry and still be recognized: all but the
/// SQLite code, which makes a prefixed message permanent.
const PREFIXED_TAILS: [&str; 6] = [
    "",
    ".",
    ". (retry later)",
    ".\n    at D1Database._send (cloudflare-internal:d1-api:130:22)",
    "\n    at D1Database._send (cloudflare-internal:d1-api:130:22)",
    " ",
];

/// An error with a fixed message and an optional cause, like `worker::Error::UnknownJsError`.
#[derive(Debug)]
struct Js {
    message: String,
    cause: Option<Box<dyn Error + 'static>>,
}

fn js(message: impl Into<String>) -> Js {
    Js {
        message: message.into(),
        cause: None,
    }
}

impl Js {
    fn caused_by(mut self, cause: impl Error + 'static) -> Self {
        self.cause = Some(Box::new(cause));
        self
    }
}

impl fmt::Display for Js {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for Js {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.cause.as_deref()
    }
}

/// Writes its text `piece` bytes at a time (on char boundaries), as derived `Debug` and
/// `write!` with many arguments do.
#[derive(Debug)]
struct Chunked {
    text: String,
    piece: usize,
}

fn chunked(text: &str, piece: usize) -> Chunked {
    Chunked {
        text: text.to_owned(),
        piece,
    }
}

impl fmt::Display for Chunked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.text.as_str();
        while !rest.is_empty() {
            let mut cut = self.piece.clamp(1, rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            let (piece, tail) = rest.split_at(cut);
            f.write_str(piece)?;
            rest = tail;
        }
        Ok(())
    }
}

impl Error for Chunked {}

/// Writes `text`, then fails by itself.
#[derive(Debug)]
struct Failing {
    text: &'static str,
    cause: Option<Js>,
}

impl fmt::Display for Failing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text)?;
        Err(fmt::Error)
    }
}

impl Error for Failing {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.cause.as_ref().map(|c| c as &(dyn Error + 'static))
    }
}

/// Ignores the errors its writer returns and goes on writing.
#[derive(Debug)]
struct Stubborn(&'static str);

impl fmt::Display for Stubborn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for _ in 0..50 {
            let _ = f.write_str(self.0);
        }
        Ok(())
    }
}

impl Error for Stubborn {}

/// Its own cause, for ever.
#[derive(Debug)]
struct Loop;

impl fmt::Display for Loop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("context")
    }
}

impl Error for Loop {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(self)
    }
}

fn classify_display(text: &dyn fmt::Display) -> FailureClass {
    Failure::from_display(text).class()
}

fn log_text(error: &(dyn Error + 'static)) -> String {
    Failure::from_error(error).to_string()
}

/// Every way to read one message must agree: as a `&str`, as a `Display`, as an error, and
/// written in small pieces.
#[track_caller]
fn assert_class(message: &str, expected: FailureClass) {
    assert_eq!(classify_message(message), expected, "message {message:?}");
    assert_eq!(classify_display(&message), expected, "display {message:?}");
    assert_eq!(classify(&js(message)), expected, "error {message:?}");
    for piece in [1, 3, 7] {
        assert_eq!(
            classify(&chunked(message, piece)),
            expected,
            "{piece}-byte pieces {message:?}"
        );
    }
}

#[test]
fn every_documented_message_bare_prefixed_with_and_without_its_tail() {
    for (phrase, class) in DOCUMENTED {
        for prefix in PREFIXES {
            for tail in TAILS {
                assert_class(&format!("{prefix}{phrase}{tail}"), class);
            }
        }
    }
}

#[test]
fn the_incident_message_as_it_was_logged() {
    assert_class(
        "D1_ERROR: internal error; reference = 6cs6dbfq4tb5lmtrbc3t0lis",
        MaybeExecuted,
    );
    assert_class(
        "Error: D1_ERROR: internal error; reference = 6cs6dbfq4tb5lmtrbc3t0lis",
        MaybeExecuted,
    );
    assert_class("internal error; reference = abc123", MaybeExecuted);
    assert_class("internal error; reference =", MaybeExecuted);
    assert_class("internal error; reference = ", MaybeExecuted);
}

#[test]
fn prefixes_may_stack_as_far_as_the_head_has_room() {
    let longest = "Internal error while starting up D1 DB storage caused object to be reset";
    assert_class(
        &format!("{}{longest}.", "Error: D1_ERROR: ".repeat(2)),
        NotExecuted,
    );
    // Beyond that the phrase's end is out of sight: not recognized, so permanent.
    assert_class(
        &format!("{}{longest}.", "Error: D1_ERROR: ".repeat(3)),
        Permanent,
    );
    // A short phrase fits behind more of them.
    assert_class(
        &format!("{}Network connection lost.", "D1_ERROR: ".repeat(7)),
        MaybeExecuted,
    );
}

#[test]
fn a_phrase_glued_to_more_letters_is_another_message() {
    for (phrase, _) in DOCUMENTED {
        // The incident's id is trailing detail, not part of the phrase.
        let phrase = phrase
            .strip_suffix(" 6cs6dbfq4tb5lmtrbc3t0lis")
            .unwrap_or(phrase);
        for tail in ["s", "X", "0", "_x", "-x", "'", "\"", "(x)", "é"] {
            assert_class(&format!("{phrase}{tail}"), Permanent);
            assert_class(&format!("D1_ERROR: {phrase}{tail}"), Permanent);
        }
    }
}

#[test]
fn only_the_documented_prefixes_are_skipped() {
    for prefix in [
        " ",
        "\n",
        "Error:",
        "error: ",
        "ERROR: ",
        "D1_ERROR:",
        "d1_error: ",
        "D1_ERROR ",
        "TypeError: ",
        "D1: ",
        "D1_EXEC_ERROR: ",
        "D1_EXEC_ERROR: Error in line 1: ",
        "D1_TYPE_ERROR: ",
        "D1_COLUMN_NOTFOUND: ",
        "loading user 7: ",
        "'",
    ] {
        for (phrase, _) in DOCUMENTED {
            assert_class(&format!("{prefix}{phrase}."), Permanent);
        }
    }
}

#[test]
fn case_is_exact() {
    for message in [
        "network connection lost.",
        "NETWORK CONNECTION LOST.",
        "Network Connection Lost.",
        "Internal error; reference = abc123",
        "INTERNAL ERROR; reference = abc123",
        "d1 DB is overloaded. Too many requests queued.",
        "D1 DB is overloaded. too many requests queued.",
        "replica disconnected from primary",
    ] {
        assert_class(message, Permanent);
    }
}

#[test]
fn partial_phrases_are_not_recognized() {
    for message in [
        "",
        ".",
        "Error: ",
        "D1_ERROR: ",
        "Error: D1_ERROR: ",
        "D1_ERROR",
        "Network",
        "Network connection",
        "internal error",
        "D1_ERROR: internal error",
        "internal error; reference",
        "internal error; reference=abc",
        // Both overloaded messages start like this, and they differ in class.
        "D1 DB is overloaded",
        "D1 DB is overloaded.",
        "D1 DB is overloaded. Too many requests",
        "D1 DB is overloaded. Requests queued",
        "D1 DB reset",
        "Replica disconnected",
        "caused object to be reset.",
        "Internal error",
        "Internal error in D1 DB storage",
        "Cannot resolve D1 DB",
    ] {
        assert_class(message, Permanent);
    }
}

#[test]
fn a_phrase_that_reaches_the_end_of_the_head_must_show_its_end() {
    // Stacks of 7- and 10-byte prefixes end every phrase at every byte position past 53, so
    // one of them ends exactly where the classifier's fixed head does. The glued letter
    // beyond it makes every one of these some other message.
    for (phrase, _) in DOCUMENTED {
        let phrase = phrase
            .strip_suffix(" 6cs6dbfq4tb5lmtrbc3t0lis")
            .unwrap_or(phrase);
        for errors in 0..16 {
            for d1_errors in 0..12 {
                let message = format!(
                    "{}{}{phrase}X and a long tail after it",
                    "Error: ".repeat(errors),
                    "D1_ERROR: ".repeat(d1_errors),
                );
                assert_class(&message, Permanent);
            }
        }
    }
}

#[test]
fn the_two_overloaded_messages_keep_their_own_classes() {
    assert_class(
        "D1 DB is overloaded. Too many requests queued.",
        NotExecuted,
    );
    assert_class(
        "D1 DB is overloaded. Requests queued for too long.",
        MaybeExecuted,
    );
}

#[test]
fn lookalikes_of_the_storage_resets_are_permanent() {
    // They share their tails with the two retryable storage resets.
    assert_class(
        "Internal error in D1 DB storage caused object to be reset.",
        MaybeExecuted,
    );
    assert_class(
        "Internal error while starting up D1 DB storage caused object to be reset.",
        NotExecuted,
    );
    for lookalike in [
        "D1 DB storage operation exceeded timeout which caused object to be reset.",
        "D1_ERROR: D1 DB storage operation exceeded timeout which caused object to be reset.",
        "Error: D1_ERROR: D1 DB's isolate exceeded its memory limit and was reset.",
        "D1 DB exceeded its CPU time limit and was reset.",
        "D1 DB storage operation exceeded timeout",
        "D1 DB exceeded its CPU time limit",
        "D1 DB's isolate exceeded its memory limit",
    ] {
        assert_class(lookalike, Permanent);
    }
}

#[test]
fn a_lookalike_decides_and_hides_a_transient_cause() {
    for lookalike in [
        "D1_ERROR: D1 DB storage operation exceeded timeout which caused object to be reset.",
        "D1_ERROR: D1 DB's isolate exceeded its memory limit and was reset.",
        "D1_ERROR: D1 DB exceeded its CPU time limit and was reset.",
    ] {
        let error = js(lookalike).caused_by(js("Network connection lost."));
        assert_eq!(classify(&error), Permanent, "{lookalike}");
    }
}

#[test]
fn phrases_quoted_in_sql_or_values_do_not_count() {
    for message in [
        "D1_EXEC_ERROR: Error in line 1: INSERT INTO t VALUES('Network connection lost.'): \
         no such table: t: SQLITE_ERROR",
        "D1_EXEC_ERROR: Error in line 1: SELECT 'D1 DB is overloaded. Too many requests queued.'",
        "D1_EXEC_ERROR: Network connection lost.",
        "Error: D1_ERROR: UNIQUE constraint failed: notes.body ('D1 DB is overloaded. Too many \
         requests queued.'): SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)",
        "UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT (extended: \
         SQLITE_CONSTRAINT_UNIQUE)",
        "CHECK constraint failed: Network connection lost: SQLITE_CONSTRAINT",
        "near \"Network\": syntax error at offset 0: SQLITE_ERROR",
        "no such table: t: SQLITE_ERROR",
        "Wrong number of parameter bindings for SQL query.",
        "D1_TYPE_ERROR: Type 'object' not supported for value 'Network connection lost.'",
        "D1_COLUMN_NOTFOUND: Column 'Network connection lost' does not exist",
        "loading 'Network connection lost.'",
    ] {
        assert_class(message, Permanent);
    }
}

#[test]
fn a_phrase_counts_only_on_the_first_line() {
    assert_class("loading user 7\nNetwork connection lost.", Permanent);
    assert_class(
        "Error: something else\n    at Network connection lost (x.js:1:1)",
        Permanent,
    );
    assert_class(
        "Error: Network connection lost.\n    at D1Database._send (x.js:1:1)",
        MaybeExecuted,
    );
}

#[test]
fn worker_d1_variant_display_is_not_read_as_text() {
    // `worker::Error::D1`'s Display wraps the JS error in `Debug` output. The plain-text path
    // does not parse it: a transient phrase inside is not at the start, so it stays
    // permanent. With the `worker` feature the worker module reads this shape itself.
    let display = "D1: D1Error {\n    cause: JsValue(Error: D1_ERROR: Network connection lost.\n        \
                   at D1Database._send (cloudflare-internal:d1-api:130:22)),\n}";
    if cfg!(not(feature = "worker")) {
        assert_class(display, Permanent);
    }
    let unique = "D1: D1Error {\n    cause: JsValue(Error: UNIQUE constraint failed: users.email: \
                  SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)\n        at x (y.js:1:1)),\n}";
    assert_class(unique, Permanent);
}

#[test]
fn the_all_shape_reads_outer_then_cause() {
    // `all()`: UnknownJsError { message: "D1_ERROR: <detail>", cause: Some(<detail>) }.
    let lost =
        js("Error: D1_ERROR: Network connection lost.").caused_by(js("Network connection lost."));
    assert_eq!(classify(&lost), MaybeExecuted);
    let unique = js("Error: D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT")
        .caused_by(js(
            "UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT",
        ));
    assert_eq!(classify(&unique), Permanent);
}

#[test]
fn a_context_error_passes_the_decision_to_its_source() {
    for (phrase, class) in DOCUMENTED {
        let error = js("loading user 7").caused_by(js(format!("D1_ERROR: {phrase}.")));
        assert_eq!(classify(&error), class, "{phrase}");
        let deeper =
            js("job 12").caused_by(js("loading user 7").caused_by(js(format!("{phrase}."))));
        assert_eq!(classify(&deeper), class, "{phrase}");
    }
    assert_eq!(
        classify(&js("loading user 7").caused_by(js("odd"))),
        Permanent
    );
}

#[test]
fn before_wrangler_3_1_1_the_detail_is_in_the_cause() {
    let error = js("D1_ERROR").caused_by(js("Network connection lost."));
    assert_eq!(classify(&error), MaybeExecuted);
    let error =
        js("Error: D1_ERROR").caused_by(js("D1 DB is overloaded. Too many requests queued."));
    assert_eq!(classify(&error), NotExecuted);
}

/// The links disagree: the least retryable decides, wherever it is in the chain (an outer
/// link may quote a client's text; D1's own error below says what happened).
#[test]
fn the_least_retryable_link_decides() {
    let maybe_outside = js("Network connection lost.")
        .caused_by(js("D1 DB is overloaded. Too many requests queued."));
    assert_eq!(classify(&maybe_outside), MaybeExecuted);
    let not_outside = js("D1 DB is overloaded. Too many requests queued.")
        .caused_by(js("Network connection lost."));
    assert_eq!(classify(&not_outside), MaybeExecuted);
    let transient_outside =
        js("Network connection lost.").caused_by(js("no such table: t: SQLITE_ERROR"));
    assert_eq!(classify(&transient_outside), Permanent);
    let agreeing = js("D1 DB is overloaded. Too many requests queued.").caused_by(js(
        "Cannot resolve D1 DB due to transient issue on remote node.",
    ));
    assert_eq!(classify(&agreeing), NotExecuted);
}

#[test]
fn a_query_error_stops_the_walk() {
    let echoed = "D1 DB is overloaded. Too many requests queued.";
    for outer in [
        "UNIQUE constraint failed: notes.body: SQLITE_CONSTRAINT",
        "Error: D1_ERROR: no such table: t: SQLITE_ERROR",
        "D1_EXEC_ERROR: Error in line 1: INSERT INTO t VALUES (1)",
        "D1_TYPE_ERROR: Type 'object' not supported",
        "D1_COLUMN_NOTFOUND: Column 'x' does not exist",
    ] {
        let error = js(outer).caused_by(js(echoed));
        assert_eq!(classify(&error), Permanent, "{outer}");
    }
}

#[test]
fn a_sqlite_code_far_beyond_the_head_still_stops_the_walk() {
    let outer = format!(
        "CHECK constraint failed: {}: SQLITE_CONSTRAINT",
        "length(body) < 10 AND ".repeat(20)
    );
    for piece in [1, 5, 64, outer.len()] {
        let error =
            js(chunked(&outer, piece).to_string()).caused_by(js("Network connection lost."));
        assert_eq!(classify(&error), Permanent, "{piece}");
    }
    let without_code = js("x".repeat(500)).caused_by(js("Network connection lost."));
    assert_eq!(classify(&without_code), MaybeExecuted);
}

#[test]
fn an_empty_display_decides_nothing() {
    assert_class("", Permanent);
    let error = js("").caused_by(js("D1 DB reset because its code was updated."));
    assert_eq!(classify(&error), MaybeExecuted);
    assert_eq!(
        log_text(&error),
        "D1 DB reset because its code was updated."
    );
    assert_eq!(log_text(&js("")), "");
}

#[test]
fn a_kibibyte_message_with_a_js_stack() {
    let mut message = String::from("Error: D1_ERROR: Network connection lost.");
    while message.len() < 1024 {
        message.push_str("\n    at D1Database._send (cloudflare-internal:d1-api:130:22)");
    }
    assert_class(&message, MaybeExecuted);
    assert_eq!(
        log_text(&js(message.clone())),
        "Error: D1_ERROR: Network connection lost."
    );

    let mut buried = String::from("Error: loading user 7");
    while buried.len() < 1024 {
        buried.push_str("\n    at Network connection lost. (x.js:1:1)");
    }
    assert_class(&buried, Permanent);
}

#[test]
fn non_ascii_around_the_head_boundary_is_fine() {
    for pad in 0..8 {
        let message = format!(
            "Network connection lost: {}{}",
            "x".repeat(pad),
            "é€𝄞".repeat(40)
        );
        assert_class(&message, MaybeExecuted);
        let message = format!("{}{}", "é".repeat(pad), "€".repeat(60));
        assert_class(&message, Permanent);
    }
    let long = "€".repeat(200);
    let text = log_text(&js(long));
    assert!(text.ends_with('…'), "{text}");
    assert!(text.len() <= 256 + '…'.len_utf8());
}

#[test]
fn the_log_text_keeps_256_bytes_of_a_line() {
    let exact = "a".repeat(256);
    assert_eq!(log_text(&js(exact.clone())), exact, "fits: no ellipsis");
    let over = "a".repeat(257);
    assert_eq!(log_text(&js(over)), format!("{exact}…"));
    for piece in [1, 10, 100] {
        assert_eq!(
            log_text(&chunked(&"b".repeat(1000), piece)),
            format!("{}…", "b".repeat(256)),
            "{piece}-byte pieces"
        );
    }
}

#[test]
fn the_log_text_stops_at_the_first_line_whatever_the_pieces() {
    let message = "Error: D1_ERROR: Network connection lost.\n    at D1Database._send (x.js:1:1)";
    for piece in [1, 5, 41, 42, 200] {
        assert_eq!(
            log_text(&chunked(message, piece)),
            "Error: D1_ERROR: Network connection lost.",
            "{piece}-byte pieces"
        );
    }
    let context = js("loading user 7\r\n(from job 12)").caused_by(chunked(message, 3));
    assert_eq!(
        log_text(&context),
        "loading user 7: Error: D1_ERROR: Network connection lost."
    );
}

#[test]
fn a_display_that_fails_by_itself_decides_nothing() {
    let alone = Failing {
        text: "Network connection lost.",
        cause: None,
    };
    assert_eq!(classify(&alone), Permanent);
    assert_eq!(classify_display(&alone), Permanent);

    let with_cause = Failing {
        text: "Network connection lost.",
        cause: Some(js("D1 DB is overloaded. Too many requests queued.")),
    };
    assert_eq!(classify(&with_cause), NotExecuted);

    // Logging it must not panic (`to_string` panics on a Display error).
    assert_eq!(
        log_text(&with_cause),
        "Network connection lost.: D1 DB is overloaded. Too many requests queued."
    );
}

#[test]
fn a_display_that_ignores_the_stop_is_still_read() {
    assert_eq!(
        classify(&Stubborn("Network connection lost. ")),
        MaybeExecuted
    );
    assert_eq!(classify(&Stubborn("loading ")), Permanent);
    assert_eq!(
        log_text(&Stubborn("line\n")),
        "line",
        "nothing after the first line"
    );
}

#[test]
fn a_long_transient_message_stops_early_and_is_still_transient() {
    // The reader's own stop comes back as the Display's error; it must not be taken for a
    // Display that failed by itself.
    let message = format!(
        "D1_ERROR: Network connection lost. {}",
        "detail ".repeat(100)
    );
    // The cause allows more, so only the outer link, read to its stop, can say this.
    let error = js(message).caused_by(js("D1 DB is overloaded. Too many requests queued."));
    assert_eq!(classify(&error), MaybeExecuted);
}

#[test]
fn a_chain_that_loops_ends() {
    assert_eq!(classify(&Loop), Permanent);
    assert_eq!(log_text(&Loop), "context");
}

#[test]
fn deep_chains_are_read() {
    let mut error = js("D1_ERROR: Replica disconnected from primary");
    for depth in 0..20 {
        error = js(format!("layer {depth}")).caused_by(error);
    }
    assert_eq!(classify(&error), MaybeExecuted);
    assert_eq!(
        log_text(&error),
        "layer 19: D1_ERROR: Replica disconnected from primary"
    );
}

#[test]
fn classify_display_reads_strings() {
    let owned = String::from("Error: D1_ERROR: D1 DB is overloaded. Too many requests queued.");
    assert_eq!(classify_display(&owned), NotExecuted);
    assert_eq!(classify_display(&"Network connection lost"), MaybeExecuted);
    assert_eq!(
        classify_display(&String::from(
            "UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT"
        )),
        Permanent
    );
    assert_eq!(classify_display(&String::new()), Permanent);
}

#[test]
fn every_documented_message_behind_a_users_prefix() {
    for (phrase, class) in DOCUMENTED {
        for prefix in USER_PREFIXES {
            for tail in PREFIXED_TAILS {
                assert_class(&format!("{prefix}{phrase}{tail}"), class);
            }
        }
    }
}

#[test]
fn the_most_common_prefixed_messages() {
    assert_class(
        "Database error: D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node.",
        NotExecuted,
    );
    assert_class(
        "repo failed: D1_ERROR: Network connection lost.",
        MaybeExecuted,
    );
    assert_class(
        "Error: Database error: D1_ERROR: D1 DB is overloaded. Requests queued for too long.",
        MaybeExecuted,
    );
    assert_class(
        "failed to save order 12 - D1_ERROR: internal error; reference = 6cs6dbfq4tb5lmtrbc3t0lis",
        MaybeExecuted,
    );
    // A long prefix pushes D1's part past the first 107 bytes the start is judged on.
    let long = format!(
        "{}: D1_ERROR: Internal error while starting up D1 DB storage caused object to be reset.",
        "handling POST /api/orders for tenant 4f1c ".repeat(5)
    );
    assert_class(&long, NotExecuted);
}

#[test]
fn a_prefixed_message_with_a_sqlite_code_is_permanent() {
    for (phrase, _) in DOCUMENTED {
        // Behind D1's own prefixes too: SQLite ran the statement, and the text after its
        // start may be the user's data (a trigger's `RAISE(FAIL, NEW.name || ..)`).
        for prefix in PREFIXES {
            assert_class(&format!("{prefix}{phrase}: SQLITE_IOERR"), Permanent);
            assert_class(
                &format!("{prefix}{phrase} (my tag): too long: SQLITE_CONSTRAINT"),
                Permanent,
            );
        }
        for prefix in USER_PREFIXES {
            assert_class(&format!("{prefix}{phrase}: SQLITE_IOERR"), Permanent);
            assert_class(
                &format!("{prefix}{phrase}.\n    at x (SQLITE_BUSY.js:1:1)"),
                Permanent,
            );
        }
        // The code in the user's own text counts too.
        assert_class(
            &format!("SQLITE_BUSY while saving: D1_ERROR: {phrase}."),
            Permanent,
        );
    }
    assert_class(
        "Database error: D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT \
         (extended: SQLITE_CONSTRAINT_UNIQUE)",
        Permanent,
    );
}

#[test]
fn a_prefixed_query_error_echoing_a_phrase_is_permanent() {
    for (phrase, _) in DOCUMENTED {
        for message in [
            format!("Database error: D1_EXEC_ERROR: Error in line 1: SELECT '{phrase}.'"),
            format!(
                "Database error: D1_EXEC_ERROR: Error in line 1: SELECT 'x D1_ERROR: {phrase}.'"
            ),
            format!("Database error: D1_EXEC_ERROR: D1_ERROR: {phrase}."),
            format!(
                "repo failed: D1_TYPE_ERROR: Type 'object' not supported for value ' D1_ERROR: {phrase}.'"
            ),
            format!("repo failed: D1_COLUMN_NOTFOUND: Column ' D1_ERROR: {phrase}' does not exist"),
        ] {
            assert_class(&message, Permanent);
            // It decides: the walk stops there, whatever the cause says.
            let error = js(message.clone()).caused_by(js("Network connection lost."));
            assert_eq!(classify(&error), Permanent, "{message}");
        }
    }
}

#[test]
fn a_phrase_without_the_marker_inside_a_users_text_does_not_count() {
    for (phrase, _) in DOCUMENTED {
        for message in [
            format!("Database error: {phrase}."),
            format!("repo failed: Error: {phrase}."),
            format!("repo failed after '{phrase}.'"),
            format!("loading user 7 (D1 said: {phrase}.)"),
            format!("Database error: D1_ERROR {phrase}."),
            format!("Database error: D1_ERROR:{phrase}."),
            format!("Database error: d1_error: {phrase}."),
            format!("Database error: D1_ERROR: then {phrase}."),
        ] {
            assert_class(&message, Permanent);
        }
    }
}

#[test]
fn a_marker_that_is_not_where_d1_puts_it_does_not_count() {
    for (phrase, _) in DOCUMENTED {
        for message in [
            // Glued to the user's text, or quoted by it.
            format!("Database error:D1_ERROR: {phrase}."),
            format!("repo failed 'D1_ERROR: {phrase}.'"),
            format!("repo failed (D1_ERROR: {phrase}.)"),
            format!("MY_D1_ERROR: {phrase}."),
            // Not on the first line.
            format!("repo failed\n D1_ERROR: {phrase}."),
            format!("repo failed\r\n D1_ERROR: {phrase}."),
            // Behind another D1 part: only the first `D1_` counts.
            format!("repo failed: D1_ERROR: odd D1_ERROR: {phrase}."),
            format!("Error: D1_ERROR: UNIQUE constraint failed: t.x (' D1_ERROR: {phrase}.')"),
            format!("repo failed: D1_FOO: D1_ERROR: {phrase}."),
            format!("D1_DB repo failed: D1_ERROR: {phrase}."),
        ] {
            assert_class(&message, Permanent);
        }
    }
}

#[test]
fn a_marker_followed_by_unknown_text_decides_nothing() {
    for message in [
        "Database error: D1_ERROR: something odd",
        "repo failed: D1_ERROR: UNIQUE constraint failed: users.email",
        "repo failed: D1_ERROR: Network",
        "repo failed: D1_ERROR: Network connection lostX",
        "repo failed: D1_ERROR: network connection lost.",
        "repo failed: D1_ERROR",
        "repo failed: D1_ERROR: ",
        "repo failed: D1_",
    ] {
        assert_class(message, Permanent);
        // Not recognized, so the source decides.
        let error = js(message).caused_by(js("D1 DB is overloaded. Too many requests queued."));
        assert_eq!(classify(&error), NotExecuted, "{message}");
    }
}

#[test]
fn a_prefixed_link_decides_the_chain_and_is_logged_alone() {
    let error = js("Database error: D1_ERROR: Network connection lost.")
        .caused_by(js("D1 DB is overloaded. Too many requests queued."));
    assert_eq!(classify(&error), MaybeExecuted);
    assert_eq!(
        log_text(&error),
        "Database error: D1_ERROR: Network connection lost."
    );
    let lookalike =
        js("Database error: D1_ERROR: D1 DB exceeded its CPU time limit and was reset.")
            .caused_by(js("Network connection lost."));
    assert_eq!(classify(&lookalike), Permanent);
}

/// An error that counts how often it is formatted and asked for its source, and whose
/// `Display` says something else from its second formatting on.
#[derive(Debug)]
struct Counted {
    first: &'static str,
    later: &'static str,
    displays: Cell<usize>,
    sources: Cell<usize>,
    cause: Option<Box<Counted>>,
}

fn counted(first: &'static str, later: &'static str, cause: Option<Counted>) -> Counted {
    Counted {
        first,
        later,
        displays: Cell::new(0),
        sources: Cell::new(0),
        cause: cause.map(Box::new),
    }
}

impl fmt::Display for Counted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.displays.set(self.displays.get() + 1);
        f.write_str(if self.displays.get() == 1 {
            self.first
        } else {
            self.later
        })
    }
}

impl Error for Counted {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.sources.set(self.sources.get() + 1);
        self.cause.as_deref().map(|c| c as &(dyn Error + 'static))
    }
}

#[test]
fn formatting_a_failure_does_not_walk_or_classify_the_chain_again() {
    // Classified once, the outer link is a context and the inner one decides. If formatting
    // read the chain again, the outer link would now decide (its Display changed), the
    // inner one would not be logged, and `source()` would be called again.
    let inner = counted(
        "D1_ERROR: Network connection lost.",
        "D1_ERROR: Network connection lost.",
        None,
    );
    let error = counted(
        "loading user 7",
        "loading user 7 (D1 DB is overloaded. Too many requests queued.)",
        Some(inner),
    );
    let failure = Failure::from_error(&error);
    assert_eq!(failure.class(), MaybeExecuted);
    let inner = error.cause.as_deref().expect("the inner link");
    let walked = (error.sources.get(), inner.sources.get());
    let (outer_displays, inner_displays) = (error.displays.get(), inner.displays.get());

    let text = failure.to_string();

    assert_eq!(
        (error.sources.get(), inner.sources.get()),
        walked,
        "formatting walked the chain"
    );
    assert_eq!(
        error.displays.get(),
        outer_displays + 1,
        "the outer link, once"
    );
    assert_eq!(
        inner.displays.get(),
        inner_displays + 1,
        "the deciding link, once"
    );
    assert_eq!(
        text,
        "loading user 7 (D1 DB is overloaded. Too many requests queued.): \
         D1_ERROR: Network connection lost."
    );
    assert_eq!(failure.class(), MaybeExecuted);
}

#[test]
fn formatting_a_failure_twice_reads_the_same_two_links() {
    let error = counted(
        "context",
        "context",
        Some(counted(
            "layer",
            "layer",
            Some(counted(
                "Replica disconnected from primary",
                "Replica disconnected from primary",
                None,
            )),
        )),
    );
    let failure = Failure::from_error(&error);
    let middle = error.cause.as_deref().expect("the middle link");
    let middle_displays = middle.displays.get();
    assert_eq!(
        failure.to_string(),
        "context: Replica disconnected from primary"
    );
    assert_eq!(
        failure.to_string(),
        "context: Replica disconnected from primary"
    );
    assert_eq!(
        middle.displays.get(),
        middle_displays,
        "a link that decided nothing is not read again"
    );
}

#[test]
fn classifying_allocates_nothing() {
    let long_prefix = format!(
        "{}: D1_ERROR: Network connection lost.",
        "handling a request ".repeat(10)
    );
    let messages = [
        "D1_ERROR: Network connection lost.",
        "Database error: D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node.",
        "repo failed: D1_EXEC_ERROR: Error in line 1: SELECT ' D1_ERROR: Network connection lost.'",
        "repo failed: D1_ERROR: Network connection lost.: SQLITE_IOERR",
        "loading user 7",
        long_prefix.as_str(),
    ];
    let errors: Vec<Js> = messages
        .iter()
        .map(|m| js(*m).caused_by(js("Network connection lost.")))
        .collect();
    let pieces: Vec<Chunked> = messages.iter().map(|m| chunked(m, 3)).collect();
    let before = test_support::allocations();
    for (message, (error, pieces)) in messages.iter().zip(errors.iter().zip(&pieces)) {
        std::hint::black_box(classify_message(std::hint::black_box(message)));
        std::hint::black_box(classify(std::hint::black_box(error)));
        std::hint::black_box(classify(std::hint::black_box(pieces)));
        std::hint::black_box(Failure::from_error(error).class());
    }
    assert_eq!(
        test_support::allocations() - before,
        0,
        "the classifier allocated"
    );
    // Guards the assertion above: the allocator counts on this thread.
    let before = test_support::allocations();
    std::hint::black_box(Box::new(7));
    assert!(test_support::allocations() > before);
}

/// A message built of D1's own pieces (its codes, prefixes and phrases, cut or whole), a
/// user's text and padding, so that its parts fall everywhere against the bytes the
/// streamed readers keep (107 of a start or a part): a user's lead, a run of D1 prefixes, a
/// phrase and what follows it (which makes a part of exactly 107 bytes often enough), or
/// the same pieces in any order.
fn pieced_message() -> impl Strategy<Value = String> {
    let phrase = prop_oneof![
        prop::sample::select(DOCUMENTED.map(|(phrase, _)| phrase.to_owned()).to_vec()),
        (0..DOCUMENTED.len(), 1usize..8).prop_map(|(index, cut)| {
            let phrase = DOCUMENTED[index].0;
            phrase[..phrase.len().saturating_sub(cut)].to_owned()
        }),
    ];
    let word = prop::sample::select(
        [
            "D1_ERROR: ",
            "Error: ",
            "D1_EXEC_ERROR: ",
            "D1_TYPE_ERROR",
            "D1_",
            "SQLITE_BUSY",
            "internal error; reference = 1f2e",
            ".",
            " ",
            "\n",
            ": ",
            "X",
        ]
        .map(str::to_owned)
        .to_vec(),
    );
    let free = prop::collection::vec(
        prop_oneof![
            phrase.clone(),
            word.clone(),
            (0usize..110).prop_map(|n| "x".repeat(n)),
            "[a-z ]{1,12}",
        ],
        1..8,
    )
    .prop_map(|pieces| pieces.concat());
    let shaped = (
        prop::sample::select(vec!["", "ctx ", "Database error: ", "x"]),
        prop::collection::vec(prop::sample::select(vec!["D1_ERROR: ", "Error: "]), 0..10),
        phrase,
        prop::collection::vec(word, 0..3),
    )
        .prop_map(|(lead, prefixes, phrase, tail)| {
            format!("{lead}{}{phrase}{}", prefixes.concat(), tail.concat())
        });
    prop_oneof![shaped, free]
}

proptest! {
    // Seeded, so that a run is repeated exactly; no failure file.
    #![proptest_config(ProptestConfig {
        cases: 2048,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0xD1_2026_1205),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The ways of reading one message (held whole, streamed in pieces of any size, as a
    /// `Display`) agree on texts made of D1's own pieces, which arbitrary strings almost
    /// never hold.
    #[test]
    fn a_message_of_d1_pieces_reads_alike_every_way(message in pieced_message(), piece in 1usize..40) {
        let class = classify_message(&message);
        prop_assert_eq!(classify_display(&message), class, "{:?}", message);
        prop_assert_eq!(classify(&chunked(&message, piece)), class, "{:?}", message);
    }
}

proptest! {
    // Seeded, as above.
    #![proptest_config(ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(0xD1_2026_1205),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_text_is_classified_without_panicking_and_consistently(text in any::<String>(), piece in 1usize..16) {
        let class = classify_message(&text);
        prop_assert_eq!(classify_display(&text), class);
        prop_assert_eq!(classify(&chunked(&text, piece)), class);
        let _ = log_text(&js(text.clone()).caused_by(js(text)));
    }

    #[test]
    fn a_documented_phrase_decides_whatever_whole_tail_follows(
        index in 0..DOCUMENTED.len(),
        prefix in 0..PREFIXES.len(),
        separator in prop::sample::select(vec!['.', ',', ';', ':', ' ', '\n', '\r', '\t']),
        tail in any::<String>(),
        piece in 1usize..16,
    ) {
        let (phrase, class) = DOCUMENTED[index];
        let message = format!("{}{phrase}{separator}{tail}", PREFIXES[prefix]);
        prop_assert_eq!(classify_message(&message), class);
        prop_assert_eq!(classify(&chunked(&message, piece)), class);
    }

    #[test]
    fn a_documented_phrase_after_other_text_never_counts(
        index in 0..DOCUMENTED.len(),
        lead in "[a-zA-Z0-9 '\"(),=]{1,40}",
    ) {
        let (phrase, _) = DOCUMENTED[index];
        prop_assert_eq!(classify_message(&format!("{lead}{phrase}.")), Permanent);
        prop_assert_eq!(classify_message(&format!("D1_ERROR: {lead}{phrase}.")), Permanent);
    }

    #[test]
    fn a_sqlite_code_anywhere_in_an_unrecognized_link_stops_the_walk(
        before in "[a-z ]{0,300}",
        after in "[A-Z_ ]{0,20}",
        piece in 1usize..32,
    ) {
        let outer = format!("{before}SQLITE_{after}");
        let error = js(chunked(&outer, piece).to_string()).caused_by(js("Network connection lost."));
        prop_assert_eq!(classify(&error), Permanent);
    }

    #[test]
    fn a_documented_phrase_behind_a_users_text_and_the_marker_decides(
        index in 0..DOCUMENTED.len(),
        user in "[a-zA-Z0-9 '\"(),=:/-]{0,200}",
        separator in prop::sample::select(vec!['.', ',', ';', ':', ' ', '\n', '\r', '\t']),
        tail in "[a-zA-Z0-9 '\"(),=:/\n-]{0,100}",
        piece in 1usize..16,
    ) {
        let (phrase, class) = DOCUMENTED[index];
        let message = format!("{user} D1_ERROR: {phrase}{separator}{tail}");
        prop_assert_eq!(classify_message(&message), class);
        prop_assert_eq!(classify(&chunked(&message, piece)), class);
        prop_assert_eq!(classify_display(&message), class);
    }

    #[test]
    fn a_sqlite_code_anywhere_makes_a_prefixed_message_permanent(
        index in 0..DOCUMENTED.len(),
        user in "[a-zA-Z0-9 ]{0,100}",
        tail in "[a-zA-Z0-9 .\n]{0,100}",
        at in 0usize..3,
        piece in 1usize..16,
    ) {
        let (phrase, _) = DOCUMENTED[index];
        let code = "SQLITE_BUSY";
        let message = match at {
            0 => format!("{code} {user} D1_ERROR: {phrase}.{tail}"),
            1 => format!("{user} D1_ERROR: {phrase}.{tail}{code}"),
            _ => format!("{user} D1_ERROR: {phrase}. {code}{tail}"),
        };
        prop_assert_eq!(classify_message(&message), Permanent);
        prop_assert_eq!(classify(&chunked(&message, piece)), Permanent);
    }
}
