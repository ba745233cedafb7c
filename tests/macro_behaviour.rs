//! `#[d1_retry]` at run time: the retry table of issue 3 row by row, with tokio's paused
//! clock (virtual time, so exact bounds hold) and a fake D1 that fails from a script.
//!
//! Most functions here use `policy = NO_BUDGET`: the default policy's retry budget is shared
//! by the whole test binary, and a test that drives failures on purpose must not pause the
//! retries of the next one.

use core::time::Duration;
use std::future::Future;

use d1_retry::{RetryPolicy, d1_retry};
use test_support::Logs;
use test_support::fake_db::{
    self, DbError, FakeDb, INTERNAL, NETWORK_LOST, NOT_REACHED, RepoError, Succeed, UNIQUE,
};
use tokio::time::Instant;

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();
const THREE_QUICK: RetryPolicy = RetryPolicy::DEFAULT
    .with_max_attempts(3)
    .with_base_delay(Duration::from_millis(10))
    .with_max_delay(Duration::from_millis(10))
    .without_budget();

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Runs `future` and measures the virtual time it waited.
async fn timed<F: Future>(future: F) -> (F::Output, Duration) {
    let start = Instant::now();
    let output = future.await;
    (output, start.elapsed())
}

struct Users {
    db: FakeDb,
}

impl Users {
    fn new(db: FakeDb) -> Self {
        Users { db }
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn find(&self, id: i64) -> Result<Option<i64>, DbError> {
        self.db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(&[id])?
            .first()
            .await
    }

    /// `find` with its execution's future kept before it is awaited: retried where it is
    /// made, by the runtime's own loop (`call::drive`), not by a loop at the `.await`.
    #[d1_retry(policy = NO_BUDGET)]
    async fn find_later(&self, id: i64) -> Result<Option<i64>, DbError> {
        let statement = self
            .db
            .prepare("SELECT id, name FROM users WHERE id = ?1")
            .bind(&[id])?;
        let pending = statement.first();
        pending.await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn rename(&self, id: i64) -> Result<u64, DbError> {
        self.db
            .prepare("UPDATE users SET name = 'ada' WHERE id = ?1")
            .bind(&[id])?
            .run()
            .await
    }

    /// One site whose SQL is only known at run time.
    #[d1_retry(policy = NO_BUDGET)]
    async fn run_sql(&self, sql: &str) -> Result<u64, DbError> {
        self.db.prepare(sql).run().await
    }

    /// Two literal reads.
    #[d1_retry(policy = NO_BUDGET)]
    async fn profile(&self, id: i64) -> Result<(Option<i64>, Option<i64>), DbError> {
        let user = self
            .db
            .prepare("SELECT id FROM users WHERE id = ?1")
            .bind(&[id])?
            .first()
            .await?;
        let orders = self
            .db
            .prepare("SELECT count(*) FROM orders WHERE user_id = ?1")
            .bind(&[id])?
            .first()
            .await?;
        Ok((user, orders))
    }

    /// A literal read, then dynamic SQL.
    #[d1_retry(policy = NO_BUDGET)]
    async fn read_then(&self, sql: &str) -> Result<u64, DbError> {
        self.db.prepare("SELECT 1").run().await?;
        self.db.exec(sql).await
    }

    /// Two writes, declared safe to run twice.
    #[d1_retry(idempotent, policy = NO_BUDGET)]
    async fn upsert_pair(&self) -> Result<u64, DbError> {
        self.db
            .prepare("INSERT INTO users (id, name) VALUES (1, 'ada') ON CONFLICT (id) DO UPDATE SET name = excluded.name")
            .run()
            .await?;
        self.db
            .prepare("INSERT OR IGNORE INTO audit (user_id) VALUES (1)")
            .run()
            .await
    }

    /// No statement in sight: the helper runs it.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn count_through_helper(&self) -> Result<u64, DbError> {
        count(&self.db).await
    }

    /// Two writes in one atomic batch: one site.
    #[d1_retry(policy = NO_BUDGET)]
    async fn create_pair(&self) -> Result<Vec<u64>, DbError> {
        self.db
            .batch(vec![
                self.db.prepare("INSERT INTO users (name) VALUES ('ada')"),
                self.db.prepare("INSERT INTO users (name) VALUES ('grace')"),
            ])
            .await
    }

    /// A read in a loop: it runs several times, all reads.
    #[d1_retry(policy = NO_BUDGET)]
    async fn find_all(&self, ids: &[i64]) -> Result<Vec<Option<i64>>, DbError> {
        let mut found = Vec::new();
        for id in ids {
            found.push(
                self.db
                    .prepare("SELECT id FROM users WHERE id = ?1")
                    .bind(&[*id])?
                    .first()
                    .await?,
            );
        }
        Ok(found)
    }

    /// Declared read-only, with dynamic SQL: a body that is one D1 call, retried as that
    /// call.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn query(&self, sql: &str) -> Result<u64, DbError> {
        self.db.prepare(sql).run().await
    }

