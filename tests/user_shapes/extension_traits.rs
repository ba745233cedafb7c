//! Extension traits of the user's, implemented for every type and in scope where the
//! annotated functions are written (as `tap`-style crates and a Worker's own helpers are),
//! with methods named like those the expansion calls on its own values (`again`, `take`,
//! `keep`, `join`, `turn`, `pointer`, ...). Rust's method lookup tries a trait's method
//! taking `&self` before an inherent one taking `&mut self`, one taking `self` before an
//! inherent one taking `&self`, and any of them before a method reached through `Deref`:
//! an expansion that called its own methods on a receiver of another type would call these
//! instead, and valid code would not compile (E0061, E0308, E0034 at the user's call).
//! The expansion's probes (which of two traits' methods applies tells it what a value is)
//! are trait methods by design, so only their names keep them apart from the user's: they
//! are named `d1_retry_*`, and the traits here hold the shorter names they had before
//! (`d1_site`, `d1_prepare`, ...), which a Worker's own D1 helpers might well use and which
//! made every call ambiguous (E0034).
//! Every shape of the expansion appears once, and each is swept with a failure at every
//! call: it compiles and retries as it does without the traits.

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, Error, Fault, Message};

use super::harness::{Count, INSERT_ITEM, NO_BUDGET, READ_N, database, n, sweep};

/// Two traits of the user's for every type, with a method of each name the expansion calls
/// on its own values: one taking `&self`, found before an inherent method taking `&mut self`,
/// the other taking `self`, found before an inherent method taking `&self`. The expansion
/// calls each of its methods on a receiver of the exact type the method takes, where an
/// inherent method is found first.
macro_rules! everywhere {
    ($($name:ident)*) => {
        #[allow(dead_code)]
        trait ByRef {
            $(fn $name(&self) -> char { 'r' })*
        }
        impl<T: ?Sized> ByRef for T {}

        #[allow(dead_code)]
        trait ByValue: Sized {
            $(fn $name(self) -> char { 'v' })*
        }
        impl<T> ByValue for T {}
    };
}

everywhere! {
    again again_at take keep join and access pointer database d1_output
    scan scan_prepared observe observe_held observe_made observe_made_unborrowed
    observe_prepared_text follow turn turn_timed attempt attempt_timed
    begin begin_on begin_timed begin_timed_on run_following execute_following
    classify_timed addr
    d1_site d1_prepare d1_text d1_timeout d1_batch_access d1_pointer
}

struct Shop {
    db: D1Database,
    insert: D1PreparedStatement,
}

impl Shop {
    /// Without a policy: the loop without time limits, as the attribute reads the default.
    #[d1_retry]
    async fn read_bare(&self) -> Result<i64, Error> {
        Ok(n(self.db.prepare(READ_N).first::<Count>(None).await?))
    }

    /// A whole body (its second `.await` keeps it from being one D1 call, which is
    /// retried as that call: `dynamic_one_call`).
    #[d1_retry(read_only)]
    async fn dynamic_bare(&self, table: &str) -> Result<i64, Error> {
        let sql = format!("SELECT count(*) AS n FROM {table}");
        core::future::ready(()).await;
        Ok(n(self.db.prepare(sql).first::<Count>(None).await?))
    }

    /// A `read_only` body that is one D1 call: expanded as the default mode's call.
    #[d1_retry(read_only)]
    async fn dynamic_one_call(&self, table: &str) -> Result<i64, Error> {
        let sql = format!("SELECT count(*) AS n FROM {table}");
        Ok(n(self.db.prepare(sql).first::<Count>(None).await?))
    }

    /// A policy constant: the compiler picks the loop from its value.
    #[d1_retry(policy = NO_BUDGET)]
    async fn read(&self) -> Result<i64, Error> {
        Ok(n(self.db.prepare(READ_N).first::<Count>(None).await?))
    }

