//! A failed attempt as the driver sees it: its class, and a text for the logs.
//!
//! Why a type between the error and the driver: the driver decides with the class and logs
//! the text, and both come from one reading of the error. A [`Failure`] made from an error
//! chain keeps the link that decided its class, so the `d1.failure` log field is written
//! from the links already read, without walking or classifying the chain a second time
//! (which would cost a second pass over every link, and could even disagree with the first
//! if a `Display` or `source()` changed in between).

use core::fmt;
use std::error::Error;

use crate::FailureClass;
use crate::classify::{ChainText, classify_chain, classify_display};

/// A classified failure, borrowed from the caller's error value for as long as the driver
/// decides and logs; the error itself is never moved or changed.
#[derive(Clone, Copy)]
pub struct Failure<'e> {
    class: FailureClass,
    text: Text<'e>,
}

#[derive(Clone, Copy)]
enum Text<'e> {
    /// The outermost link and the one that decided, as the classifier read them.
    Chain(ChainText<'e>),
    Display(&'e dyn fmt::Display),
}

impl<'e> Failure<'e> {
    /// Classifies an error and its `source()` chain with [`classify`](crate::classify()).
    ///
    /// The failure keeps the outermost link and the link that decided the class; its
    /// `Display` (the `d1.failure` log field) is the first line of the outermost message and,
    /// when a deeper link decided, `: ` and the first line of that link. Formatting it reads
    /// only those two links: the chain is not walked or classified again.
    pub fn from_error(error: &'e (dyn Error + 'static)) -> Self {
        let (class, text) = classify_chain(error);
        Failure {
            class,
            text: Text::Chain(text),
        }
    }

    /// Classifies a value that is only `Display` by its text, read like one link of a chain.
    /// Its `Display` is the value's own.
    pub fn from_display(error: &'e dyn fmt::Display) -> Self {
        Failure {
            class: classify_display(error),
            text: Text::Display(error),
        }
    }

    /// A failure whose class was decided by the caller. Its `Display` is the value's own.
    pub fn with_class(class: FailureClass, error: &'e dyn fmt::Display) -> Self {
        Failure {
            class,
            text: Text::Display(error),
        }
    }

    /// The failure's class.
    pub fn class(&self) -> FailureClass {
        self.class
    }
}

impl fmt::Display for Failure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.text {
            Text::Chain(text) => fmt::Display::fmt(&text, f),
            Text::Display(display) => fmt::Display::fmt(display, f),
        }
    }
}

impl fmt::Debug for Failure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Failure")
            .field("class", &self.class)
            .field("text", &format_args!("{self}"))
            .finish()
    }
}

/// Autoref dispatch: the macro calls `(&&&Probe(&error)).d1_retry_failure()` and the most
/// specific of these impls that the error type satisfies is picked at compile time. This is
/// what lets `#[d1_retry]` accept `std::error::Error` types (read with their cause chain),
/// `anyhow::Error`-like types (`AsRef<dyn Error>`), and plain `Display` types such as
/// `String`, without a wrapper type forced on the user.
pub struct Probe<'e, E: ?Sized>(pub &'e E);

/// Picked for `E: std::error::Error + 'static`.
pub trait ViaError<'e> {
    /// The classified failure.
    fn d1_retry_failure(&self) -> Failure<'e>;
}

impl<'e, E: Error + 'static> ViaError<'e> for &&Probe<'e, E> {
    fn d1_retry_failure(&self) -> Failure<'e> {
        Failure::from_error(self.0)
    }
}

/// Picked for `E: AsRef<dyn Error + Send + Sync>`, such as `anyhow::Error` and boxed errors.
pub trait ViaAsRefError<'e> {
    /// The classified failure.
    fn d1_retry_failure(&self) -> Failure<'e>;
}

impl<'e, E> ViaAsRefError<'e> for &Probe<'e, E>
where
    E: AsRef<dyn Error + Send + Sync + 'static> + ?Sized,
{
    fn d1_retry_failure(&self) -> Failure<'e> {
        let error: &'e (dyn Error + Send + Sync + 'static) = self.0.as_ref();
        Failure::from_error(error)
    }
}

/// Picked for any other `E: Display`, classified by its text alone.
pub trait ViaDisplay<'e> {
    /// The classified failure.
    fn d1_retry_failure(&self) -> Failure<'e>;
}

impl<'e, E: fmt::Display> ViaDisplay<'e> for Probe<'e, E> {
    fn d1_retry_failure(&self) -> Failure<'e> {
        Failure::from_display(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_class_and_text() {
        let message = "D1_ERROR: Network connection lost.";
        let failure = Failure::from_display(&message);
        assert_eq!(
            format!("{failure:?}"),
            r#"Failure { class: MaybeExecuted, text: D1_ERROR: Network connection lost. }"#
        );
    }
}
