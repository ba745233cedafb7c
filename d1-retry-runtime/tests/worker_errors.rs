//! `worker::Error` through the public classifier and the retry driver, natively.
//!
//! The variants that hold only Rust data (`UnknownJsError` with an `undefined` original,
//! `JsError`, `RustError`) are built here; the `D1` variant holds a JavaScript error that
//! only a Worker can make, so the end-to-end suite (`e2e/`) covers it inside workerd.
#![cfg(feature = "worker")]

use core::cell::Cell;
use core::time::Duration;
use std::cell::RefCell;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Once;

use d1_retry_runtime::__private::Failure;
use d1_retry_runtime::{FailureClass, Retry, RetryPolicy, classify};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use worker::Error;
use worker::wasm_bindgen::JsValue;

/// What `all()` returns: `D1_ERROR: <detail>` with the detail as its cause.
fn from_all(detail: &str) -> Error {
    Error::UnknownJsError {
        original: JsValue::UNDEFINED,
        name: Some("Error".to_owned()),
        message: format!("D1_ERROR: {detail}"),
        code: None,
        cause: Some(Box::new(Error::UnknownJsError {
            original: JsValue::UNDEFINED,
            name: Some("Error".to_owned()),
            message: detail.to_owned(),
            code: None,
            cause: None,
        })),
    }
}

/// A user's error with a context message and the `worker::Error` as its source.
#[derive(Debug)]
struct Repo {
    context: &'static str,
    source: Error,
}

impl fmt::Display for Repo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.context)
    }
}

impl StdError for Repo {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.source)
    }
}

/// A user's error that forwards `Display` and `source()` to a `worker::Error`, as
/// thiserror's `#[error(transparent)]` does: the `worker::Error` is not in the chain.
#[derive(Debug)]
struct Transparent(String);

impl fmt::Display for Transparent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for Transparent {}

/// `worker::Error`'s `Display` of a D1 variant (`D1: {:#?}` of the `D1Error`), as observed.
fn d1_display(cause: &str) -> String {
    format!(
        "D1: D1Error {{\n    cause: JsValue(Error: {cause}\n    Error: {cause}\n        \
         at D1DatabaseSessionAlwaysPrimary._sendOrThrow (cloudflare-internal:d1-api:139:19)),\n}}"
    )
}

#[test]
fn all_shape_is_classified_by_its_messages() {
    let cases = [
        ("Network connection lost.", FailureClass::MaybeExecuted),
        (
            "D1 DB is overloaded. Too many requests queued.",
            FailureClass::NotExecuted,
        ),
        (
            "internal error; reference = 6cs6dbfq4tb5lmtrbc3t0lis",
            FailureClass::MaybeExecuted,
        ),
        (
            "D1 DB's isolate exceeded its memory limit and was reset.",
            FailureClass::Permanent,
        ),
        (
            "UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)",
            FailureClass::Permanent,
        ),
    ];
    for (detail, class) in cases {
        assert_eq!(classify(&from_all(detail)), class, "{detail}");
    }
}

#[test]
fn string_variants_are_classified_by_their_text() {
    let thrown =
        Error::JsError("Cannot resolve D1 DB due to transient issue on remote node.".into());
    assert_eq!(classify(&thrown), FailureClass::NotExecuted);
    let built = Error::RustError("Replica disconnected from primary".into());
    assert_eq!(classify(&built), FailureClass::MaybeExecuted);
    let other = Error::RustError("`id` must be an integer".into());
    assert_eq!(classify(&other), FailureClass::Permanent);
}

#[test]
fn a_worker_error_in_a_users_source_chain_decides() {
    let error = Repo {
        context: "loading user 7",
        source: from_all("Network connection lost."),
    };
    assert_eq!(classify(&error), FailureClass::MaybeExecuted);
    let permanent = Repo {
        context: "loading user 7",
        source: from_all("no such table: users: SQLITE_ERROR"),
    };
    assert_eq!(classify(&permanent), FailureClass::Permanent);
}

#[test]
fn a_transparent_wrapper_of_a_d1_variant_is_read_from_the_javascript_cause() {
    let lost = Transparent(d1_display("Network connection lost."));
    assert_eq!(classify(&lost), FailureClass::MaybeExecuted);
    let overloaded = Transparent(d1_display("D1 DB is overloaded. Too many requests queued."));
    assert_eq!(classify(&overloaded), FailureClass::NotExecuted);
    let unique = Transparent(d1_display(
        "UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT",
    ));
    assert_eq!(classify(&unique), FailureClass::Permanent);
    // The phrase must start the cause; echoed in SQL it is not a transient failure.
    let echoed = Transparent(d1_display(
        "D1_EXEC_ERROR: Error in line 1: SELECT 'Network connection lost.': no such column",
    ));
    assert_eq!(classify(&echoed), FailureClass::Permanent);
}

/// A user's error that writes its own prefix in front of the `worker::Error`'s `Display`, as
/// thiserror's `#[error("Database error: {0}")]` does, and keeps it as its source.
#[derive(Debug)]
struct Prefixed(Error);

impl fmt::Display for Prefixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Database error: {}", self.0)
    }
}

