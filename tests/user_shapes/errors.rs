//! Error types of the user's own: a type that prefixes D1's message (through `From` and
//! through `map_err`), and `anyhow` with `context`. The class of a failure is read on the
//! error the D1 call returned, before the conversion, so no prefix may hide it. A type
//! that drops the failure altogether does not hide it from a whole body either: its
//! attempt is decided by the class of the last failure a D1 call within it left to it.

use std::sync::Arc;

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, Error, Message, Timing};
use test_support::{calls_with, fail_once};

use crate::harness::{
    Count, Effects, INSERT_ITEM, NO_BUDGET, READ_N, database, hits, most_copies, n, rows, sweep,
};

/// An application error whose text puts its own words before D1's.
#[derive(Debug, PartialEq)]
struct AppError(String);

impl core::fmt::Display for AppError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "app: {}", self.0)
    }
}

impl std::error::Error for AppError {}

impl From<Error> for AppError {
    fn from(e: Error) -> Self {
        AppError(format!("db failed ({e})"))
    }
}

struct Orders {
    db: D1Database,
    effects: Arc<Effects>,
}

impl Orders {
    /// A read and an insert converted by `map_err`, a read converted by `?` through `From`.
    #[d1_retry(policy = NO_BUDGET)]
    async fn app_errors(&self, item: &str) -> Result<i64, AppError> {
        let c = self
            .db
            .prepare(READ_N)
            .first::<Count>(None)
            .await
            .map_err(|e| AppError(format!("count failed: {e}")))?;
        self.effects.push("read");
        self.db
            .prepare(INSERT_ITEM)
            .bind(&[item.into()])?
            .run()
            .await
            .map_err(|e| AppError(format!("insert failed: {e}")))?;
        self.effects.push("write");
        let d = self.db.prepare(READ_N).first::<Count>(None).await?;
        self.effects.push("read 2");
        Ok(n(c) * 10 + n(d))
    }

    /// The same with `anyhow`'s `context` and `with_context`.
    #[d1_retry(policy = NO_BUDGET)]
    async fn anyhow_errors(&self, item: &str) -> anyhow::Result<i64> {
        use anyhow::Context;
        let c = self
            .db
            .prepare(READ_N)
            .first::<Count>(None)
            .await
            .context("count")?;
        self.effects.push("read");
        self.db
            .prepare(INSERT_ITEM)
            .bind(&[item.into()])?
            .run()
            .await
            .with_context(|| format!("insert {item}"))?;
        self.effects.push("write");
        Ok(n(c))
    }
}

fn orders(db: &D1Database) -> Orders {
    Orders {
        db: db.clone(),
        effects: Arc::default(),
    }
}

/// A read that failed maybe executed, an insert that failed maybe executed or not
/// executed: the cases in which the caller's error type would have to carry the class.
const FAILURES: [(Message, Timing, &str); 4] = [
    (
        Message::NetworkConnectionLost,
        Timing::AfterExecution,
        "SELECT",
    ),
    (
        Message::NetworkConnectionLost,
        Timing::AfterExecution,
        "INSERT",
    ),
    (Message::CannotResolve, Timing::BeforeExecution, "INSERT"),
    (Message::InternalError, Timing::AfterExecution, "INSERT"),
];

/// Behind the user's prefix (from `map_err` or `From`), a read is still retried after any
/// transient failure and an insert only when D1 was not reached; a lost insert hands back
/// the user's own error, converted once.
#[tokio::test(start_paused = true)]
async fn a_prefixing_error_type_does_not_hide_the_failure_class() {
    sweep("AppError", |db, effects| async move {
        Orders { db, effects }.app_errors("ae").await
    })
    .await;
    for (message, timing, fragment) in FAILURES {
        let case = format!("{message:?} {timing:?} {fragment}");
        let db = database();
        fail_once(&db, fragment, message, timing);
        let result = orders(&db).app_errors("ae").await;
        assert!(most_copies(&db) <= 1, "{case}");
        let write_lost = fragment == "INSERT" && message != Message::CannotResolve;
        assert_eq!(result.is_err(), write_lost, "{case}: {result:?}");
        if let Err(AppError(text)) = result {
            assert!(text.starts_with("insert failed: "), "{case}: {text}");
            assert_eq!(calls_with(&db, "INSERT"), 1, "{case}");
        }
    }
}

