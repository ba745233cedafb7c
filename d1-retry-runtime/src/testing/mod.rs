//! A local D1 for tests: SQLite behind D1's call shapes, failing when and how you say.
//!
//! Feature `testing` (`d1-retry = { features = ["testing"] }`, usually under
//! `[dev-dependencies]`). It lets you test your own `#[d1_retry]` repositories natively,
//! with `cargo test`, without wrangler or a Worker:
//!
//! - [`D1Database`] has the D1 API of `worker` 0.8.7 that a repository calls, with the
//!   same names and signatures, so one repository module compiles against both (below):
//!   `prepare(sql)`, then `bind(&[..])?` (with [`JsValue`]s built by `.into()`,
//!   `JsValue::from_f64`, `JsValue::NULL`...) or `bind_refs` (with [`D1Type`]s), then
//!   `first`, `all`, `run`, `raw`, `raw_js_value`, or `.await` on the statement itself;
//!   `batch` (atomic), `exec` (line by line), `dump`, and `with_session` with its
//!   bookmarks ([`D1DatabaseSession`]). Rows are read with serde, by the rules of
//!   `serde_wasm_bindgen`. The statements run on a real SQLite (bundled), so constraints,
//!   syntax errors and transactions behave for real.
//! - Errors have D1's shapes ([`Error`]): `D1_ERROR: UNIQUE constraint failed: users.email:
//!   SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)`, with the detail as the
//!   `source()`, like the JS `cause`.
//! - A [`FaultPlan`] of [`Fault`] rules decides which calls fail, with which documented
//!   [`Message`], and when: [`Timing::BeforeExecution`] (nothing changes) or
//!   [`Timing::AfterExecution`] (the change is committed and the caller still gets the
//!   error, the case where retrying a write would run it twice). Rules pick calls by
//!   [`Operation`] (every kind of call above), SQL text, count, seeded probability, or a
//!   scripted timeline on a [`Clock`] you provide (tokio's paused clock works).
//! - D1 also hangs: [`Fault::stall`] makes a call hang, then go through, and
//!   [`Fault::stalling`] makes a failure wait, before or after the statement runs. Stalls
//!   wait on tokio's clock (virtual under a paused clock) or a sleeper you give
//!   ([`D1Database::set_sleeper`]); a caller that gives up drops the call mid-stall.
//! - A journal records every call ([`D1Database::calls`]), including how long it stalled
//!   and whether its caller dropped it, and
//!   [`D1Database::with_connection`] reads the database behind the kit's back, so a test
//!   can check what really happened.
//!
//! This is how d1-retry tests itself: its chaos suite runs tens of thousands of calls
//! through it and checks, against the SQLite file, that no write ever ran twice.
//!
//! # One repository, two targets
//!
//! Write the repository once, against the names both APIs share, and let one pair of
//! `use`s pick the target: `worker` on `wasm32`, this kit natively. The error type is
//! aliased the same way, so signatures read `Result<T>` on both. The kit's database,
//! session and statement carry the [`D1Receiver`](crate::D1Receiver) mark, as `worker`'s
//! do, so `#[d1_retry]` on the methods retries their calls the same way against either
//! database; this example retries by hand with [`Retry`](crate::Retry), the driver the
//! attribute also uses.
//!
//! ```
//! # extern crate d1_retry_runtime as d1_retry;
//! #[cfg(target_arch = "wasm32")]
//! use worker::{D1Database, D1Type, Error, wasm_bindgen::JsValue};
//! #[cfg(not(target_arch = "wasm32"))]
//! use d1_retry::testing::{D1Database, D1Type, Error, JsValue};
//!
//! /// `worker::Result` on a Worker, the kit's error natively.
//! pub type Result<T, E = Error> = core::result::Result<T, E>;
//!
//! use d1_retry::Retry;
//!
//! #[derive(serde::Deserialize, Debug, PartialEq)]
//! pub struct User {
//!     id: i64,
//!     name: String,
//! }
//!
//! pub struct UserRepo {
//!     db: D1Database,
//! }
//!
//! impl UserRepo {
//!     pub async fn find(&self, id: i64) -> Result<Option<User>> {
//!         Retry::new("UserRepo::find")
//!             .read_only(true)
//!             .run(|| async {
//!                 self.db
//!                     .prepare("SELECT id, name FROM users WHERE id = ?1")
//!                     // D1 takes JS numbers, not BigInts: no `i64::into()` here.
//!                     .bind(&[JsValue::from_f64(id as f64)])?
//!                     .first(None)
//!                     .await
//!             })
//!             .await
//!     }
//!
//!     pub async fn add(&self, name: &str) -> Result<i64> {
//!         Retry::new("UserRepo::add")
//!             .run(|| async {
//!                 let result = self
//!                     .db
//!                     .prepare("INSERT INTO users (name) VALUES (?1)")
//!                     .bind_refs(&D1Type::Text(name))?
//!                     .run()
//!                     .await?;
//!                 let meta = result.meta()?;
//!                 meta.and_then(|meta| meta.last_row_id)
//!                     .ok_or_else(|| "D1 did not report the new row's id".into())
//!             })
//!             .await
//!     }
//! }
//!
//! # #[cfg(not(target_arch = "wasm32"))]
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<()> {
//! use d1_retry::testing::{Fault, Message, Operation};
//!
//! let db = D1Database::open_in_memory()?;
//! db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)").await?;
//! let repo = UserRepo { db: db.clone() };
//!
//! // D1 drops the connection twice on reads: the read is retried and succeeds.
//! assert_eq!(repo.add("ada").await?, 1);
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
//! // The journal: the read failed twice, then answered; each INSERT ran once.
//! let calls = db.calls();
//! let count = |op| calls.iter().filter(|call| call.operation == op).count();
//! assert_eq!((count(Operation::First), count(Operation::Run)), (3, 2));
//! # Ok(()) }
//! # #[cfg(target_arch = "wasm32")]
//! # fn main() {}
//! ```
//!
//! Where the two APIs cannot agree, the kit says so in the item's docs: `raw_js_value`
//! returns rows of values instead of JS arrays, and `i64::into()` makes an `INTEGER` here
//! but a `BigInt` (which D1 refuses) on a Worker.
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
//!
//! # A stalled D1
//!
//! The storage object hangs 60 s, then resets. A caller that gives up after 10 s drops the
//! call: a stall before execution cancels the statement, a stall after it does not.
//!
//! ```
//! use core::time::Duration;
//! use d1_retry_runtime::testing::{D1Database, Fault, Message};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let db = D1Database::open_in_memory().unwrap();
//! db.exec("CREATE TABLE t (x)").await.unwrap();
//! let secs = Duration::from_secs;
//! let reset = || Fault::new(Message::StorageReset).stalling(secs(60)).times(1);
//! let rows = || -> i64 {
//!     db.with_connection(|c| c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)))
//!         .unwrap()
//! };
//!
//! // Waited out: the call fails after exactly 60 s of (virtual) time, nothing written.
//! db.add_fault(reset());
//! let start = tokio::time::Instant::now();
//! assert!(db.prepare("INSERT INTO t VALUES (1)").run().await.is_err());
//! assert_eq!((start.elapsed(), rows()), (secs(60), 0));
//!
//! // Given up during a stall before execution: the INSERT never runs.
//! db.add_fault(reset());
//! let insert = db.prepare("INSERT INTO t VALUES (2)");
//! assert!(tokio::time::timeout(secs(10), insert.run()).await.is_err());
//! assert_eq!(rows(), 0);
//!
//! // Given up during a stall after execution: the INSERT is committed, once.
//! db.add_fault(reset().after_execution());
//! let insert = db.prepare("INSERT INTO t VALUES (3)");
//! assert!(tokio::time::timeout(secs(10), insert.run()).await.is_err());
//! assert_eq!(rows(), 1);
//!
//! // The journal: each call stalled 60 s; the last two were dropped mid-stall.
//! let calls = db.calls();
//! let dropped: Vec<(bool, bool)> = calls[1..].iter().map(|c| (c.dropped, c.executed)).collect();
//! assert_eq!(dropped, [(false, false), (true, false), (true, true)]);
//! assert!(calls[1..].iter().all(|c| c.stalled == Some(secs(60))));
//! assert_eq!((db.stats().stalled, db.stats().dropped), (3, 2));
//! # }
//! ```

// One file per concept; each file's tests sit at its end, and `tests.rs` holds the tests
// that need the whole kit (a database, faults and the journal together).
mod argument;
mod call;
mod clock;
mod database;
mod error;
mod execute;
mod fault;
mod message;
mod plan;
mod result;
mod schedule;
mod session;
mod statement;
mod value;

pub use self::argument::{D1Argument, D1PreparedArgument, D1Type};
pub use self::call::{Call, CallInfo, Operation};
pub use self::clock::Clock;
pub use self::database::{D1Database, Stats};
pub use self::error::{Cause, Error};
pub use self::fault::{Fault, Timing};
pub use self::message::Message;
pub use self::plan::FaultPlan;
pub use self::result::{D1ExecResult, D1Result, D1ResultMeta};
pub use self::session::{D1DatabaseSession, D1SessionBookmark, D1SessionConstraint};
pub use self::statement::D1PreparedStatement;
pub use self::value::{JsValue, Value};

#[cfg(test)]
mod tests;
