//! Error types of the user's own: a type that prefixes D1's message (through `From` and
//! through `map_err`), and `anyhow` with `context`. The class of a failure is read on the
//! error the D1 call returned, before the conversion, so no prefix may hide it.

use std::sync::Arc;

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, Error, Message, Timing};
use test_support::{calls_with, fail_once};

use crate::harness::{
    Count, Effects, INSERT_ITEM, NO_BUDGET, READ_N, database, most_copies, n, sweep,
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
