//! Captures the log lines of one test thread.
//!
//! One global subscriber routes each line to its thread's capture: a scoped subscriber per
//! test (`set_default`) races with tests that log without one, because tracing caches each
//! call site's interest globally, and a site first reached on a thread with no subscriber
//! can be cached as "never", silently dropping another test's lines.

use std::cell::RefCell;
use std::io;
use std::sync::{Arc, Mutex, Once, PoisonError};

/// Every log line written on this thread while its capture guard lives.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

thread_local! {
    static CAPTURING: RefCell<Option<Logs>> = const { RefCell::new(None) };
}

/// Stops the thread's capture when dropped.
pub struct CaptureGuard(());

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        CAPTURING.with(|capturing| capturing.borrow_mut().take());
    }
}

/// Writes to the capture of the thread that logs, if it has one.
struct ThreadWriter;

impl io::Write for ThreadWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        CAPTURING.with(|capturing| match capturing.borrow_mut().as_mut() {
            Some(logs) => logs.write(buf),
            None => Ok(buf.len()),
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Everything captured so far, as text.
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Fails the test, showing every captured line, unless they hold `text`
    /// (`d1.withheld="deadline"`, a message).
    #[track_caller]
    pub fn assert_contains(&self, text: &str) {
        let captured = self.text();
        assert!(captured.contains(text), "no {text} in:\n{captured}");
    }

    /// Everything captured so far, one string a line.
    pub fn lines(&self) -> Vec<String> {
        self.text().lines().map(str::to_owned).collect()
    }

    /// Captures the logs of this thread (a current-thread tokio test) until the guard drops.
    ///
    /// The first call installs the routing subscriber as the global default: a test binary
    /// that captures must not install another one.
    pub fn capture() -> (Self, CaptureGuard) {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_writer(|| ThreadWriter)
                .without_time()
                .with_ansi(false)
                .finish();
            tracing::subscriber::set_global_default(subscriber)
                .expect("no other global subscriber in this test binary");
        });
        let logs = Logs::default();
        CAPTURING.with(|capturing| *capturing.borrow_mut() = Some(logs.clone()));
        (logs, CaptureGuard(()))
    }
}

impl io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
