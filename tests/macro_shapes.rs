//! Every function shape `#[d1_retry]` accepts retries at run time: `&mut self`, generic
//! and trait methods, `#[async_trait]`, `#[tracing::instrument]` in either order, and the
//! error types it reads (`std::error::Error`, `anyhow::Error`, boxed errors, `String`).

use std::fmt::Display;

use async_trait::async_trait;
use d1_retry::{RetryPolicy, d1_retry};
use test_support::Logs;
use test_support::fake_db::{DbError, FakeDb, INTERNAL, NETWORK_LOST, NOT_REACHED};

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();

struct Counter {
    db: FakeDb,
    attempts: u32,
}

impl Counter {
    /// The call is retried, not the body: `self.attempts` goes up once.
    #[d1_retry(policy = NO_BUDGET)]
    async fn bump(&mut self) -> Result<u32, DbError> {
        self.attempts += 1;
        self.db.prepare("SELECT 1").run().await?;
        Ok(self.attempts)
    }
}

#[tokio::test(start_paused = true)]
async fn mut_self_methods_retry_the_call_not_the_body() {
    let mut counter = Counter {
        db: FakeDb::failing(&[NETWORK_LOST, NETWORK_LOST]),
        attempts: 0,
    };
    assert_eq!(counter.bump().await, Ok(1));
    assert_eq!(counter.db.calls(), 3);
}

trait Repo {
    fn db(&self) -> &FakeDb;

    #[d1_retry(policy = NO_BUDGET)]
    async fn count(&self) -> Result<u64, DbError> {
        self.db().prepare("SELECT count(*) FROM users").run().await
    }

    async fn rename(&self) -> Result<u64, DbError>;
}

struct D1Repo {
    db: FakeDb,
}

impl Repo for D1Repo {
    fn db(&self) -> &FakeDb {
        &self.db
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn rename(&self) -> Result<u64, DbError> {
        self.db.prepare("UPDATE users SET name = 'x'").run().await
    }
}

#[tokio::test(start_paused = true)]
async fn async_fn_in_traits_default_and_impl() {
    let (logs, _guard) = Logs::capture();
    let repo = D1Repo {
        db: FakeDb::failing(&[INTERNAL]),
    };
    assert_eq!(repo.count().await, Ok(1));
    assert_eq!(repo.db.calls(), 2);
    // The write is not retried after a maybe-executed failure.
    let repo = D1Repo {
        db: FakeDb::failing(&[INTERNAL]),
    };
    assert!(repo.rename().await.is_err());
    assert_eq!(repo.db.calls(), 1);
    // A default method is named after the implementing type.
    logs.assert_contains("d1.operation=D1Repo::count ");
}

#[async_trait]
trait AsyncRepo {
    fn db(&self) -> &FakeDb;

    #[d1_retry(policy = NO_BUDGET)]
    async fn count(&self) -> Result<u64, DbError> {
        self.db().prepare("SELECT count(*) FROM users").run().await
    }

    async fn find(&self, id: i64, name: String) -> Result<Option<i64>, DbError>;

    async fn rename(&mut self, name: String) -> Result<u64, DbError>;
}

struct BoxedRepo {
    db: FakeDb,
    renames: Vec<String>,
}

#[async_trait]
impl AsyncRepo for BoxedRepo {
    fn db(&self) -> &FakeDb {
        &self.db
    }