    #[d1_retry(policy = NO_BUDGET, attempt_timeout_ms = 2000)]
    async fn read_timed(&self) -> Result<i64, Error> {
        Ok(n(self.db.prepare(READ_N).first::<Count>(None).await?))
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn insert_bound(&self, item: &str) -> Result<(), Error> {
        self.db
            .prepare(INSERT_ITEM)
            .bind(&[item.into()])?
            .run()
            .await?;
        Ok(())
    }

    /// A statement in a field, run again on the field's place.
    #[d1_retry(policy = NO_BUDGET)]
    async fn insert_field(&self) -> Result<(), Error> {
        self.insert.run().await?;
        Ok(())
    }

    /// A call's future kept, then awaited: the runtime's loop.
    #[d1_retry(policy = NO_BUDGET)]
    async fn kept(&self) -> Result<i64, Error> {
        let read = self.db.prepare(READ_N);
        let count = read.first::<Count>(None);
        Ok(n(count.await?))
    }

    /// A field's call kept: the runtime's loop that follows the field.
    #[d1_retry(policy = NO_BUDGET)]
    async fn kept_field(&self) -> Result<(), Error> {
        let done = self.insert.run();
        done.await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn joined(&self) -> Result<i64, Error> {
        let (orders, audit) = (
            self.db.prepare(READ_N),
            self.db.prepare("SELECT count(*) AS n FROM audit"),
        );
        let (a, b) = tokio::join!(orders.first::<Count>(None), audit.first::<Count>(None));
        Ok(n(a?) + n(b?))
    }

    /// A batch's list, kept by the loop and cloned for each attempt.
    #[d1_retry(policy = NO_BUDGET)]
    async fn batch(&self) -> Result<usize, Error> {
        let done = self
            .db
            .batch(vec![
                self.db.prepare(INSERT_ITEM).bind(&["batched".into()])?,
                self.db
                    .prepare("INSERT INTO audit (what) VALUES ('batched')"),
            ])
            .await?;
        Ok(done.len())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn exec(&self) -> Result<(), Error> {
        self.db
            .exec("INSERT INTO audit (what) VALUES ('exec')")
            .await?;
        Ok(())
    }

    /// A statement chosen by `if`: its SQL judged by the arm taken.
    #[d1_retry(policy = NO_BUDGET)]
    async fn chosen(&self, archived: bool) -> Result<i64, Error> {
        let sql = if archived {
            "SELECT count(*) AS n FROM archive"
        } else {
            READ_N
        };
        Ok(n(self.db.prepare(sql).first::<Count>(None).await?))
    }

    /// Dynamic SQL in a body retried whole: the observations of what each attempt ran.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn dynamic(&self, table: &str) -> Result<i64, Error> {
        let sql = format!("SELECT count(*) AS n FROM {table}");
        core::future::ready(()).await;
        Ok(n(self.db.prepare(sql).first::<Count>(None).await?))
    }

    #[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 2000)]
    async fn dynamic_timed(&self, table: &str) -> Result<i64, Error> {
        let sql = format!("SELECT count(*) AS n FROM {table}");
        core::future::ready(()).await;
        Ok(n(self.db.prepare(sql).first::<Count>(None).await?))
    }

    #[d1_retry(idempotent, policy = NO_BUDGET)]
    async fn upsert(&self) -> Result<(), Error> {
        self.db
            .prepare("INSERT OR REPLACE INTO counters (name, n) VALUES ('hits', 1)")
            .run()
            .await?;
        Ok(())
    }
}

fn shop(db: D1Database) -> Shop {
    let insert = db.prepare("INSERT INTO orders (item) VALUES ('kept')");
    Shop { db, insert }
}

#[tokio::test(start_paused = true)]
async fn an_extension_trait_for_every_type_changes_no_call() {
    sweep(
        "read, bare",
        |db, _| async move { shop(db).read_bare().await },
    )
    .await;
    sweep("dynamic, bare", |db, _| async move {
        shop(db).dynamic_bare("orders").await
    })
    .await;
    sweep("dynamic, one call", |db, _| async move {
        shop(db).dynamic_one_call("orders").await
    })
    .await;
    sweep("read", |db, _| async move { shop(db).read().await }).await;
    sweep(
        "read, timed",
        |db, _| async move { shop(db).read_timed().await },
    )
    .await;
    sweep("insert bound", |db, _| async move {
        shop(db).insert_bound("bound").await
    })
    .await;
    sweep("insert in a field", |db, _| async move {
        shop(db).insert_field().await
    })
    .await;
    sweep("kept", |db, _| async move { shop(db).kept().await }).await;
    sweep(
        "kept field",
        |db, _| async move { shop(db).kept_field().await },
    )
    .await;
    sweep("joined", |db, _| async move { shop(db).joined().await }).await;
    sweep("batch", |db, _| async move { shop(db).batch().await }).await;
    sweep("exec", |db, _| async move { shop(db).exec().await }).await;
    sweep(
        "chosen",
        |db, _| async move { shop(db).chosen(false).await },
    )
    .await;
    sweep("dynamic", |db, _| async move {
        shop(db).dynamic("orders").await
    })
    .await;
    sweep("dynamic, timed", |db, _| async move {
        shop(db).dynamic_timed("orders").await
    })
    .await;
}

/// The whole-body retry of `idempotent`, which a sweep does not fit (it runs a write again
/// after "maybe executed", as declared): one such failure after the write ran, and the body
/// runs again.
#[tokio::test(start_paused = true)]
async fn an_extension_trait_for_every_type_changes_no_whole_body_retry() {
    let db = database();
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .times(1),
    );
    let shop = shop(db);
    assert!(shop.upsert().await.is_ok());
    assert_eq!(shop.db.calls().len(), 2, "the body ran again");
}