/// Behind `anyhow`'s context, the same: the class is read before the conversion.
#[tokio::test(start_paused = true)]
async fn anyhow_context_does_not_hide_the_failure_class() {
    sweep("anyhow", |db, effects| async move {
        Orders { db, effects }.anyhow_errors("an").await
    })
    .await;
    for (message, timing, fragment) in FAILURES {
        let case = format!("{message:?} {timing:?} {fragment}");
        let db = database();
        fail_once(&db, fragment, message, timing);
        let result = orders(&db).anyhow_errors("an").await;
        assert!(most_copies(&db) <= 1, "{case}");
        let write_lost = fragment == "INSERT" && message != Message::CannotResolve;
        assert_eq!(result.is_err(), write_lost, "{case}: {result:?}");
        if let Err(error) = result {
            assert_eq!(error.to_string(), "insert an", "{case}");
            assert_eq!(calls_with(&db, "INSERT"), 1, "{case}");
        }
    }
}

/// An error type that keeps nothing of D1's failure, as route code often has it
/// (`.map_err(|_| Lossy::Database)?`): its text is not D1's, so it reads as permanent.
#[derive(Debug, PartialEq)]
enum Lossy {
    Database,
    NotFound,
}

impl core::fmt::Display for Lossy {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Lossy::Database => "database error",
            Lossy::NotFound => "not found",
        })
    }
}

impl std::error::Error for Lossy {}

/// Functions whose error drops D1's failure, and whole bodies around them: `report` and
/// `set_hits` are run again as a whole by the class of the last failure a D1 call of
/// d1-retry's within the attempt left to it.
struct Stats {
    db: D1Database,
}

impl Stats {
    /// Retried call by call, on its call's own error, when called alone; inside a
    /// whole body it leaves its failure to the body's attempt.
    #[d1_retry(policy = NO_BUDGET)]
    async fn count_lossy(&self) -> Result<i64, Lossy> {
        let c = self
            .db
            .prepare(READ_N)
            .first::<Count>(None)
            .await
            .map_err(|_| Lossy::Database)?;
        Ok(n(c))
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn audited_lossy(&self) -> Result<i64, Lossy> {
        let c = self
            .db
            .prepare("SELECT count(*) AS n FROM audit")
            .first::<Count>(None)
            .await
            .map_err(|_| Lossy::Database)?;
        Ok(n(c))
    }

    /// A `read_only` handler over two such functions.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn report(&self) -> Result<(i64, i64), Lossy> {
        let audited = self.audited_lossy().await?;
        let orders = self.count_lossy().await?;
        Ok((audited, orders))
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn update_hits(&self, to: i64) -> Result<(), Lossy> {
        self.db
            .prepare("UPDATE counters SET n = ?1 WHERE name = 'hits'")
            .bind(&[to.into()])
            .map_err(|_| Lossy::Database)?
            .run()
            .await
            .map_err(|_| Lossy::Database)?;
        Ok(())
    }

    /// Sets the counter, then reads: running it again sets the same value.
    #[d1_retry(idempotent, policy = NO_BUDGET)]
    async fn set_hits(&self, to: i64) -> Result<i64, Lossy> {
        self.update_hits(to).await?;
        self.count_lossy().await
    }

    /// A write through a nested function, then a read: once the write ran, the body must
    /// not run again, whatever the read's failure.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn archive_then_count(&self) -> Result<i64, Lossy> {
        self.archive().await?;
        self.count_lossy().await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn archive(&self) -> Result<(), Lossy> {
        self.db
            .prepare("INSERT INTO archive (item) VALUES ('kept')")
            .run()
            .await
            .map_err(|_| Lossy::Database)?;
        Ok(())
    }

    /// A read whose failure the body swallows, then a read of a table that does not exist:
    /// the last failure, a permanent one, decides.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn swallowed_then_missing(&self) -> Result<i64, Lossy> {
        let _ = self.count_lossy().await;
        self.count_missing().await
    }

    /// The same, the missing table read by the body itself, whose error tells D1's
    /// permanent class: it stands, whatever the swallowed failure left.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn swallowed_then_told(&self) -> Result<i64, Error> {
        let _ = self.count_lossy().await;
        let c = self
            .db
            .prepare("SELECT count(*) AS n FROM missing_table")
            .first::<Count>(None)
            .await?;
        Ok(n(c))
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn count_missing(&self) -> Result<i64, Lossy> {
        let c = self
            .db
            .prepare("SELECT count(*) AS n FROM missing_table")
            .first::<Count>(None)
            .await
            .map_err(|_| Lossy::Database)?;
        Ok(n(c))
    }

