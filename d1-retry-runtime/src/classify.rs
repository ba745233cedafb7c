//! STUB: replaced by the classifier work. Conservative: everything is permanent.
use core::fmt;
use std::error::Error;

use crate::FailureClass;

/// Classifies one message.
pub fn classify_message(_message: &str) -> FailureClass {
    FailureClass::Permanent
}

/// Classifies an error and its cause chain.
pub fn classify(_error: &(dyn Error + 'static)) -> FailureClass {
    FailureClass::Permanent
}

pub(crate) fn classify_display(_error: &dyn fmt::Display) -> FailureClass {
    FailureClass::Permanent
}

pub(crate) fn write_error_text(
    error: &(dyn Error + 'static),
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    fmt::Display::fmt(error, f)
}
