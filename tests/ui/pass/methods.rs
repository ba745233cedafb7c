//! `&self` and `&mut self` methods, with arguments borrowed by every attempt.
#![deny(warnings)]
use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError};

struct UserRepo {
    db: Db,
    lookups: u64,
}

impl UserRepo {
    #[d1_retry]
    async fn find(&self, email: &str, tags: Vec<String>) -> Result<Option<i64>, DbError> {
        let _ = (email.len(), tags.len());
        self.db
            .prepare("SELECT id FROM users WHERE email = ?1")
            .first()
            .await
    }

    /// Each attempt reborrows `self` mutably.
    #[d1_retry]
    async fn find_counted(&mut self, id: i64) -> Result<Option<i64>, DbError> {
        self.lookups += 1;
        self.db
            .prepare("SELECT id FROM users WHERE id = ?1")
            .bind(&[id])?
            .first()
            .await
    }

    #[d1_retry(read_only)]
    async fn by_query(&self, sql: &str) -> Result<Option<i64>, DbError> {
        self.db.prepare(sql).first().await
    }

    /// No receiver, but `Self` in the signature.
    #[d1_retry]
    async fn open(db: Db) -> Result<Self, DbError> {
        db.prepare("SELECT 1").run().await?;
        Err(DbError)
    }
}

fn main() {
    let _ = (
        UserRepo::find,
        UserRepo::find_counted,
        UserRepo::by_query,
        UserRepo::open,
    );
}