impl StdError for Prefixed {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

#[test]
fn a_users_prefix_in_front_of_a_worker_error_is_read_behind_the_prefix() {
    let lost = Prefixed(from_all("Network connection lost."));
    assert_eq!(
        lost.to_string(),
        "Database error: Error: D1_ERROR: Network connection lost."
    );
    assert_eq!(classify(&lost), FailureClass::MaybeExecuted);
    let failure = Failure::from_error(&lost);
    assert_eq!(
        failure.to_string(),
        "Database error: Error: D1_ERROR: Network connection lost."
    );
    let cannot_resolve = Prefixed(from_all(
        "Cannot resolve D1 DB due to transient issue on remote node.",
    ));
    assert_eq!(classify(&cannot_resolve), FailureClass::NotExecuted);
    let unique = Prefixed(from_all(
        "UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT",
    ));
    assert_eq!(classify(&unique), FailureClass::Permanent);
    let thrown = Prefixed(Error::JsError(
        "D1_EXEC_ERROR: Error in line 1: SELECT ' D1_ERROR: Network connection lost.'".into(),
    ));
    assert_eq!(classify(&thrown), FailureClass::Permanent);
}

/// A user's error whose `source()` counts how often it is called.
#[derive(Debug)]
struct CountingRepo {
    source: Error,
    sources: Cell<usize>,
}

impl fmt::Display for CountingRepo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("loading user 7")
    }
}

impl StdError for CountingRepo {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.sources.set(self.sources.get() + 1);
        Some(&self.source)
    }
}

#[test]
fn a_failure_keeps_the_worker_error_that_decided_and_logs_it_without_walking_again() {
    let error = CountingRepo {
        source: from_all("Network connection lost."),
        sources: Cell::new(0),
    };
    let failure = Failure::from_error(&error);
    assert_eq!(failure.class(), FailureClass::MaybeExecuted);
    let walked = error.sources.get();
    assert_eq!(walked, 1);
    assert_eq!(
        failure.to_string(),
        "loading user 7: D1_ERROR: Network connection lost."
    );
    assert_eq!(error.sources.get(), walked, "formatting walked the chain");
}

/// The `d1.failure` fields logged on each test thread that is capturing them.
///
/// One global subscriber, not one `set_default` per test: tracing caches each call site's
/// interest globally, and a site first reached on a thread with no subscriber (another test
/// of this binary that logs without one) can be cached as "never", dropping this test's
/// lines (it did, once, in a loaded CI run).
struct Failures;

thread_local! {
    static CAPTURED: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

impl Failures {
    /// Starts capturing this thread's `d1.failure` fields.
    fn capture() {
        static GLOBAL: Once = Once::new();
        GLOBAL.call_once(|| {
            let subscriber = tracing_subscriber::registry().with(Failures);
            tracing::subscriber::set_global_default(subscriber)
                .unwrap_or_else(|error| panic!("{error}"));
        });
        // A site another test reached with no subscriber, while this one was being set,
        // could still be cached as "never".
        tracing::callsite::rebuild_interest_cache();
        CAPTURED.with(|captured| *captured.borrow_mut() = Some(Vec::new()));
    }

    /// What this thread captured, ending the capture.
    fn take() -> Vec<String> {
        CAPTURED.with(|captured| captured.borrow_mut().take().unwrap_or_default())
    }
}

struct FailureField<'a>(&'a mut Option<String>);

impl Visit for FailureField<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "d1.failure" {
            *self.0 = Some(format!("{value:?}"));
        }
    }
}

impl<S: Subscriber> Layer<S> for Failures {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut failure = None;
        event.record(&mut FailureField(&mut failure));
        if let Some(failure) = failure {
            CAPTURED.with(|captured| {
                if let Some(seen) = captured.borrow_mut().as_mut() {
                    seen.push(failure);
                }
            });
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_read_failing_as_all_does_is_retried_and_logged_with_the_javascript_message() {
    Failures::capture();
    let calls = Cell::new(0);
    let result: Result<u32, Error> = Retry::new("users.list")
        .read_only(true)
        .policy(RetryPolicy::DEFAULT.with_base_delay(Duration::from_millis(1)))
        .run(|| {
            calls.set(calls.get() + 1);
            let attempt = calls.get();
            async move {
                if attempt < 3 {
                    Err(from_all("Network connection lost."))
                } else {
                    Ok(attempt)
                }
            }
        })
        .await;
    assert!(matches!(result, Ok(3)));
    assert_eq!(calls.get(), 3);
    let seen = Failures::take();
    // The JavaScript message, not `worker::Error`'s `Error: ...` Display.
    assert_eq!(
        seen,
        [
            "D1_ERROR: Network connection lost.",
            "D1_ERROR: Network connection lost."
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_write_failing_after_it_may_have_run_is_returned_unchanged() {
    let calls = Cell::new(0);
    let result: Result<(), Error> = Retry::new("orders.place")
        .read_only(false)
        .run(|| {
            calls.set(calls.get() + 1);
            async { Err(from_all("Network connection lost.")) }
        })
        .await;
    assert_eq!(calls.get(), 1);
    match result {
        Err(Error::UnknownJsError { message, .. }) => {
            assert_eq!(message, "D1_ERROR: Network connection lost.");
        }
        // `Debug` would format the `JsValue`, which needs JavaScript.
        Err(other) => panic!("expected the original error, got {other}"),
        Ok(()) => panic!("expected the original error, got Ok"),
    }
}
