//! Repository code in the shapes real Workers use, each of which re-ran a write when
//! `#[d1_retry]` retried the whole body. Every method counts its effects outside D1
//! (`effects`), so the tests can check that nothing but the failed call ran again.

use core::sync::atomic::{AtomicU32, Ordering};

use d1_retry::testing::{D1Database, D1PreparedStatement, Error};
use d1_retry::{RetryPolicy, d1_retry};
use test_support::join_all;

pub const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();

/// A module-level constant that reads; `Repo::shadowed` declares a writing one of the
/// same name inside its body.
const SQL: &str = "SELECT count(*) AS n FROM orders";

#[derive(serde::Deserialize, Debug, PartialEq)]
pub struct Count {
    pub n: i64,
}

#[derive(serde::Deserialize, Debug, PartialEq)]
pub struct Id {
    pub id: i64,
}

/// An error type whose `Display` puts D1's message behind its own prefix, the most
/// common error style in Workers code.
#[derive(Debug)]
pub struct AppError(pub String);

impl core::fmt::Display for AppError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Database error: {}", self.0)
    }
}

impl std::error::Error for AppError {}

impl From<Error> for AppError {
    fn from(error: Error) -> Self {
        AppError(error.to_string())
    }
}

pub struct Repo {
    pub db: D1Database,
    pub effects: AtomicU32,
}

/// A plain helper that writes.
async fn add_order(db: &D1Database, item: &str) -> Result<(), Error> {
    db.prepare("INSERT INTO orders (item) VALUES (?1)")
        .bind(&[item.into()])?
        .run()
        .await?;
    Ok(())
}

/// A statement built by a helper: its SQL is out of the attribute's sight.
fn order_statement(db: &D1Database, item: &str) -> Result<D1PreparedStatement, Error> {
    db.prepare("INSERT INTO orders (item) VALUES (?1)")
        .bind(&[item.into()])
}

/// `prepare` under another name, through an extension trait.
trait Queries {
    fn query(&self, sql: &str) -> D1PreparedStatement;
}

impl Queries for D1Database {
    fn query(&self, sql: &str) -> D1PreparedStatement {
        self.prepare(sql)
    }
}

/// A project's own statement macro.
macro_rules! insert_order {
    ($db:expr, $item:expr) => {
        $db.prepare("INSERT INTO orders (item) VALUES (?1)")
            .bind(&[$item.into()])?
            .run()
            .await?
    };
}

/// A project's own macro that binds a statement to a name the caller gives.
macro_rules! bind_statement {
    ($name:ident = $statement:expr) => {
        let $name = $statement;
    };
}

/// `bind_statement!` under the name of a logging macro.
macro_rules! debug {
    ($name:ident = $statement:expr) => {
        let $name = $statement;
    };
}

/// `futures::join!` for one future, as a project might write it: its argument is an
/// expression evaluated once, as in the `join!` macros the attribute looks into.
macro_rules! join {
    ($future:expr) => {
        ($future.await,)
    };
}

pub struct Audit {
    pub db: D1Database,
}

impl Audit {
    /// Another struct's method that writes.
    pub async fn record(&self, what: &str) -> Result<(), Error> {
        self.db
            .prepare("INSERT INTO audit (what) VALUES (?1)")
            .bind(&[what.into()])?
            .run()
            .await?;
        Ok(())
    }
}

impl Repo {
    fn effect(&self) {
        self.effects.fetch_add(1, Ordering::Relaxed);
    }

