//! A failed attempt as the driver sees it: its class, and a text for the logs.
//!
//! Why a type between the error and the driver: the driver decides with the class and logs
//! the text, and both come from one reading of the error. A [`Failure`] made from an error
//! chain keeps the link that decided its class, so the `d1.failure` log field is written
//! from the links already read, without walking or classifying the chain a second time
//! (which would cost a second pass over every link, and could even disagree with the first
//! if a `Display` or `source()` changed in between).

use core::fmt;
use core::marker::PhantomData;
use std::error::Error;

use crate::FailureClass;
use crate::classify::{ChainText, classify_chain, classify_display};

/// A classified failure, borrowed from the caller's error value for as long as the driver
/// decides and logs; the error itself is never moved or changed.
#[derive(Clone, Copy)]
pub struct Failure<'e> {
    /// The class the error told; `None` when it told none (no text of it is D1's), which
    /// is permanent, unless the D1 failures behind it say otherwise ([`or_left`](Self::or_left)).
    told: Option<FailureClass>,
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
        Self::chain(classify_chain(error))
    }

    /// A failure read from a chain: the class its links told, and its text.
    fn chain((told, text): (Option<FailureClass>, ChainText<'e>)) -> Self {
        Failure {
            told,
            text: Text::Chain(text),
        }
    }

    /// [`from_error`](Self::from_error) for an error whose type is known: the same reading,
    /// except that a `worker::Error` (the `worker` feature) is read without being made a
    /// `dyn Error` (see `classify/link.rs`), which is what every retried D1 call in a Worker
    /// fails with.
    #[inline]
    pub(crate) fn of<E: Error + 'static>(error: &'e E) -> Self {
        #[cfg(feature = "worker")]
        if let Some(error) = (error as &dyn core::any::Any).downcast_ref::<worker::Error>() {
            return Self::chain(crate::classify::classify_worker_chain(error));
        }
        // Not `from_error(error)`: the downcast above is not folded away, so this path is
        // compiled for `worker::Error` too, where making it a `dyn Error` would link its
        // `Debug` (see `Link::shown`).
        Self::chain(crate::classify::classify_shown_chain(error, error.source()))
    }

    /// Classifies a value that is only `Display` by its text, read like one link of a chain.
    /// Its `Display` is the value's own.
    pub fn from_display(error: &'e dyn fmt::Display) -> Self {
        Failure {
            told: classify_display(error),
            text: Text::Display(error),
        }
    }

    /// A failure whose class was decided by the caller. Its `Display` is the value's own.
    pub fn with_class(class: FailureClass, error: &'e dyn fmt::Display) -> Self {
        Failure {
            told: Some(class),
            text: Text::Display(error),
        }
    }

    /// The failure's class.
    pub fn class(&self) -> FailureClass {
        self.told.unwrap_or(FailureClass::Permanent)
    }

    /// A whole attempt's failure, where `left` is the least retryable class of the failures
    /// D1 calls within the attempt left to it: the attempt's error only tells a class when
    /// it carries a D1 call's error. An error that tells none
    /// (`.map_err(|_| AppError::Database)?`, whose text is not D1's) takes the class of
    /// those D1 failures instead of permanent; an error that tells one, permanent
    /// included (`no such table`), keeps it. Its text stays the error's own.
    ///
    /// Only for an attempt that may run again whatever it wrote, as far as d1-retry sees:
    /// a `read_only` one, whose writes it watches, or an `idempotent` one. An attempt that
    /// may write out of d1-retry's sight (a `Retry` not declared either) must not: its
    /// direct write may have completed after the failure left.
    pub(crate) fn or_left(self, left: Option<FailureClass>) -> Self {
        match (self.told, left) {
            (None, Some(class)) => Failure {
                told: Some(class),
                ..self
            },
            _ => self,
        }
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
            .field("class", &self.class())
            .field("text", &format_args!("{self}"))
            .finish()
    }
}

