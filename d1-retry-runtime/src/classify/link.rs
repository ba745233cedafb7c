//! One link of an error chain, read the way its type calls for.
//!
//! Why a type of its own: with the `worker` feature, a `worker::Error` must be read from the
//! JavaScript texts it carries instead of its `Display` (a D1 variant's is a `Debug` dump,
//! and `D1Error`'s own `Display` panics). Deciding how to read a link costs a downcast and a
//! few bytes of formatting, so it is decided once, when the chain is walked; the class and
//! the log text then read the link the same way, and the log text reuses the decision.

use core::fmt;
use std::error::Error;

use super::{head, log_text};
use crate::FailureClass;

#[cfg(feature = "worker")]
use super::worker_error::WorkerLink;

/// One link of an error chain and how it is read.
#[derive(Clone, Copy)]
pub(super) enum Link<'e> {
    /// Read by its `Display`; `source` is its `source()`, the next link.
    Display {
        text: &'e dyn fmt::Display,
        source: Option<&'e (dyn Error + 'static)>,
    },
    /// Read from the JavaScript texts of a `worker::Error`.
    #[cfg(feature = "worker")]
    Worker(WorkerLink<'e>),
}

impl<'e> Link<'e> {
    /// Decides how to read `error`.
    pub(super) fn of(error: &'e (dyn Error + 'static)) -> Self {
        #[cfg(feature = "worker")]
        if let Some(error) = error.downcast_ref::<worker::Error>() {
            return Link::worker(error);
        }
        Link::shown(error, error.source())
    }

    /// The outermost link of an error whose type is known and is not a `worker::Error`,
    /// given as its `Display` and its `source()`: read as [`of`](Self::of) reads it, without
    /// making the error a `dyn Error`. `Failure::of` reads every error type through here
    /// but a `worker::Error`; a `dyn Error` of its type would link its `Debug` (the
    /// vtable's), which nothing calls, and a `worker::Error`'s is 867 bytes in each codegen
    /// unit that made one (BENCHMARKS.md section 5, forty-fifth round).
    pub(super) fn shown(
        text: &'e dyn fmt::Display,
        source: Option<&'e (dyn Error + 'static)>,
    ) -> Self {
        #[cfg(feature = "worker")]
        if let Some(reading) = WorkerLink::displayed(text, source) {
            return Link::Worker(reading);
        }
        Link::Display { text, source }
    }

    /// A `worker::Error` the chain starts with, read without making it a `dyn Error`:
    /// the vtable of one would link `worker::Error`'s `Debug`, which nothing here calls, into
    /// every codegen unit that made it (2.3 KB of the example Worker's wasm,
    /// BENCHMARKS.md section 5, eighteenth round).
    #[cfg(feature = "worker")]
    pub(super) fn worker(error: &'e worker::Error) -> Self {
        Link::Worker(WorkerLink::Error(error))
    }

    /// The next link of the chain.
    pub(super) fn source(self) -> Option<&'e (dyn Error + 'static)> {
        match self {
            Link::Display { source, .. } => source,
            #[cfg(feature = "worker")]
            Link::Worker(reading) => reading.source(),
        }
    }

    /// The link's `Display`, in tests.
    #[cfg(test)]
    pub(super) fn to_text(self) -> String {
        match self {
            Link::Display { text, .. } => text.to_string(),
            #[cfg(feature = "worker")]
            Link::Worker(reading) => reading.to_string(),
        }
    }

    /// What this link says about the failure, if anything; see [`head::text_class`].
    pub(super) fn class(self) -> Option<FailureClass> {
        match self {
            Link::Display { text, .. } => head::text_class(text),
            #[cfg(feature = "worker")]
            Link::Worker(reading) => reading.class(),
        }
    }

    /// Writes the first line of this link for the log text and returns how many bytes it
    /// wrote; see [`log_text::write_first_line`].
    pub(super) fn write_first_line(self, f: &mut fmt::Formatter<'_>) -> Result<usize, fmt::Error> {
        match self {
            Link::Display { text, .. } => log_text::write_first_line(text, f),
            #[cfg(feature = "worker")]
            Link::Worker(reading) => log_text::write_first_line(&reading, f),
        }
    }
}