    /// A read, then a helper that writes.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn read_then_helper(&self, item: &str) -> Result<i64, Error> {
        let count = self.db.prepare(SQL).first::<Count>(None).await?;
        self.effect();
        add_order(&self.db, item).await?;
        Ok(count.map_or(0, |c| c.n))
    }

    /// A write through a nested `fn` item, then a read.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn nested_fn_then_read(&self, item: &str) -> Result<i64, Error> {
        async fn write(db: &D1Database, item: &str) -> Result<(), Error> {
            db.prepare("INSERT INTO orders (item) VALUES (?1)")
                .bind(&[item.into()])?
                .run()
                .await
                .map(|_| ())
        }
        write(&self.db, item).await?;
        self.effect();
        let count = self.db.prepare(SQL).first::<Count>(None).await?;
        Ok(count.map_or(0, |c| c.n))
    }

    /// Another struct's method that writes, then a read.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn audit_then_read(&self, audit: &Audit) -> Result<i64, Error> {
        audit.record("checkout").await?;
        self.effect();
        let count = self.db.prepare(SQL).first::<Count>(None).await?;
        Ok(count.map_or(0, |c| c.n))
    }

    /// An annotated write, called by another annotated method that then reads.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn place(&self, item: &str) -> Result<(), Error> {
        self.db
            .prepare("INSERT INTO orders (item) VALUES (?1)")
            .bind(&[item.into()])?
            .run()
            .await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    pub async fn place_then_count(&self, item: &str) -> Result<i64, Error> {
        self.place(item).await?;
        self.effect();
        let count = self.db.prepare(SQL).first::<Count>(None).await?;
        Ok(count.map_or(0, |c| c.n))
    }

    /// One statement prepared once, bound and run for each item.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn loop_inserts(&self, items: &[&str]) -> Result<(), Error> {
        let insert = self.db.prepare("INSERT INTO orders (item) VALUES (?1)");
        for item in items {
            insert.clone().bind(&[(*item).into()])?.run().await?;
            self.effect();
        }
        Ok(())
    }

    /// The same through `join_all`-style concurrency.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn joined_inserts(&self, items: &[&str]) -> Result<(), Error> {
        let insert = self.db.prepare("INSERT INTO orders (item) VALUES (?1)");
        let runs = items.iter().map(|item| {
            let insert = &insert;
            async move {
                let bound = insert.clone().bind(&[(*item).into()])?;
                bound.run().await
            }
        });
        for result in join_all(runs).await {
            result?;
        }
        Ok(())
    }

    /// A project's own macro around a write, then a read.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn own_macro_then_read(&self, item: &str) -> Result<i64, Error> {
        insert_order!(self.db, item);
        self.effect();
        let count = self.db.prepare(SQL).first::<Count>(None).await?;
        Ok(count.map_or(0, |c| c.n))
    }

    /// `prepare` renamed through an extension trait: its SQL is unseen, a write.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn renamed_prepare(&self, item: &str) -> Result<(), Error> {
        self.db
            .query("INSERT INTO orders (item) VALUES (?1)")
            .bind(&[item.into()])?
            .run()
            .await?;
        Ok(())
    }

    /// A statement built by a helper, run beside a read.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn helper_statement(&self, item: &str) -> Result<i64, Error> {
        let count = self.db.prepare(SQL).first::<Count>(None).await?;
        let statement = order_statement(&self.db, item)?;
        statement.run().await?;
        self.effect();
        Ok(count.map_or(0, |c| c.n))
    }

    /// A statement passed in as an argument, run beside a read.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn passed_statement(&self, statement: D1PreparedStatement) -> Result<i64, Error> {
        statement.await?;
        self.effect();
        let count = self.db.prepare(SQL).first::<Count>(None).await?;
        Ok(count.map_or(0, |c| c.n))
    }

    /// `INSERT .. RETURNING id`, then a helper reads the row back.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn insert_returning(&self, item: &str) -> Result<String, Error> {
        let id = self
            .db
            .prepare("INSERT INTO orders (item) VALUES (?1) RETURNING id")
            .bind(&[item.into()])?
            .first::<Id>(None)
            .await?
            .map_or(0, |row| row.id);
        self.effect();
        read_back(&self.db, id).await
    }

    /// A function-local `const SQL` that writes, shadowing the module's that reads.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn shadowed(&self) -> Result<(), Error> {
        const SQL: &str = "INSERT INTO orders (item) VALUES ('shadow')";
        self.db.prepare(SQL).run().await?;
        Ok(())
    }

    /// A read bound as `r#stmt`, then a write bound as `stmt`: one name to rustc, so the
    /// last `r#stmt.run()` runs the write.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn raw_name_shadowed(&self, item: &str) -> Result<(), Error> {
        let r#stmt = self
            .db
            .prepare("SELECT count(*) AS n FROM orders WHERE item = ?1")
            .bind(&[item.into()])?;
        r#stmt.first::<Count>(None).await?;
        let stmt = self
            .db
            .prepare("INSERT INTO orders (item) VALUES (?1)")
            .bind(&[item.into()])?;
        r#stmt.run().await?;
        drop(stmt);
        Ok(())
    }

    /// A statement borrowed mutably, then replaced through the borrow by a write: the
    /// name is not followed (it is the write that runs), whether `write` replaced it or not.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn replaced_through_a_borrow(&self, item: &str, write: bool) -> Result<(), Error> {
        let stmt = &mut self
            .db
            .prepare("SELECT count(*) AS n FROM orders WHERE item = ?1")
            .bind(&[item.into()])?;
        if write {
            *stmt = self
                .db
                .prepare("INSERT INTO orders (item) VALUES (?1)")
                .bind(&[item.into()])?;
        }
        stmt.run().await?;
        Ok(())
    }

    /// The same the other way round: a read as `stmt`, a write as `r#stmt`, run as `stmt`.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn plain_name_shadowed(&self, item: &str) -> Result<(), Error> {
        let stmt = self
            .db
            .prepare("SELECT count(*) AS n FROM orders WHERE item = ?1")
            .bind(&[item.into()])?;
        stmt.first::<Count>(None).await?;
        let r#stmt = self
            .db
            .prepare("INSERT INTO orders (item) VALUES (?1)")
            .bind(&[item.into()])?;
        stmt.run().await?;
        Ok(())
    }

    /// A statement bound to its parameters under its own name, the common way to write it:
    /// a read, then a write.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn bound_in_place(&self, item: &str) -> Result<i64, Error> {
        let count = self
            .db
            .prepare("SELECT count(*) AS n FROM orders WHERE item = ?1");
        let count = count.bind(&[item.into()])?;
        let before = count.first::<Count>(None).await?;
        let insert = self.db.prepare("INSERT INTO orders (item) VALUES (?1)");
        let insert = insert.bind(&[item.into()])?;
        insert.run().await?;
        Ok(before.map_or(0, |row| row.n))
    }

    /// A read bound to `stmt`, then the project's own macro binding a write to the same
    /// name (`let $name = $statement;`), which shadows it: `stmt.run()` runs the write.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn rebound_by_macro(&self, item: &str) -> Result<i64, Error> {
        let stmt = self.db.prepare(SQL);
        let before = stmt.first::<Count>(None).await?;
        bind_statement!(
            stmt = self
                .db
                .prepare("INSERT INTO orders (item) VALUES (?1)")
                .bind(&[item.into()])?
        );
        stmt.run().await?;
        Ok(before.map_or(0, |count| count.n))
    }

    /// The same through a macro that has the name of a logging macro, which the attribute
    /// takes for one that binds nothing: the name in its tokens is not followed.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn rebound_by_macro_named_debug(&self, item: &str) -> Result<i64, Error> {
        let stmt = self.db.prepare(SQL);
        let before = stmt.first::<Count>(None).await?;
        debug!(
            stmt = self
                .db
                .prepare("INSERT INTO orders (item) VALUES (?1)")
                .bind(&[item.into()])?
        );
        stmt.run().await?;
        Ok(before.map_or(0, |count| count.n))
    }

    /// A statement bound to a constant's SQL, run in a block where a constant of the same
    /// name says something else: the SQL it runs is the one it was prepared with.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn const_shadowed_where_run(&self) -> Result<(), Error> {
        const QUERY: &str = "INSERT INTO orders (item) VALUES ('outer')";
        let stmt = self.db.prepare(QUERY);
        {
            const QUERY: &str = "SELECT count(*) AS n FROM orders";
            self.db.prepare(QUERY).first::<Count>(None).await?;
            stmt.run().await?;
        }
        Ok(())
    }

    /// A write bound to `stmt`, and a read of the same name inside a `join!` argument's
    /// block: after the `join!`, `stmt` is the write again.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn shadowed_in_join(&self, item: &str) -> Result<i64, Error> {
        let stmt = self
            .db
            .prepare("INSERT INTO orders (item) VALUES (?1)")
            .bind(&[item.into()])?;
        let (count,) = join!(async {
            let stmt = self.db.prepare(SQL);
            stmt.first::<Count>(None).await
        });
        stmt.run().await?;
        Ok(count?.map_or(0, |count| count.n))
    }

    /// Statements collected into a `Vec` in a loop, run as one `batch`.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn bulk(&self, items: &[&str]) -> Result<(), Error> {
        let mut statements = Vec::new();
        for item in items {
            statements.push(
                self.db
                    .prepare("INSERT INTO orders (item) VALUES (?1)")
                    .bind(&[(*item).into()])?,
            );
            self.effect();
        }
        self.db.batch(statements).await?;
        Ok(())
    }

    /// One `UPDATE` in each branch.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn branch(&self, rush: bool) -> Result<(), Error> {
        if rush {
            self.db
                .prepare("UPDATE orders SET item = 'rush'")
                .run()
                .await?;
        } else {
            self.db
                .prepare("UPDATE orders SET item = 'slow'")
                .run()
                .await?;
        }
        Ok(())
    }

    /// `Type::prepare(&db, sql)`, the form statement macros expand to.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn path_prepare(&self) -> Result<i64, Error> {
        let count = D1Database::prepare(&self.db, SQL)
            .first::<Count>(None)
            .await?;
        Ok(count.map_or(0, |c| c.n))
    }

    /// A prefixed error type: the failure is classified before the conversion.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn prefixed(&self) -> Result<i64, AppError> {
        let count = self.db.prepare(SQL).first::<Count>(None).await?;
        Ok(count.map_or(0, |c| c.n))
    }

    /// Dynamic SQL, scanned where it is prepared.
    #[d1_retry(policy = NO_BUDGET)]
    pub async fn dynamic(&self, sql: String) -> Result<(), Error> {
        let statement = self.db.prepare(sql);
        statement.run().await?;
        self.effect();
        Ok(())
    }

    /// A whole-body read that calls another annotated read: attempts never multiply.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    pub async fn composed_read(&self) -> Result<i64, Error> {
        self.effect();
        self.count().await
    }

    #[d1_retry(policy = NO_BUDGET)]
    pub async fn count(&self) -> Result<i64, Error> {
        let count = self.db.prepare(SQL).first::<Count>(None).await?;
        Ok(count.map_or(0, |c| c.n))
    }
}

async fn read_back(db: &D1Database, id: i64) -> Result<String, Error> {
    #[derive(serde::Deserialize)]
    struct Item {
        item: String,
    }
    let row = db
        .prepare("SELECT item FROM orders WHERE id = ?1")
        .bind(&[(id as f64).into()])?
        .first::<Item>(None)
        .await?;
    Ok(row.map(|row| row.item).unwrap_or_default())
}
