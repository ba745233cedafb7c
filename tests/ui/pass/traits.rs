//! `async fn` in traits: a default body, and implementations.
#![deny(warnings)]
use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError};

trait UserRepo {
    fn db(&self) -> &Db;

    /// A default body is retried in every implementation that keeps it.
    #[d1_retry]
    async fn count(&self) -> Result<Option<i64>, DbError> {
        self.db()
            .prepare("SELECT count(*) FROM users")
            .first()
            .await
    }

    async fn find(&self, id: i64) -> Result<Option<i64>, DbError>;
}

struct D1Users {
    db: Db,
}

impl UserRepo for D1Users {
    fn db(&self) -> &Db {
        &self.db
    }

    #[d1_retry]
    async fn find(&self, id: i64) -> Result<Option<i64>, DbError> {
        self.db
            .prepare("SELECT id FROM users WHERE id = ?1")
            .bind(&[id])?
            .first()
            .await
    }
}

fn main() {
    let users = D1Users { db: Db };
    let _ = users.count();
    let _ = users.find(1);
}