    /// Declared read-only, with dynamic SQL and then a read: a whole body.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn query_then_read(&self, sql: &str) -> Result<u64, DbError> {
        self.db.prepare(sql).run().await?;
        self.db.prepare("SELECT 1").run().await
    }
}

const FIND_SQL: &str = "SELECT id FROM users WHERE id = ?1";

impl Users {
    const TOUCH_SQL: &str = "UPDATE users SET seen_at = unixepoch()";

    /// Constant SQL, judged by the compiler.
    #[d1_retry(policy = NO_BUDGET)]
    async fn find_constant(&self) -> Result<u64, DbError> {
        self.db.prepare(FIND_SQL).run().await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn touch_constant(&self) -> Result<u64, DbError> {
        self.db.prepare(Self::TOUCH_SQL).run().await
    }
}

async fn count(db: &FakeDb) -> Result<u64, DbError> {
    db.prepare("SELECT count(*) FROM users").run().await
}

// Row: every site read-only.

#[tokio::test(start_paused = true)]
async fn read_retries_maybe_executed_until_it_succeeds() {
    let users = Users::new(FakeDb::failing(&[NETWORK_LOST; 4]));
    let (found, waited) = timed(users.find(7)).await;
    assert_eq!(found, Ok(Some(7)));
    assert_eq!(users.db.calls(), 5);
    // 160-240 + 320-480 + 640-960 + 1280-1920 ms.
    assert!((ms(2400)..=ms(3600)).contains(&waited), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn read_retries_not_executed_after_the_first_delay() {
    let users = Users::new(FakeDb::failing(&[NOT_REACHED]));
    let (found, waited) = timed(users.find(7)).await;
    assert_eq!(found, Ok(Some(7)));
    assert_eq!(users.db.calls(), 2);
    assert!((ms(160)..=ms(240)).contains(&waited), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn read_gives_the_last_error_back_after_five_attempts() {
    let users = Users::new(FakeDb::failing(&[INTERNAL; 6]));
    let (found, waited) = timed(users.find(7)).await;
    assert_eq!(found, Err(DbError::new(INTERNAL)));
    assert_eq!(users.db.calls(), 5);
    assert!((ms(2400)..=ms(3600)).contains(&waited), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn read_is_not_retried_after_a_permanent_failure() {
    let users = Users::new(FakeDb::failing(&["no such table: users: SQLITE_ERROR"]));
    let (found, waited) = timed(users.find(7)).await;
    assert_eq!(
        found,
        Err(DbError::new("no such table: users: SQLITE_ERROR"))
    );
    assert_eq!(users.db.calls(), 1);
    assert_eq!(waited, Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn dynamic_sql_that_reads_in_this_attempt_is_retried_as_a_read() {
    let users = Users::new(FakeDb::failing(&[NETWORK_LOST, NETWORK_LOST]));
    assert_eq!(users.run_sql("SELECT * FROM users").await, Ok(1));
    assert_eq!(users.db.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn several_reads_retry_the_failed_one_alone() {
    // The first read succeeds, the second fails maybe-executed: only the second runs again.
    let db = FakeDb::new([Succeed, fake_db::Fail(NETWORK_LOST)]);
    let users = Users::new(db);
    assert_eq!(users.profile(3).await, Ok((Some(3), Some(3))));
    let ran = users.db.ran();
    assert_eq!(ran.len(), 3);
    assert_ne!(ran[0], ran[1]);
    assert_eq!(ran[1], ran[2]);
}

#[tokio::test(start_paused = true)]
async fn reads_in_a_loop_are_retried() {
    let db = FakeDb::new([Succeed, fake_db::Fail(INTERNAL)]);
    let users = Users::new(db);
    assert_eq!(users.find_all(&[1, 2]).await, Ok(vec![Some(1), Some(2)]));
    // The first read is not run again: only the one that failed.
    assert_eq!(users.db.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn constant_sql_is_judged_like_a_literal() {
    let users = Users::new(FakeDb::failing(&[NETWORK_LOST]));
    assert_eq!(users.find_constant().await, Ok(1));
    assert_eq!(users.db.calls(), 2);

    let users = Users::new(FakeDb::failing(&[NETWORK_LOST]));
    assert_eq!(
        users.touch_constant().await,
        Err(DbError::new(NETWORK_LOST))
    );
    assert_eq!(users.db.calls(), 1);

    let users = Users::new(FakeDb::failing(&[NOT_REACHED]));
    assert_eq!(users.touch_constant().await, Ok(1));
    assert_eq!(users.db.calls(), 2);
}

// Row: exactly one site, which may write.

#[tokio::test(start_paused = true)]
async fn lone_write_is_retried_when_d1_was_not_reached() {
    let users = Users::new(FakeDb::failing(&[NOT_REACHED, NOT_REACHED]));
    let (changed, waited) = timed(users.rename(7)).await;
    assert_eq!(changed, Ok(1));
    assert_eq!(users.db.calls(), 3);
    assert!((ms(480)..=ms(720)).contains(&waited), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn lone_write_is_not_retried_when_it_may_have_run() {
    for message in [NETWORK_LOST, INTERNAL] {
        let users = Users::new(FakeDb::failing(&[message]));
        let (changed, waited) = timed(users.rename(7)).await;
        assert_eq!(changed, Err(DbError::new(message)));
        assert_eq!(users.db.calls(), 1, "{message}");
        assert_eq!(waited, Duration::ZERO);
    }
}

#[tokio::test(start_paused = true)]
async fn lone_write_is_not_retried_after_a_constraint_failure() {
    let users = Users::new(FakeDb::failing(&[UNIQUE]));
    assert_eq!(users.rename(7).await, Err(DbError::new(UNIQUE)));
    assert_eq!(users.db.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn dynamic_sql_that_writes_in_this_attempt_is_a_lone_write() {
    let users = Users::new(FakeDb::failing(&[NETWORK_LOST]));
    assert_eq!(
        users.run_sql("DELETE FROM users").await,
        Err(DbError::new(NETWORK_LOST))
    );
    assert_eq!(users.db.calls(), 1);

    let users = Users::new(FakeDb::failing(&[NOT_REACHED]));
    assert_eq!(users.run_sql("DELETE FROM users").await, Ok(1));
    assert_eq!(users.db.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn batch_is_one_site() {
    let users = Users::new(FakeDb::failing(&[NOT_REACHED]));
    assert_eq!(users.create_pair().await, Ok(vec![1, 1]));
    assert_eq!(users.db.calls(), 2);

    let users = Users::new(FakeDb::failing(&[NETWORK_LOST]));
    assert_eq!(users.create_pair().await, Err(DbError::new(NETWORK_LOST)));
    assert_eq!(users.db.calls(), 1);
}

// Row: a read, then dynamic SQL: each execution on its own.

#[tokio::test(start_paused = true)]
async fn a_dynamic_write_after_a_read_is_retried_alone_and_only_when_not_reached() {
    let users = Users::new(FakeDb::new([Succeed, fake_db::Fail(NOT_REACHED)]));
    assert_eq!(users.read_then("UPDATE users SET name = 'x'").await, Ok(1));
    assert_eq!(users.db.calls(), 3);
    assert_eq!(users.db.ran()[1], users.db.ran()[2]);
    for message in [NETWORK_LOST, UNIQUE] {
        let users = Users::new(FakeDb::new([Succeed, fake_db::Fail(message)]));
        assert_eq!(
            users.read_then("UPDATE users SET name = 'x'").await,
            Err(DbError::new(message))
        );
        assert_eq!(users.db.calls(), 2, "{message}");
    }
}

#[tokio::test(start_paused = true)]
async fn dynamic_sql_that_reads_after_a_read_is_retried_alone() {
    let users = Users::new(FakeDb::new([Succeed, fake_db::Fail(NETWORK_LOST)]));
    assert_eq!(users.read_then("SELECT 2").await, Ok(1));
    assert_eq!(users.db.calls(), 3);
}

// Row: idempotent.

#[tokio::test(start_paused = true)]
async fn idempotent_writes_are_retried_like_reads() {
    let users = Users::new(FakeDb::new([
        Succeed,
        fake_db::Fail(INTERNAL),
        fake_db::Fail(NOT_REACHED),
    ]));
    assert_eq!(users.upsert_pair().await, Ok(1));
    assert_eq!(users.db.calls(), 5);

    let users = Users::new(FakeDb::failing(&[UNIQUE]));
    assert_eq!(users.upsert_pair().await, Err(DbError::new(UNIQUE)));
    assert_eq!(users.db.calls(), 1);
}

// Row: no site found, declared read-only.

#[tokio::test(start_paused = true)]
async fn read_only_without_a_visible_site_is_retried() {
    let users = Users::new(FakeDb::failing(&[NETWORK_LOST]));
    assert_eq!(users.count_through_helper().await, Ok(1));
    assert_eq!(users.db.calls(), 2);

    // The database a parameter: a type marked `D1Receiver` (every call its own, `.await`
    // too) that is not declared as D1's statement is not taken for one where it is handed on.
    let db = FakeDb::failing(&[NETWORK_LOST]);
    assert_eq!(count_through_helper_of(&db).await, Ok(1));
    assert_eq!(db.calls(), 2);
}

/// No statement in sight, the database a parameter: the helper runs it.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn count_through_helper_of(db: &FakeDb) -> Result<u64, DbError> {
    count(db).await
}

// `read_only` with dynamic SQL that turns out to write.

#[tokio::test(start_paused = true)]
async fn read_only_dynamic_write_is_treated_as_a_write_and_logged() {
    let (logs, _guard) = Logs::capture();
    let users = Users::new(FakeDb::failing(&[NETWORK_LOST]));
    assert_eq!(
        users.query_then_read("DELETE FROM users").await,
        Err(DbError::new(NETWORK_LOST))
    );
    assert_eq!(users.db.calls(), 1);
    let text = logs.text();
    assert!(
        text.contains("ERROR") && text.contains("read_only") && text.contains("DELETE FROM users"),
        "{text}"
    );

    // The whole body would run again, and a write it ran may have completed: never
    // retried, even when D1 was not reached.
    let users = Users::new(FakeDb::failing(&[NOT_REACHED]));
    assert_eq!(
        users.query_then_read("DELETE FROM users").await,
        Err(DbError::new(NOT_REACHED))
    );
    assert_eq!(users.db.calls(), 1);
    let users = Users::new(FakeDb::new([Succeed, fake_db::Fail(NOT_REACHED)]));
    assert_eq!(
        users.query_then_read("DELETE FROM users").await,
        Err(DbError::new(NOT_REACHED))
    );
    assert_eq!(users.db.calls(), 2, "the delete ran once");

    // And a read is retried whatever the failure.
    let users = Users::new(FakeDb::new([Succeed, fake_db::Fail(NETWORK_LOST)]));
    assert_eq!(users.query_then_read("SELECT 2").await, Ok(1));
    assert_eq!(users.db.calls(), 4, "both reads again");
}

// A `read_only` body that is one D1 call: that call is retried on its own, as the
// default mode retries it, which is the whole body's retry less the rebuilding of its
// statement.

#[tokio::test(start_paused = true)]
async fn a_read_only_body_of_one_call_is_retried_as_that_call() {
    let (logs, _guard) = Logs::capture();
    // A read, whatever the failure.
    let users = Users::new(FakeDb::failing(&[NETWORK_LOST, NOT_REACHED]));
    assert_eq!(users.query("SELECT 1").await, Ok(1));
    assert_eq!(users.db.calls(), 3);
    assert_eq!(users.db.prepared(), 1, "the statement is built once");

    // Dynamic SQL that writes is a write: after D1 may have run it, not retried.
    let users = Users::new(FakeDb::failing(&[NETWORK_LOST]));
    assert_eq!(
        users.query("DELETE FROM users").await,
        Err(DbError::new(NETWORK_LOST))
    );
    assert_eq!(users.db.calls(), 1);
    let text = logs.text();
    assert!(
        text.contains("maybe_executed_write") && text.contains("Users::query"),
        "{text}"
    );
    // Before D1 ran it, it is, as any write's: the one call that failed ran nothing.
    let users = Users::new(FakeDb::failing(&[NOT_REACHED]));
    assert_eq!(users.query("DELETE FROM users").await, Ok(1));
    assert_eq!(users.db.calls(), 2);
}

// `?` and `return` end one attempt, not the function.

struct Accounts {
    db: FakeDb,
}

impl Accounts {
    #[d1_retry(policy = NO_BUDGET)]
    async fn balance(&self, id: i64) -> Result<Option<i64>, RepoError> {
        if id < 0 {
            return Ok(None);
        }
        let found = self
            .db
            .prepare("SELECT balance FROM accounts WHERE id = ?1")
            .bind(&[id])?
            .first()
            .await?;
        Ok(found)
    }

    /// Returns a transient error of its own on the first attempt, in a whole body.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn flaky(&self, attempts: &std::sync::atomic::AtomicU32) -> Result<u64, DbError> {
        if attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
            return Err(DbError::new(NETWORK_LOST));
        }
        self.db.prepare("SELECT 1").run().await?;
        self.db.prepare("SELECT 2").run().await
    }

    /// The same with an `.await` inside a plain macro's arguments, which the count of
    /// `.await`s reads: a whole body.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn flaky_awaiting_in_a_macro(
        &self,
        attempts: &std::sync::atomic::AtomicU32,
    ) -> Result<u64, DbError> {
        if attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
            return Err(DbError::new(NETWORK_LOST));
        }
        assert!(core::future::ready(true).await);
        self.db.prepare("SELECT 1").run().await
    }

    /// One D1 call beside a macro of the user's, which may await what it does not show: a
    /// whole body.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn flaky_beside_a_macro(
        &self,
        attempts: &std::sync::atomic::AtomicU32,
    ) -> Result<u64, DbError> {
        macro_rules! first_attempt {
            () => {
                attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0
            };
        }
        if first_attempt!() {
            return Err(DbError::new(NETWORK_LOST));
        }
        self.db.prepare("SELECT 1").run().await
    }

    /// One D1 call beside `join!`, which awaits what it is handed in code of its own: a
    /// whole body.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn flaky_beside_join(
        &self,
        attempts: &std::sync::atomic::AtomicU32,
    ) -> Result<u64, DbError> {
        let (first,) = tokio::join!(async {
            attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0
        });
        if first {
            return Err(DbError::new(NETWORK_LOST));
        }
        self.db.prepare("SELECT 1").run().await
    }

    /// One D1 call beside std's `matches!` and `debug_assert!`, which await nothing they do
    /// not show: one call.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn flaky_call_beside_std_macro(
        &self,
        attempts: &std::sync::atomic::AtomicU32,
    ) -> Result<u64, DbError> {
        let first = matches!(
            attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            0
        );
        debug_assert!(attempts.load(std::sync::atomic::Ordering::Relaxed) > 0);
        if first {
            return Err(DbError::new(NETWORK_LOST));
        }
        self.db.prepare("SELECT 1").run().await
    }

    /// The same in a body that is one D1 call, whose retries are that call's.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn flaky_call(&self, attempts: &std::sync::atomic::AtomicU32) -> Result<u64, DbError> {
        if attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0 {
            return Err(DbError::new(NETWORK_LOST));
        }
        self.db.prepare("SELECT 1").run().await
    }
}

#[tokio::test(start_paused = true)]
async fn question_mark_converts_and_the_cause_chain_is_read() {
    let accounts = Accounts {
        db: FakeDb::failing(&[NETWORK_LOST]),
    };
    // `RepoError`'s own message says nothing; its source is the D1 error.
    assert!(matches!(accounts.balance(4).await, Ok(Some(4))));
    assert_eq!(accounts.db.calls(), 2);

    let accounts = Accounts {
        db: FakeDb::failing(&[UNIQUE]),
    };
    let error = accounts.balance(4).await.err().map(|e| e.source);
    assert_eq!(error, Some(DbError::new(UNIQUE)));
    assert_eq!(accounts.db.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn early_return_ends_the_attempt() {
    let accounts = Accounts {
        db: FakeDb::default(),
    };
    assert!(matches!(accounts.balance(-1).await, Ok(None)));
    assert_eq!(accounts.db.calls(), 0);

    let attempts = std::sync::atomic::AtomicU32::new(0);
    assert_eq!(accounts.flaky(&attempts).await, Ok(1));
    assert_eq!(attempts.into_inner(), 2);
    assert_eq!(accounts.db.calls(), 2);

    // A body that is one D1 call retries that call's failures: an error it returns
    // without one is not a D1 failure, and is returned.
    let attempts = std::sync::atomic::AtomicU32::new(0);
    assert_eq!(
        accounts.flaky_call(&attempts).await,
        Err(DbError::new(NETWORK_LOST))
    );
    assert_eq!(attempts.into_inner(), 1);
    assert_eq!(accounts.db.calls(), 2);
}

/// What keeps a body whole, told apart by an error the body makes itself on its first
/// attempt, which only a whole body retries: an `.await` in a macro's arguments, a macro
/// of the user's, and `join!`; std's `matches!` and `debug_assert!` do not.
#[tokio::test(start_paused = true)]
async fn a_macro_keeps_a_body_whole_unless_it_awaits_only_what_it_shows() {
    let accounts = Accounts {
        db: FakeDb::default(),
    };
    let attempts = std::sync::atomic::AtomicU32::new(0);
    assert_eq!(accounts.flaky_awaiting_in_a_macro(&attempts).await, Ok(1));
    assert_eq!(
        attempts.into_inner(),
        2,
        "an .await in assert!: a whole body"
    );

    let attempts = std::sync::atomic::AtomicU32::new(0);
    assert_eq!(accounts.flaky_beside_a_macro(&attempts).await, Ok(1));
    assert_eq!(
        attempts.into_inner(),
        2,
        "a macro of the user's: a whole body"
    );

    let attempts = std::sync::atomic::AtomicU32::new(0);
    assert_eq!(accounts.flaky_beside_join(&attempts).await, Ok(1));
    assert_eq!(attempts.into_inner(), 2, "join!: a whole body");

    let attempts = std::sync::atomic::AtomicU32::new(0);
    assert_eq!(
        accounts.flaky_call_beside_std_macro(&attempts).await,
        Err(DbError::new(NETWORK_LOST))
    );
    assert_eq!(
        attempts.into_inner(),
        1,
        "matches! and debug_assert!: one call"
    );
    assert_eq!(accounts.db.calls(), 3);
}

// Options.

struct Tuned {
    db: FakeDb,
}

impl Tuned {
    #[d1_retry(max_attempts = 2)]
    async fn two_attempts(&self) -> Result<u64, DbError> {
        self.db.prepare("SELECT 1").run().await
    }

    #[d1_retry(base_delay_ms = 50, max_delay_ms = 60)]
    async fn quick(&self) -> Result<u64, DbError> {
        self.db.prepare("SELECT 1").run().await
    }

    #[d1_retry(policy = THREE_QUICK)]
    async fn with_policy(&self) -> Result<u64, DbError> {
        self.db.prepare("SELECT 1").run().await
    }

    #[d1_retry(name = "users.lookup", policy = NO_BUDGET)]
    async fn named(&self) -> Result<u64, DbError> {
        self.db.prepare("SELECT 1").run().await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn unnamed(&self) -> Result<u64, DbError> {
        self.db.prepare("SELECT 1").run().await
    }

    /// No receiver: `Self` in the signature says the function sits in an `impl`.
    #[d1_retry(policy = NO_BUDGET)]
    async fn opened(db: FakeDb) -> Result<Self, DbError> {
        db.prepare("SELECT 1").run().await?;
        Ok(Self { db })
    }
}

#[d1_retry(policy = NO_BUDGET)]
async fn free_function(db: &FakeDb) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

#[tokio::test(start_paused = true)]
async fn max_attempts_is_honoured() {
    let tuned = Tuned {
        db: FakeDb::failing(&[NETWORK_LOST; 3]),
    };
    let (result, waited) = timed(tuned.two_attempts()).await;
    assert_eq!(result, Err(DbError::new(NETWORK_LOST)));
    assert_eq!(tuned.db.calls(), 2);
    assert!((ms(160)..=ms(240)).contains(&waited), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn delay_knobs_are_honoured() {
    let tuned = Tuned {
        db: FakeDb::failing(&[NETWORK_LOST; 3]),
    };
    let (result, waited) = timed(tuned.quick()).await;
    assert_eq!(result, Ok(1));
    assert_eq!(tuned.db.calls(), 4);
    // 50, then 100 and 200 capped to 60, each jittered to 80-120 %.
    assert!((ms(136)..=ms(204)).contains(&waited), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn policy_constant_is_honoured() {
    let tuned = Tuned {
        db: FakeDb::failing(&[NETWORK_LOST; 5]),
    };
    let (result, waited) = timed(tuned.with_policy()).await;
    assert_eq!(result, Err(DbError::new(NETWORK_LOST)));
    assert_eq!(tuned.db.calls(), 3);
    assert!((ms(16)..=ms(24)).contains(&waited), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn operation_names_reach_the_logs() {
    let (logs, _guard) = Logs::capture();
    let tuned = || Tuned {
        db: FakeDb::failing(&[NETWORK_LOST]),
    };
    tuned().named().await.ok();
    tuned().unnamed().await.ok();
    free_function(&FakeDb::failing(&[NETWORK_LOST])).await.ok();
    Tuned::opened(FakeDb::failing(&[NETWORK_LOST])).await.ok();
    logs.assert_contains("d1.operation=users.lookup ");
    logs.assert_contains("d1.operation=Tuned::opened ");
    logs.assert_contains("d1.operation=Tuned::unnamed ");
    logs.assert_contains("d1.operation=free_function ");
}

#[tokio::test(start_paused = true)]
async fn each_retry_logs_the_documented_fields() {
    // Retried in place, and by the runtime's loop where a kept future was made.
    for later in [false, true] {
        let (logs, _guard) = Logs::capture();
        let users = Users::new(FakeDb::failing(&[NETWORK_LOST, NETWORK_LOST]));
        let found = if later {
            users.find_later(9).await
        } else {
            users.find(9).await
        };
        assert_eq!(found, Ok(Some(9)));
        let operation = if later {
            "d1.operation=Users::find_later "
        } else {
            "d1.operation=Users::find "
        };
        assert_retries_logged(&logs, operation);
    }
}

fn assert_retries_logged(logs: &Logs, operation: &str) {
    let retries: Vec<String> = logs
        .lines()
        .into_iter()
        .filter(|line| line.contains("D1 transient failure, retrying"))
        .collect();
    assert_eq!(retries.len(), 2, "{retries:#?}");
    for (n, line) in retries.iter().enumerate() {
        assert!(line.contains("WARN"), "{line}");
        for field in [
            operation,
            "d1.read_only=true",
            &format!("d1.attempt={}", n + 1),
            "d1.max_attempts=5",
            "d1.failure_class=\"maybe_executed\"",
            "d1.failure=D1_ERROR: Network connection lost.",
            "d1.delay_ms=",
        ] {
            assert!(line.contains(field), "{field} missing in {line}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_write_that_may_have_run_is_logged_as_not_retried() {
    let (logs, _guard) = Logs::capture();
    let users = Users::new(FakeDb::failing(&[INTERNAL]));
    assert!(users.rename(1).await.is_err());
    let text = logs.text();
    assert!(
        text.contains("D1 failure, not retried")
            && text.contains("d1.withheld=\"maybe_executed_write\"")
            && text.contains("d1.read_only=false")
            && text.contains("d1.failure_class=\"maybe_executed\""),
        "{text}"
    );
}

/// Two reads through an `async` closure: without `move`, the closure runs within the
/// function's schedule, so its calls share the function's four retries.
#[d1_retry(policy = NO_BUDGET)]
async fn through_an_async_closure(db: &FakeDb) -> Result<u64, DbError> {
    let read = async |sql: &'static str| db.prepare(sql).run().await;
    let _ = read("SELECT 1").await;
    read("SELECT 2").await
}

/// The same through an `async move` closure: each call of it has a schedule of its own,
/// as an `async move` block does.
#[d1_retry(policy = NO_BUDGET)]
async fn through_an_async_move_closure(db: &FakeDb) -> Result<u64, DbError> {
    let read = async move |sql: &'static str| db.prepare(sql).run().await;
    let _ = read("SELECT 1").await;
    read("SELECT 2").await
}

/// A future of an execution kept in an `async` closure, then awaited: retried where it was
/// made, as in the body.
#[d1_retry(policy = NO_BUDGET)]
async fn stored_in_an_async_closure(db: &FakeDb) -> Result<u64, DbError> {
    let stmt = db.prepare("SELECT 1");
    let run = async || {
        let pending = stmt.run();
        pending.await
    };
    run().await
}

#[tokio::test(start_paused = true)]
async fn async_closures_share_the_function_s_schedule_unless_move() {
    let db = FakeDb::failing(&[NOT_REACHED; 12]);
    assert!(through_an_async_closure(&db).await.is_err());
    assert_eq!(db.calls(), 5 + 1, "the second read has no retry left");

    let db = FakeDb::failing(&[NOT_REACHED; 12]);
    assert!(through_an_async_move_closure(&db).await.is_err());
    assert_eq!(db.calls(), 5 + 5, "each call has its own schedule");

    let db = FakeDb::failing(&[NOT_REACHED, NOT_REACHED]);
    assert_eq!(stored_in_an_async_closure(&db).await, Ok(1));
    assert_eq!(db.calls(), 3);
}
