//! Sessions (`withSession`) and their bookmarks, as `worker`'s `D1DatabaseSession`.
//!
//! The local D1 has no replicas, so every read already sees every write; what a session
//! adds here is the bookmark contract that code relies on: no bookmark before the first
//! query, then the bookmark of the latest state the session saw, which moves forward when
//! the database is written. A concept of its own because bookmarks are state that lives
//! beside the statements, not in them.

use core::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use super::{D1Database, D1PreparedStatement, D1Result, Error};

/// A bookmark: an opaque string naming a state of the database, as `worker`'s
/// (`String`). Bookmarks of one database compare in the order of its writes.
pub type D1SessionBookmark = String;

/// Where a session's first query may go, as `worker::D1SessionConstraint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum D1SessionConstraint {
    /// First query should be sent to primary.
    FirstPrimary,
    /// First query can be sent to any replica.
    FirstUnconstrained,
}

impl D1SessionConstraint {
    /// The string D1's `withSession` takes.
    const fn as_str(self) -> &'static str {
        match self {
            D1SessionConstraint::FirstPrimary => "first-primary",
            D1SessionConstraint::FirstUnconstrained => "first-unconstrained",
        }
    }
}

/// A session on a [`D1Database`], as `worker::D1DatabaseSession`: statements prepared
/// from it, and its batches, report the state they saw in its bookmark.
///
/// ```
/// use d1_retry_runtime::testing::{D1Database, Error};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Error> {
/// let db = D1Database::open_in_memory()?;
/// db.exec("CREATE TABLE t (x)").await?;
/// let session = db.with_session(Some("first-primary"))?;
/// assert_eq!(session.get_bookmark()?, None); // nothing ran in it yet
/// session.prepare("SELECT count(*) FROM t").all().await?;
/// let seen = session.get_bookmark()?.unwrap();
/// session.prepare("INSERT INTO t VALUES (1)").run().await?;
/// let written = session.get_bookmark()?.unwrap();
/// assert!(written > seen); // a write moves the bookmark forward
///
/// // A new session can start where this one stopped.
/// let later = db.with_session(Some(&written))?;
/// assert_eq!(later.get_bookmark()?, Some(written));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct D1DatabaseSession {
    db: D1Database,
    link: SessionLink,
}

impl D1DatabaseSession {
    /// A statement for `query` in this session, as `worker`'s `prepare`.
    pub fn prepare<T: Into<String>>(&self, query: T) -> D1PreparedStatement {
        D1PreparedStatement::new(self.db.clone(), query.into(), Some(self.link.clone()))
    }

    /// Runs `statements` in one transaction in this session, as
    /// [`D1Database::batch`](super::D1Database::batch).
    ///
    /// # Errors
    ///
    /// The first statement's failure (after which nothing is committed), or an injected fault.
    pub async fn batch(
        &self,
        statements: Vec<D1PreparedStatement>,
    ) -> Result<Vec<D1Result>, Error> {
        self.db.run_batch(&statements, Some(&self.link)).await
    }

    /// The bookmark of the latest state this session saw: `None` before its first query
    /// succeeded (unless it was started from a bookmark, then that one).
    ///
    /// # Errors
    ///
    /// Never here; the `Result` mirrors `worker`'s signature.
    pub fn get_bookmark(&self) -> Result<Option<D1SessionBookmark>, Error> {
        Ok(self.link.get())
    }
}

/// `worker::D1DatabaseSession` carries the mark, so a session's `batch` in a
/// `#[d1_retry]` function is retried on a Worker; the kit's must be too, or the same source
/// would behave differently natively. (`receiver.rs` marks the kit's database and
/// statement; the session type lives here.)
impl crate::D1Receiver for D1DatabaseSession {
    const D1_CALLS: crate::dispatch::receiver::D1Calls =
        crate::dispatch::receiver::D1Calls::SESSION;
}

