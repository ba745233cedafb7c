//! `#[d1_retry(read_only)]` bodies that are one D1 call (one `.await` in the body, on that
//! call): retried as that call, on its own, as the default mode retries it, instead of by
//! the whole-body loop. A read keeps what the whole body gave it (retried whatever the
//! failure); a write the body was not meant to make (SQL handed in, a statement kept in a
//! field or passed in, a list handed to `batch`, an insert in a loop) is retried only when
//! D1 was not reached, and lands once; the code around the call, side effects included,
//! runs once. Each shape is swept with a failure at every call, before and after it ran,
//! and the timed one with stalls too.

use std::sync::Arc;

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, D1Result, Error, Fault, Message, Timing};
use test_support::calls_with;

use crate::harness::{
    Count, Effects, INSERT_ITEM, Limits, NO_BUDGET, READ_N, database, n, rows, sweep, sweep_timed,
};

struct Shop {
    db: D1Database,
    insert: D1PreparedStatement,
    effects: Arc<Effects>,
}

impl Shop {
    /// Dynamic SQL that reads, with a side effect before it: the effect is not repeated.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn count(&self, table: &str) -> Result<i64, Error> {
        self.effects.push("counted");
        let sql = format!("SELECT count(*) AS n FROM {table}");
        Ok(n(self.db.prepare(sql).first::<Count>(None).await?))
    }

    /// SQL handed in, which writes: judged as it is prepared.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn run_sql(&self, sql: &str, item: &str) -> Result<D1Result, Error> {
        self.db.prepare(sql).bind(&[item.into()])?.run().await
    }

    /// The same through `exec`.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn exec_sql(&self, sql: &str) -> Result<(), Error> {
        self.db.exec(sql).await?;
        Ok(())
    }

    /// A statement kept in a field: read from the statement as the call begins.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn run_field(&self) -> Result<D1Result, Error> {
        self.insert.run().await
    }

    /// A list made elsewhere, moved into the call (which a whole body, run again, could
    /// not): each statement read as the batch begins.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn batch_list(&self, list: Vec<D1PreparedStatement>) -> Result<usize, Error> {
        Ok(self.db.batch(list).await?.len())
    }

    /// One `.await`, in a loop: each insert is its own call, retried on its own.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn insert_each(&self, sql: &str, items: &[&str]) -> Result<usize, Error> {
        let statement = self.db.prepare(sql);
        for item in items {
            statement.clone().bind(&[(*item).into()])?.run().await?;
            self.effects.push(format!("inserted {item}"));
        }
        Ok(items.len())
    }

    /// The call's future kept, then awaited; its SQL a constant, checked read-only at
    /// compile time.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn count_later(&self) -> Result<i64, Error> {
        let statement = self.db.prepare(READ_N);
        let pending = statement.first::<Count>(None);
        Ok(n(pending.await?))
    }

    /// Under an attempt timeout: a cut call counts as maybe executed.
    #[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000)]
    async fn run_sql_timed(&self, sql: &str, item: &str) -> Result<D1Result, Error> {
        self.db.prepare(sql).bind(&[item.into()])?.run().await
    }
}

/// A statement passed in.
#[d1_retry(read_only, policy = NO_BUDGET)]
async fn run_passed(statement: &D1PreparedStatement) -> Result<D1Result, Error> {
    statement.run().await
}

fn shop(db: D1Database, effects: Arc<Effects>) -> Shop {
    let insert = db
        .prepare(INSERT_ITEM)
        .bind(&["kept".into()])
        .expect("binds");
    Shop {
        db,
        insert,
        effects,
    }
}

#[tokio::test(start_paused = true)]
async fn a_read_only_body_of_one_call_retries_that_call_alone() {
    sweep(
        "a read, a side effect before it",
        |db, effects| async move { shop(db, effects).count("orders").await },
    )
    .await;
    sweep("a write handed in", |db, effects| async move {
        shop(db, effects)
            .run_sql(INSERT_ITEM, "tea")
            .await
            .map(|_| ())
    })
    .await;
    sweep("a write handed to exec", |db, effects| async move {
        shop(db, effects)
            .exec_sql("INSERT INTO orders (item) VALUES ('exec')")
            .await
    })
    .await;
    sweep("a write kept in a field", |db, effects| async move {
        shop(db, effects).run_field().await.map(|_| ())
    })
    .await;
    sweep("a write passed in", |db, _| async move {
        let statement = db.prepare(INSERT_ITEM).bind(&["passed".into()])?;
        run_passed(&statement).await.map(|_| ())
    })
    .await;
    sweep(
        "a batch of a list made elsewhere",
        |db, effects| async move {
            let list = vec![
                db.prepare(READ_N),
                db.prepare(INSERT_ITEM).bind(&["listed".into()])?,
            ];
            shop(db, effects).batch_list(list).await
        },
    )
    .await;
    sweep("inserts in a loop", |db, effects| async move {
        shop(db, effects)
            .insert_each(INSERT_ITEM, &["a", "b", "c"])
            .await
    })
    .await;
    sweep("a read kept, then awaited", |db, effects| async move {
        shop(db, effects).count_later().await
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_read_only_body_of_one_call_under_a_timeout_retries_that_call_alone() {
    let limits = Limits {
        attempt: core::time::Duration::from_secs(2),
        deadline: None,
        idempotent: false,
        read_only_body: false,
    };
    sweep_timed(
        "a write handed in, timed",
        limits,
        |db, effects| async move {
            shop(db, effects)
                .run_sql_timed(INSERT_ITEM, "tea")
                .await
                .map(|_| ())
        },
    )
    .await;
}

/// The insert handed in, failed once at the call: after "maybe executed" it is not made
/// again, whether it ran (one row) or not (none), and the caller has the error; after "not
/// executed" it is made again, where the whole-body loop, which cannot tell that no write ran
/// before the failure, would not have run the body again.
#[tokio::test(start_paused = true)]
async fn a_write_in_a_read_only_body_of_one_call_is_judged_as_the_call_s() {
    for (message, timing, retried, landed) in [
        (
            Message::NetworkConnectionLost,
            Timing::AfterExecution,
            false,
            1,
        ),
        (
            Message::NetworkConnectionLost,
            Timing::BeforeExecution,
            false,
            0,
        ),
        (Message::CannotResolve, Timing::BeforeExecution, true, 1),
    ] {
        let case = format!("{message:?} {timing:?}");
        let db = database();
        db.add_fault(
            Fault::new(message)
                .timing(timing)
                .when_sql_contains("INSERT")
                .times(1),
        );
        let effects = Arc::new(Effects::default());
        let result = shop(db.clone(), effects).run_sql(INSERT_ITEM, "tea").await;
        assert_eq!(result.is_ok(), retried, "{case}: {result:?}");
        assert_eq!(rows(&db, "orders"), landed, "{case}");
        assert_eq!(
            calls_with(&db, "INSERT"),
            1 + usize::from(retried),
            "{case}"
        );
    }
}
