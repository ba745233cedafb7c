//! The baseline: the classifier one writes in five minutes. It tests every documented phrase
//! with `str::contains` anywhere in the text, and formats each error of a chain into a
//! `String` to do so. It is wrong on quoted phrases (a `D1_EXEC_ERROR` echoing SQL that
//! mentions `Network connection lost`), which is why d1-retry does not work this way; here
//! it only sets the speed to beat.

use std::error::Error;

use d1_retry::FailureClass;

/// The classifier's own phrases, without the final period, so the storage-timeout lookalike
/// does not match the two retryable "caused object to be reset" messages.
use d1_retry::__private::D1_PHRASES as PHRASES;

pub fn classify_message(message: &str) -> FailureClass {
    for (phrase, class) in PHRASES {
        if message.contains(phrase) {
            return class;
        }
    }
    FailureClass::Permanent
}

pub fn classify(error: &(dyn Error + 'static)) -> FailureClass {
    let mut next = Some(error);
    while let Some(error) = next {
        let class = classify_message(&error.to_string());
        if class != FailureClass::Permanent {
            return class;
        }
        next = error.source();
    }
    FailureClass::Permanent
}