/// Autoref dispatch on the error type: the macro calls
/// `(&&&&Probe::<E>::NEW).d1_retry_classifier()` and the most specific of these impls that
/// `E` satisfies is picked at compile time. This is what lets `#[d1_retry]` accept
/// `std::error::Error` types (read with their cause chain), `anyhow::Error`-like types and
/// boxed errors (`AsRef<dyn Error + Send + Sync>`, or `AsRef<dyn Error>` for a
/// `Box<dyn Error>`, read with their chain too), and plain `Display` types such as `String`,
/// without a wrapper type forced on the user.
///
/// The probe holds no error and returns a function rather than a verdict: the function is
/// one per error type, shared by every annotated function that returns it, where a closure
/// around the probe would be one more body per annotated function for rustc to check and
/// compile.
pub struct Probe<E: ?Sized>(PhantomData<fn(&E)>);

impl<E: ?Sized> Probe<E> {
    /// The probe for `E`, named by type.
    pub const NEW: Self = Probe(PhantomData);

    /// The probe for the type of `error`, where the type cannot be named.
    #[inline(always)]
    pub const fn of(_error: &E) -> Self {
        Self::NEW
    }
}

/// Picked for `E: std::error::Error + 'static`.
pub trait ViaError<E: ?Sized> {
    /// How an error of type `E` is classified.
    fn d1_retry_classifier(&self) -> for<'e> fn(&'e E) -> Failure<'e>;
}

impl<E: Error + 'static> ViaError<E> for &&&Probe<E> {
    #[inline(always)]
    fn d1_retry_classifier(&self) -> for<'e> fn(&'e E) -> Failure<'e> {
        from_error
    }
}

fn from_error<E: Error + 'static>(error: &E) -> Failure<'_> {
    Failure::of(error)
}

/// Picked for `E: AsRef<dyn Error + Send + Sync>`, such as `anyhow::Error` and boxed errors.
pub trait ViaAsRefError<E: ?Sized> {
    /// How an error of type `E` is classified.
    fn d1_retry_classifier(&self) -> for<'e> fn(&'e E) -> Failure<'e>;
}

impl<E> ViaAsRefError<E> for &&Probe<E>
where
    E: AsRef<dyn Error + Send + Sync + 'static> + ?Sized,
{
    #[inline(always)]
    fn d1_retry_classifier(&self) -> for<'e> fn(&'e E) -> Failure<'e> {
        from_as_ref_error
    }
}

fn from_as_ref_error<E>(error: &E) -> Failure<'_>
where
    E: AsRef<dyn Error + Send + Sync + 'static> + ?Sized,
{
    let error: &(dyn Error + Send + Sync + 'static) = error.as_ref();
    Failure::from_error(error)
}

/// Picked for `E: AsRef<dyn Error>` that is not `Send + Sync`, such as `Box<dyn Error>`:
/// neither `Error` nor the `AsRef` above, and read by its text alone, it would hide a D1
/// failure in its `source()`.
pub trait ViaAsRefLocalError<E: ?Sized> {
    /// How an error of type `E` is classified.
    fn d1_retry_classifier(&self) -> for<'e> fn(&'e E) -> Failure<'e>;
}

impl<E> ViaAsRefLocalError<E> for &Probe<E>
where
    E: AsRef<dyn Error + 'static> + ?Sized,
{
    #[inline(always)]
    fn d1_retry_classifier(&self) -> for<'e> fn(&'e E) -> Failure<'e> {
        from_as_ref_local_error
    }
}

fn from_as_ref_local_error<E>(error: &E) -> Failure<'_>
where
    E: AsRef<dyn Error + 'static> + ?Sized,
{
    Failure::from_error(error.as_ref())
}

/// Picked for any other `E: Display`, classified by its text alone.
pub trait ViaDisplay<E: ?Sized> {
    /// How an error of type `E` is classified.
    fn d1_retry_classifier(&self) -> for<'e> fn(&'e E) -> Failure<'e>;
}

impl<E: fmt::Display> ViaDisplay<E> for Probe<E> {
    #[inline(always)]
    fn d1_retry_classifier(&self) -> for<'e> fn(&'e E) -> Failure<'e> {
        from_display
    }
}

fn from_display<E: fmt::Display>(error: &E) -> Failure<'_> {
    Failure::from_display(error)
}

