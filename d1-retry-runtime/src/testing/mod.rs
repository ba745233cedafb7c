//! A local D1 for tests: SQLite behind D1's call shapes, failing when and how you say.
//!
//! Feature `testing` (`d1-retry = { features = ["testing"] }`, usually under
//! `[dev-dependencies]`). It lets you test your own `#[d1_retry]` repositories natively,
//! with `cargo test`, without wrangler or a Worker:
//!
//! - [`D1Database`] has the call shapes of `worker::D1Database` that a repository uses:
//!   `prepare(sql).bind(&[..])?` then `first`, `all`, `run` or `raw`; `batch` (atomic) and
//!   `exec`. Rows are read with serde, as in `worker`. The statements run on a real SQLite
//!   (bundled), so constraints, syntax errors and transactions behave for real.
//! - Errors have D1's shapes ([`Error`]): `D1_ERROR: UNIQUE constraint failed: users.email:
//!   SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)`, with the detail as the
//!   `source()`, like the JS `cause`.
//! - A [`FaultPlan`] of [`Fault`] rules decides which calls fail, with which documented
//!   [`Message`], and when: [`Timing::BeforeExecution`] (nothing changes) or
//!   [`Timing::AfterExecution`] (the change is committed and the caller still gets the
//!   error, the case where retrying a write would run it twice). Rules pick calls by
//!   count, operation, SQL text, seeded probability, or a scripted timeline on a [`Clock`]
//!   you provide (tokio's paused clock works).
//! - A journal records every call ([`D1Database::calls`]), and
//!   [`D1Database::with_connection`] reads the database behind the kit's back, so a test
//!   can check what really happened.
//!
//! This is how d1-retry tests itself: its chaos suite runs tens of thousands of calls
//! through it and checks, against the SQLite file, that no write ever ran twice.
//!
//! # A repository, tested through failures
//!
//! Write the repository against the database type of your build (a type alias, a generic
//! parameter, or `cfg(test)`); the body is the same code as against `worker::D1Database`.
//! `#[d1_retry]` on its methods expands to the same [`Retry`](crate::Retry) loop used
//! here by hand.
//!
//! ```
//! use d1_retry_runtime::Retry;
//! use d1_retry_runtime::testing::{D1Database, Error, Fault, Message, Operation};
//!
//! #[derive(serde::Deserialize, Debug, PartialEq)]
//! struct User {
//!     id: i64,
//!     name: String,
//! }
//!
//! struct UserRepo {
//!     db: D1Database,
//! }
//!
//! impl UserRepo {
//!     async fn find(&self, id: i64) -> Result<Option<User>, Error> {
//!         Retry::new("UserRepo::find")
//!             .read_only(true)
//!             .run(|| async {
//!                 self.db
//!                     .prepare("SELECT id, name FROM users WHERE id = ?1")
//!                     .bind(&[id.into()])?
//!                     .first(None)
//!                     .await
//!             })
//!             .await
//!     }
//!
//!     async fn add(&self, name: &str) -> Result<(), Error> {
//!         Retry::new("UserRepo::add")
//!             .run(|| async {
//!                 self.db
//!                     .prepare("INSERT INTO users (name) VALUES (?1)")
//!                     .bind(&[name.into()])?
//!                     .run()
//!                     .await
//!                     .map(|_| ())
//!             })
//!             .await
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Error> {
//! let db = D1Database::open_in_memory()?;
//! db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)").await?;
//! let repo = UserRepo { db: db.clone() };
//!
//! // D1 drops the connection twice on reads: the read is retried and succeeds.
//! repo.add("ada").await?;
//! db.add_fault(Fault::new(Message::NetworkConnectionLost).on(Operation::First).times(2));
//! let user = repo.find(1).await?;
//! assert_eq!(user, Some(User { id: 1, name: "ada".into() }));
//!
//! // The INSERT runs, then the connection drops: d1-retry must not run it again.
//! db.add_fault(Fault::new(Message::NetworkConnectionLost).after_execution().times(1));
//! let error = repo.add("grace").await.unwrap_err();
//! assert_eq!(error.to_string(), "D1_ERROR: Network connection lost.");
//! let graces: i64 = db.with_connection(|c| {
//!     c.query_row("SELECT count(*) FROM users WHERE name = 'grace'", [], |row| row.get(0))
//! }).unwrap();
//! assert_eq!(graces, 1); // committed once, never twice
//! # Ok(()) }
//! ```
//!
//! # A scripted outage
//!
//! ```
//! use core::time::Duration;
//! use d1_retry_runtime::testing::{Clock, D1Database, Fault, Message};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let db = D1Database::open_in_memory().unwrap();
//! let clock = Clock::tokio();
//! let secs = Duration::from_secs;
//! // Everything fails between 10 s and 12 s; one internal error at 30 s.
//! db.add_fault(Fault::new(Message::TooManyRequestsQueued).during(&clock, secs(10)..secs(12)));
//! db.add_fault(Fault::new(Message::InternalError).at(&clock, [secs(30)]));
//!
//! tokio::time::sleep(secs(11)).await;
//! assert!(db.prepare("SELECT 1").all().await.is_err());
//! tokio::time::sleep(secs(2)).await;
//! assert!(db.prepare("SELECT 1").all().await.is_ok());
//! tokio::time::sleep(secs(20)).await;
//! let error = db.prepare("SELECT 1").all().await.unwrap_err();
//! assert!(error.to_string().starts_with("D1_ERROR: internal error; reference = "));
//! assert_eq!(db.stats().injected_before, 2);
//! # }
//! ```

mod database;
mod error;
mod fault;
mod result;
mod statement;
mod value;

pub use self::database::{Call, D1Database, Stats};
pub use self::error::{Cause, Error};
pub use self::fault::{CallInfo, Clock, Fault, FaultPlan, Message, Operation, Timing};
pub use self::result::{D1ExecResult, D1Result, D1ResultMeta};
pub use self::statement::D1PreparedStatement;
pub use self::value::Value;

#[cfg(test)]
mod tests;
