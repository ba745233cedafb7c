//! The log lines and their fields, captured with a test subscriber.

use std::fmt;
use std::sync::{Arc, Mutex};

use d1_retry_runtime::Retry;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

#[derive(Clone, Debug, Default)]
struct Line {
    level: Option<Level>,
    fields: Vec<(String, String)>,
}

impl Line {
    fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.fields
            .push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.fields
            .push((field.name().to_owned(), value.to_owned()));
    }
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Line>>>);

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut line = Line {
            level: Some(*event.metadata().level()),
            ..Line::default()
        };
        event.record(&mut line);
        self.0.lock().unwrap().push(line);
    }
}

#[derive(Debug)]
struct DbError(&'static str);

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for DbError {}

async fn failing_twice(calls: &std::cell::Cell<u32>, message: &'static str) -> Result<(), DbError> {
    calls.set(calls.get() + 1);
    if calls.get() <= 2 {
        Err(DbError(message))
    } else {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn each_retry_logs_the_documented_fields() {
    let capture = Capture::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let calls = std::cell::Cell::new(0);
    Retry::new("users.find")
        .read_only(true)
        .seed(11)
        .run(|| failing_twice(&calls, "D1_ERROR: Network connection lost."))
        .await
        .unwrap();

    let lines = capture.0.lock().unwrap().clone();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    for (n, line) in (1..).zip(&lines) {
        assert_eq!(line.level, Some(Level::WARN));
        assert_eq!(line.get("message"), Some("D1 transient failure, retrying"));
        assert_eq!(line.get("d1.operation"), Some("users.find"));
        assert_eq!(line.get("d1.read_only"), Some("true"));
        assert_eq!(line.get("d1.attempt"), Some(n.to_string().as_str()));
        assert_eq!(line.get("d1.max_attempts"), Some("5"));
        assert_eq!(line.get("d1.failure_class"), Some("maybe_executed"));
        assert_eq!(
            line.get("d1.failure"),
            Some("D1_ERROR: Network connection lost.")
        );
        let delay: u64 = line.get("d1.delay_ms").unwrap().parse().unwrap();
        let (lo, hi) = if n == 1 { (160, 240) } else { (320, 480) };
        assert!((lo..=hi).contains(&delay), "attempt {n}: {delay} ms");
    }
}

#[tokio::test(start_paused = true)]
async fn giving_up_logs_once() {
    let capture = Capture::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let calls = std::cell::Cell::new(0);
    let result = Retry::new("users.insert")
        .run(|| failing_twice(&calls, "D1_ERROR: internal error; reference = 1f2e"))
        .await;
    assert!(result.is_err());

    let lines = capture.0.lock().unwrap().clone();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let line = &lines[0];
    assert_eq!(line.level, Some(Level::WARN));
    assert_eq!(line.get("message"), Some("D1 failure, not retried"));
    assert_eq!(line.get("d1.withheld"), Some("maybe_executed_write"));
    assert_eq!(line.get("d1.operation"), Some("users.insert"));
    assert_eq!(line.get("d1.read_only"), Some("false"));
    assert_eq!(line.get("d1.failure_class"), Some("maybe_executed"));
    assert_eq!(line.get("d1.attempt"), Some("1"));
}

#[tokio::test(start_paused = true)]
async fn exhausting_the_schedule_logs_every_retry_then_gives_up_once() {
    let capture = Capture::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let policy = d1_retry_runtime::RetryPolicy::DEFAULT.with_max_attempts(2);
    let calls = std::cell::Cell::new(0);
    let result = Retry::new("users.find")
        .read_only(true)
        .policy(policy)
        .run(|| failing_twice(&calls, "D1_ERROR: Network connection lost."))
        .await;
    assert!(result.is_err());
    let lines = capture.0.lock().unwrap().clone();
    let messages: Vec<_> = lines
        .iter()
        .map(|l| l.get("message").unwrap().to_owned())
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0], "D1 transient failure, retrying");
    assert_eq!(messages[1], "D1 failure, not retried");
    assert_eq!(lines[1].get("d1.withheld"), Some("exhausted"));
    assert_eq!(lines[1].get("d1.attempt"), Some("2"));
}

#[tokio::test(start_paused = true)]
async fn permanent_first_failures_stay_below_warn() {
    let capture = Capture::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let calls = std::cell::Cell::new(0);
    let _ = Retry::new("users.insert")
        .run(|| failing_twice(&calls, "D1_ERROR: no such table: users: SQLITE_ERROR"))
        .await;
    let lines = capture.0.lock().unwrap().clone();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].level, Some(Level::DEBUG));
    assert_eq!(lines[0].get("d1.failure_class"), Some("permanent"));
    assert_eq!(lines[0].get("d1.withheld"), Some("permanent"));
}