impl D1Database {
    /// A session, as `worker::D1Database::with_session`: `None`, `"first-primary"` or
    /// `"first-unconstrained"` start without a bookmark; any other text must be a bookmark
    /// of this database (from [`D1DatabaseSession::get_bookmark`]), where the session starts.
    ///
    /// # Errors
    ///
    /// Text that is neither a constraint nor a bookmark this database has given out:
    /// `D1_ERROR: invalid bookmark: <text>` (the kit's wording; D1's may differ).
    pub fn with_session(
        &self,
        constraint_or_bookmark: Option<&str>,
    ) -> Result<D1DatabaseSession, Error> {
        let start = match constraint_or_bookmark.map(str::trim) {
            None | Some("first-primary" | "first-unconstrained") => None,
            Some(text) => match parse(text) {
                Some(version) if version <= self.version() => Some(text.to_owned()),
                _ => return Err(Error::d1(format!("invalid bookmark: {text}"))),
            },
        };
        Ok(D1DatabaseSession {
            db: self.clone(),
            link: SessionLink(Arc::new(Mutex::new(start))),
        })
    }

    /// A session starting under `constraint`, as `worker::D1Database::with_session_constraint`.
    ///
    /// # Errors
    ///
    /// Never here; the `Result` mirrors `worker`'s signature.
    pub fn with_session_constraint(
        &self,
        constraint: D1SessionConstraint,
    ) -> Result<D1DatabaseSession, Error> {
        self.with_session(Some(constraint.as_str()))
    }
}

/// The bookmark a session shares with the statements prepared from it.
#[derive(Clone, Default)]
pub(crate) struct SessionLink(Arc<Mutex<Option<D1SessionBookmark>>>);

impl SessionLink {
    fn get(&self) -> Option<D1SessionBookmark> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records that a call of the session saw the database at `version`.
    pub(crate) fn saw(&self, version: u64) {
        let mut bookmark = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Only forward: a session never goes back to an older state than it has seen.
        if bookmark
            .as_deref()
            .and_then(parse)
            .is_none_or(|seen| seen <= version)
        {
            *bookmark = Some(render(version));
        }
    }
}

impl fmt::Debug for SessionLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SessionLink").field(&self.get()).finish()
    }
}

/// Scrambles a version into the bookmark's second half, so that a bookmark cannot be
/// forged by counting, and a typo is caught.
const fn check(version: u64) -> u64 {
    version.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1D1_D1D1_D1D1_D1D1
}

/// The bookmark of `version`: fixed-width hex, so text order is version order.
pub(crate) fn render(version: u64) -> D1SessionBookmark {
    format!("{version:016x}-{:016x}", check(version))
}

/// The version a bookmark names, if it is one the kit made.
fn parse(bookmark: &str) -> Option<u64> {
    let (version, tail) = bookmark.split_once('-')?;
    if version.len() != 16 || tail.len() != 16 {
        return None;
    }
    let version = u64::from_str_radix(version, 16).ok()?;
    let tail = u64::from_str_radix(tail, 16).ok()?;
    (tail == check(version)).then_some(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bookmarks_round_trip_and_order_like_versions() {
        for version in [0, 1, 255, 1 << 40, u64::MAX] {
            assert_eq!(parse(&render(version)), Some(version));
        }
        assert!(render(9) < render(10));
        assert!(render(255) < render(256));
        assert!(render(1 << 40) < render(u64::MAX));
    }

    #[test]
    fn only_the_kits_bookmarks_parse() {
        let good = render(3);
        let mut forged = render(4);
        forged.replace_range(17.., &good[17..]);
        for bad in [
            "",
            "x",
            "first-replica",
            &good[1..],
            &format!("{good}0"),
            &forged,
            "000000000000000g-0000000000000000",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_link_only_moves_forward() {
        let link = SessionLink::default();
        assert_eq!(link.get(), None);
        link.saw(2);
        link.saw(1);
        assert_eq!(link.get(), Some(render(2)));
        link.saw(5);
        assert_eq!(link.get(), Some(render(5)));
        assert!(format!("{link:?}").contains(&render(5)));
    }

    #[test]
    fn sessions_are_d1_receivers_like_workers() {
        fn marked<T: crate::D1Receiver>() {}
        marked::<D1DatabaseSession>();
        marked::<D1Database>();
        marked::<D1PreparedStatement>();
    }

    #[test]
    fn constraints_are_the_strings_d1_takes() {
        assert_eq!(D1SessionConstraint::FirstPrimary.as_str(), "first-primary");
        assert_eq!(
            D1SessionConstraint::FirstUnconstrained.as_str(),
            "first-unconstrained"
        );
    }
}