#[cfg(test)]
// The probe is called as the expansion calls it, whatever the error type: `&&&&`.
#[allow(clippy::needless_borrow)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_that_tells_no_class_takes_the_class_left_and_keeps_its_text() {
        let lossy = "database error";
        let failure = Failure::from_display(&lossy);
        assert_eq!(failure.class(), FailureClass::Permanent);
        assert_eq!(failure.or_left(None).class(), FailureClass::Permanent);
        let taken = failure.or_left(Some(FailureClass::NotExecuted));
        assert_eq!(taken.class(), FailureClass::NotExecuted);
        assert_eq!(taken.to_string(), lossy);
        let transient = "D1_ERROR: Network connection lost.";
        let told = Failure::from_display(&transient).or_left(Some(FailureClass::Permanent));
        assert_eq!(
            told.class(),
            FailureClass::MaybeExecuted,
            "an error that tells decides"
        );
        let constraint = "D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT";
        let told = Failure::from_display(&constraint);
        assert_eq!(told.class(), FailureClass::Permanent);
        assert_eq!(
            told.or_left(Some(FailureClass::NotExecuted)).class(),
            FailureClass::Permanent,
            "a permanent class told stands"
        );
        let decided = Failure::with_class(FailureClass::Permanent, &lossy);
        assert_eq!(
            decided.or_left(Some(FailureClass::NotExecuted)).class(),
            FailureClass::Permanent,
            "a class the caller decided stands"
        );
    }

    #[test]
    fn debug_shows_class_and_text() {
        let message = "D1_ERROR: Network connection lost.";
        let failure = Failure::from_display(&message);
        assert_eq!(
            format!("{failure:?}"),
            r#"Failure { class: MaybeExecuted, text: D1_ERROR: Network connection lost. }"#
        );
    }

    /// An error whose own text says nothing D1 knows, caused by a lost connection: only
    /// a reading of its `source()` chain finds the lost connection.
    #[derive(Debug)]
    struct Loading(crate::fake::DbError);

    impl fmt::Display for Loading {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("loading the user failed")
        }
    }

    impl Error for Loading {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    fn loading() -> Loading {
        Loading(crate::fake::DbError(crate::fake::LOST))
    }

    #[test]
    fn the_probe_reads_an_error_type_with_its_chain() {
        let error = loading();
        let classify = (&&&&Probe::<Loading>::NEW).d1_retry_classifier();
        assert_eq!(classify(&error).class(), FailureClass::MaybeExecuted);
        // Read by its text alone, the same error would be permanent: the chain decided.
        assert_eq!(
            Failure::from_display(&error).class(),
            FailureClass::Permanent
        );
        let classify = (&&&&Probe::of(&error)).d1_retry_classifier();
        assert_eq!(classify(&error).class(), FailureClass::MaybeExecuted);
    }

    #[test]
    fn the_probe_reads_a_boxed_error_through_as_ref_with_its_chain() {
        type Boxed = Box<dyn Error + Send + Sync>;
        let error: Boxed = Box::new(loading());
        let classify = (&&&&Probe::<Boxed>::NEW).d1_retry_classifier();
        assert_eq!(classify(&error).class(), FailureClass::MaybeExecuted);
    }

    #[test]
    fn the_probe_reads_a_box_that_is_not_send_through_as_ref_with_its_chain() {
        type Boxed = Box<dyn Error>;
        let error: Boxed = Box::new(loading());
        let classify = (&&&&Probe::<Boxed>::NEW).d1_retry_classifier();
        assert_eq!(classify(&error).class(), FailureClass::MaybeExecuted);
        let classify = (&&&&Probe::of(&error)).d1_retry_classifier();
        assert_eq!(classify(&error).class(), FailureClass::MaybeExecuted);
    }

    #[test]
    fn the_probe_reads_a_display_type_by_its_text() {
        let classify = (&&&&Probe::<String>::NEW).d1_retry_classifier();
        let lost = crate::fake::LOST.to_owned();
        assert_eq!(classify(&lost).class(), FailureClass::MaybeExecuted);
        assert_eq!(format!("{}", classify(&lost)), crate::fake::LOST);
        let other = "loading the user failed".to_owned();
        assert_eq!(classify(&other).class(), FailureClass::Permanent);
    }
}