    /// `name` is moved into the boxed future once and borrowed by every attempt.
    #[d1_retry(policy = NO_BUDGET)]
    async fn find(&self, id: i64, name: String) -> Result<Option<i64>, DbError> {
        assert_eq!(name, "ada");
        self.db
            .prepare("SELECT id FROM users WHERE id = ?1")
            .bind(&[id])?
            .first()
            .await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn rename(&mut self, name: String) -> Result<u64, DbError> {
        self.renames.push(name.clone());
        self.db.prepare("UPDATE users SET name = ?1").run().await
    }
}

#[tokio::test(start_paused = true)]
async fn async_trait_methods_retry_inside_the_boxed_future() {
    let (logs, _guard) = Logs::capture();
    let mut repo = BoxedRepo {
        db: FakeDb::failing(&[NETWORK_LOST, NETWORK_LOST]),
        renames: Vec::new(),
    };
    let future = repo.find(5, "ada".to_owned());
    fn assert_send<T: Send>(_: &T) {}
    assert_send(&future);
    assert_eq!(future.await, Ok(Some(5)));
    assert_eq!(repo.db.calls(), 3);

    assert_eq!(repo.count().await, Ok(1));
    assert_eq!(repo.db.calls(), 4);

    repo.db = FakeDb::failing(&[NOT_REACHED]);
    assert_eq!(repo.rename("grace".to_owned()).await, Ok(1));
    // Only the D1 call ran again; the push before it ran once.
    assert_eq!(repo.renames, ["grace"]);

    repo.db = FakeDb::failing(&[NETWORK_LOST]);
    assert!(repo.rename("lin".to_owned()).await.is_err());
    assert_eq!(repo.db.calls(), 1);
    logs.assert_contains("d1.operation=BoxedRepo::find ");
}

struct Traced {
    db: FakeDb,
}

impl Traced {
    #[d1_retry(policy = NO_BUDGET)]
    #[tracing::instrument(skip(self))]
    async fn outer(&self, id: i64, tag: String) -> Result<Option<i64>, DbError> {
        let _ = tag;
        self.db
            .prepare("SELECT id FROM users WHERE id = ?1")
            .bind(&[id])?
            .first()
            .await
    }

    #[tracing::instrument(skip(self))]
    #[d1_retry(policy = NO_BUDGET)]
    async fn inner(&self, id: i64) -> Result<Option<i64>, DbError> {
        self.db
            .prepare("SELECT id FROM users WHERE id = ?1")
            .bind(&[id])?
            .first()
            .await
    }
}

#[tokio::test(start_paused = true)]
async fn tracing_instrument_in_either_order() {
    let (logs, _guard) = Logs::capture();
    let traced = Traced {
        db: FakeDb::failing(&[NETWORK_LOST]),
    };
    assert_eq!(traced.outer(1, "t".to_owned()).await, Ok(Some(1)));
    assert_eq!(traced.db.calls(), 2);
    let traced = Traced {
        db: FakeDb::failing(&[NETWORK_LOST]),
    };
    assert_eq!(traced.inner(2).await, Ok(Some(2)));
    assert_eq!(traced.db.calls(), 2);
    // `#[d1_retry]` first: the retry log line is inside the instrumented span.
    let text = logs.text();
    let outer = text
        .lines()
        .find(|line| line.contains("Traced::outer"))
        .unwrap_or_default();
    assert!(outer.contains("outer{id=1 tag=\"t\"}"), "{text}");
}

// Error types.

#[d1_retry(policy = NO_BUDGET)]
async fn anyhow_error(db: &FakeDb) -> anyhow::Result<u64> {
    Ok(db.prepare("SELECT 1").run().await?)
}

#[d1_retry(policy = NO_BUDGET)]
async fn boxed_error(db: &FakeDb) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    Ok(db.prepare("SELECT 1").run().await?)
}

#[d1_retry(policy = NO_BUDGET)]
async fn string_error(db: &FakeDb) -> Result<u64, String> {
    db.prepare("SELECT 1")
        .run()
        .await
        .map_err(|e| e.to_string())
}

#[d1_retry(policy = NO_BUDGET)]
async fn generic_error<E>(db: &FakeDb) -> Result<u64, E>
where
    E: std::error::Error + From<DbError> + 'static,
{
    Ok(db.prepare("SELECT 1").run().await?)
}

#[d1_retry(policy = NO_BUDGET)]
async fn display_error<E: Display + From<DbError>>(db: &FakeDb) -> Result<u64, E> {
    Ok(db.prepare("SELECT 1").run().await?)
}

/// The same, retried as a whole: then only the converted error is there to read. (The
/// second `.await` keeps the body from being one D1 call, which is retried as that call:
/// `display_error_one_call`.)
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn display_error_whole<E: Display + From<DbError>>(db: &FakeDb) -> Result<u64, E> {
    core::future::ready(()).await;
    Ok(db.prepare("SELECT 1").run().await?)
}

/// A `read_only` body that is one D1 call: its call's failure is classified before `?`
/// converts it, as in the default mode.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn display_error_one_call<E: Display + From<DbError>>(db: &FakeDb) -> Result<u64, E> {
    Ok(db.prepare("SELECT 1").run().await?)
}

