//! What the macro reads: constants (judged by the compiler), sqlx-style paths, several
//! reads, reads in loops, `batch` of literal writes, nested items skipped.
#![deny(warnings)]
use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError};

mod sql {
    pub const FIND: &str = "SELECT id FROM users WHERE email = ?1";
    pub const COUNT: &str = "SELECT count(*) FROM users";
}

/// A `static` looks like a constant by its name; the compiler can read it all the same.
static STATIC_SQL: &str = "SELECT 1";

mod sqlx {
    pub struct Query;
    pub fn query(_sql: &str) -> Query {
        Query
    }
    pub fn query_as<T>(_sql: &str) -> Query {
        Query
    }
    impl Query {
        pub async fn execute(self, _db: &super::Db) -> Result<u64, super::DbError> {
            Ok(1)
        }
    }
}

struct Users {
    db: Db,
}

impl Users {
    const BY_ID: &str = "SELECT id FROM users WHERE id = ?1";

    #[d1_retry]
    async fn constants(&self) -> Result<u64, DbError> {
        self.db.prepare(sql::FIND).run().await?;
        self.db.prepare(Self::BY_ID).run().await?;
        self.db.prepare(sql::COUNT).run().await
    }

    #[d1_retry]
    async fn static_sql(&self) -> Result<u64, DbError> {
        self.db.prepare(STATIC_SQL).run().await?;
        self.db.prepare(STATIC_SQL).run().await
    }

    /// `execute` is not a D1 execution, so there is nothing to retry call by call: a
    /// function that only reads retries its whole body.
    #[d1_retry(read_only)]
    async fn sqlx_style(&self) -> Result<u64, DbError> {
        sqlx::query("SELECT 1").execute(&self.db).await?;
        sqlx::query_as::<(i64,)>("SELECT 2").execute(&self.db).await
    }

    #[d1_retry]
    async fn loop_of_reads(&self, ids: &[i64]) -> Result<u64, DbError> {
        let mut total = 0;
        for id in ids {
            total += self
                .db
                .prepare("SELECT 1 WHERE ?1")
                .bind(&[*id])?
                .run()
                .await?;
        }
        Ok(total)
    }

    #[d1_retry]
    async fn batch_built_in_place(&self, names: &[&str]) -> Result<Vec<u64>, DbError> {
        self.db
            .batch(
                names
                    .iter()
                    .map(|_| self.db.prepare("INSERT INTO users (name) VALUES (?1)"))
                    .collect(),
            )
            .await
    }

    #[d1_retry]
    async fn nested_items_are_skipped(&self) -> Result<u64, DbError> {
        async fn unrelated(db: &Db) -> Result<u64, DbError> {
            db.prepare("DELETE FROM users").run().await?;
            db.prepare("DELETE FROM audit").run().await
        }
        let _ = unrelated;
        self.db.prepare("SELECT 1").run().await
    }
}

fn main() {
    let users = Users { db: Db };
    let _ = users.constants();
    let _ = users.sqlx_style();
    let _ = users.static_sql();
    let _ = users.loop_of_reads(&[]);
    let _ = users.batch_built_in_place(&[]);
    let _ = users.nested_items_are_skipped();
}