    /// A read whose failure the body swallows, a nested `read_only` call that succeeds,
    /// then an error of the body's own made of the lost read: the swallowed failure is the
    /// last one left to this attempt, whatever the nested attempt left or cleared.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn swallowed_then_nested(&self) -> Result<(i64, i64), Lossy> {
        let found = self.count_lossy().await.ok();
        let nested = self.report().await?;
        match found {
            Some(c) => Ok((c, nested.1)),
            None => Err(Lossy::NotFound),
        }
    }
}

/// A whole body whose error type drops D1's failure is run again by the class of the D1
/// failure behind it, for a read of its own and for one in a function it calls, at every
/// call and failure of the sweep; called alone, that function retries its read itself.
#[tokio::test(start_paused = true)]
async fn a_whole_body_whose_error_drops_the_failure_is_run_again_by_the_d1_call_s_class() {
    sweep("lossy read_only", |db, _| async move {
        Stats { db }.report().await
    })
    .await;
    sweep("lossy method alone", |db, _| async move {
        Stats { db }.count_lossy().await
    })
    .await;
    // A failure the body swallowed, then a nested attempt that succeeds: the nested
    // attempt clears the slot around its own polls and sets the body's back.
    let db = database();
    fail_once(&db, READ_N, Message::CannotResolve, Timing::BeforeExecution);
    assert_eq!(
        Stats { db: db.clone() }.swallowed_then_nested().await,
        Ok((0, 0))
    );
    assert_eq!(
        calls_with(&db, READ_N),
        4,
        "the body ran again, with its nested read"
    );

    // `idempotent`: the user vouched that the update may run again.
    let db = database();
    fail_once(
        &db,
        "UPDATE counters",
        Message::NetworkConnectionLost,
        Timing::AfterExecution,
    );
    assert_eq!(Stats { db: db.clone() }.set_hits(7).await, Ok(0));
    assert_eq!(calls_with(&db, "UPDATE counters"), 2);
    assert_eq!(hits(&db), 7);
}

/// What the D1 class allows still bounds it: a body whose nested write may have run is
/// not run again, and its reads after a write retry on their own, as outside a body; a
/// permanent failure, the last one left, is not retried although a transient one came
/// before it.
#[tokio::test(start_paused = true)]
async fn a_lossy_error_takes_the_class_not_the_right_to_run_again() {
    for message in [Message::NetworkConnectionLost, Message::InternalError] {
        let db = database();
        fail_once(&db, "INSERT INTO archive", message, Timing::AfterExecution);
        let result = Stats { db: db.clone() }.archive_then_count().await;
        assert_eq!(result, Err(Lossy::Database), "{message:?}");
        assert_eq!(rows(&db, "archive"), 1, "{message:?}: the write ran once");
        assert_eq!(calls_with(&db, "INSERT INTO archive"), 1, "{message:?}");
    }
    for (message, timing) in [
        (Message::CannotResolve, Timing::BeforeExecution),
        (Message::NetworkConnectionLost, Timing::AfterExecution),
    ] {
        let db = database();
        fail_once(&db, READ_N, message, timing);
        let result = Stats { db: db.clone() }.archive_then_count().await;
        assert_eq!(result, Ok(0), "{message:?}");
        assert_eq!(rows(&db, "archive"), 1, "{message:?}: the write ran once");
        assert_eq!(
            calls_with(&db, READ_N),
            2,
            "{message:?}: the read, not the body"
        );
    }

    let db = database();
    fail_once(&db, READ_N, Message::CannotResolve, Timing::BeforeExecution);
    let result = Stats { db: db.clone() }.swallowed_then_missing().await;
    assert_eq!(result, Err(Lossy::Database));
    assert_eq!(calls_with(&db, "missing_table"), 1, "not run again");

    let db = database();
    fail_once(&db, READ_N, Message::CannotResolve, Timing::BeforeExecution);
    let result = Stats { db: db.clone() }.swallowed_then_told().await;
    assert!(result.is_err());
    assert_eq!(calls_with(&db, "missing_table"), 1, "not run again");
}
