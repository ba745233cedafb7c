//! The baseline: the classifier one writes in five minutes. It tests every documented phrase
//! with `str::contains` anywhere in the text, and formats each error of a chain into a
//! `String` to do so. It is wrong on quoted phrases (a `D1_EXEC_ERROR` echoing SQL that
//! mentions `Network connection lost`), which is why d1-retry does not work this way; here
//! it only sets the speed to beat.

use std::error::Error;

use d1_retry::FailureClass;

/// Full phrases, without the final period, so the storage-timeout lookalike does not match
/// the two retryable "caused object to be reset" messages.
const PHRASES: [(&str, FailureClass); 13] = [
    (
        "Cannot resolve D1 DB due to transient issue on remote node",
        FailureClass::NotExecuted,
    ),
    (
        "Internal error while starting up D1 DB storage caused object to be reset",
        FailureClass::NotExecuted,
    ),
    (
        "D1 DB is overloaded. Too many requests queued",
        FailureClass::NotExecuted,
    ),
    ("Network connection lost", FailureClass::MaybeExecuted),
    (
        "Internal error in D1 DB storage caused object to be reset",
        FailureClass::MaybeExecuted,
    ),
    (
        "D1 DB reset because its code was updated",
        FailureClass::MaybeExecuted,
    ),
    (
        "Can't read from request stream because client disconnected",
        FailureClass::MaybeExecuted,
    ),
    (
        "D1 DB is overloaded. Requests queued for too long",
        FailureClass::MaybeExecuted,
    ),
    (
        "D1 DB storage operation exceeded timeout which caused object to be reset",
        FailureClass::Permanent,
    ),
    (
        "D1 DB's isolate exceeded its memory limit and was reset",
        FailureClass::Permanent,
    ),
    (
        "D1 DB exceeded its CPU time limit and was reset",
        FailureClass::Permanent,
    ),
    ("internal error; reference = ", FailureClass::MaybeExecuted),
    (
        "Replica disconnected from primary",
        FailureClass::MaybeExecuted,
    ),
];

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