/// Retried as a whole, the error type behind an alias: read through `AsRef<dyn Error>`.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn anyhow_error_whole(db: &FakeDb) -> anyhow::Result<u64> {
    core::future::ready(()).await;
    Ok(db.prepare("SELECT 1").run().await?)
}

/// An error whose text hides D1's, and whose `source()` holds it.
#[derive(Debug)]
struct Loading(DbError);

impl Display for Loading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("loading the order failed")
    }
}

impl std::error::Error for Loading {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Retried as a whole, a `Box<dyn Error>` that is not `Send + Sync` (so neither `Error`
/// nor `AsRef<dyn Error + Send + Sync>`): read through `AsRef<dyn Error>`, its chain
/// included.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn local_boxed_error_whole(db: &FakeDb) -> Result<u64, Box<dyn std::error::Error>> {
    core::future::ready(()).await;
    Ok(db.prepare("SELECT 1").run().await.map_err(Loading)?)
}

/// Retried as a whole, an error type the body cannot name: read from the error value.
#[d1_retry(idempotent, policy = NO_BUDGET)]
async fn impl_error_whole(db: &FakeDb) -> Result<u64, impl std::error::Error> {
    db.prepare("SELECT 1").run().await
}

/// Only `Display`, keeping D1's text: classified by it.
#[derive(Debug, PartialEq)]
struct Text(String);

impl Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<DbError> for Text {
    fn from(error: DbError) -> Self {
        Text(error.message)
    }
}

/// Only `Display`, and its text hides the D1 message: classified as permanent.
struct Opaque;

impl Display for Opaque {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("something went wrong")
    }
}

impl From<DbError> for Opaque {
    fn from(_: DbError) -> Self {
        Opaque
    }
}

#[tokio::test(start_paused = true)]
async fn every_supported_error_type_is_classified() {
    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert_eq!(anyhow_error(&db).await.ok(), Some(1));
    assert_eq!(db.calls(), 2);

    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert_eq!(boxed_error(&db).await.ok(), Some(1));
    assert_eq!(db.calls(), 2);

    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert_eq!(string_error(&db).await, Ok(1));
    assert_eq!(db.calls(), 2);

    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert_eq!(generic_error::<DbError>(&db).await, Ok(1));
    assert_eq!(db.calls(), 2);

    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert_eq!(display_error::<Text>(&db).await, Ok(1));
    assert_eq!(db.calls(), 2);

    // Each D1 call's failure is classified before `?` converts it, so even an error type
    // that hides D1's message does not stop the retry.
    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert!(display_error::<Opaque>(&db).await.is_ok());
    assert_eq!(db.calls(), 2);

    // A whole-body retry sees only the converted error: text without D1's message is
    // permanent; text that keeps it is read.
    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert!(display_error_whole::<Opaque>(&db).await.is_err());
    assert_eq!(db.calls(), 1);
    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert_eq!(display_error_whole::<Text>(&db).await, Ok(1));
    assert_eq!(db.calls(), 2);
    // A `read_only` body that is one D1 call is retried as that call, whose failure is
    // read before the conversion hides it.
    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert!(display_error_one_call::<Opaque>(&db).await.is_ok());
    assert_eq!(db.calls(), 2);
    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert_eq!(anyhow_error_whole(&db).await.ok(), Some(1));
    assert_eq!(db.calls(), 2);
    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert_eq!(impl_error_whole(&db).await.ok(), Some(1));
    assert_eq!(db.calls(), 2);
    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert_eq!(local_boxed_error_whole(&db).await.ok(), Some(1));
    assert_eq!(db.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn anyhow_context_keeps_the_cause_readable() {
    #[d1_retry(policy = NO_BUDGET)]
    async fn with_context(db: &FakeDb) -> anyhow::Result<u64> {
        use anyhow::Context as _;
        db.prepare("SELECT 1")
            .run()
            .await
            .context("loading the user count")
    }
    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert_eq!(with_context(&db).await.ok(), Some(1));
    assert_eq!(db.calls(), 2);
}
