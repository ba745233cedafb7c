//! `#[tracing::instrument]` beside it, in either order.
#![deny(warnings)]
use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError};

struct UserRepo {
    db: Db,
}

impl UserRepo {
    /// Recommended: the span covers every attempt and the retry logs.
    #[d1_retry]
    #[tracing::instrument(skip(self))]
    async fn find(&self, id: i64, name: String) -> Result<Option<i64>, DbError> {
        let _ = name;
        self.db
            .prepare("SELECT id FROM users WHERE id = ?1")
            .bind(&[id])?
            .first()
            .await
    }

    /// Also accepted: one span per attempt.
    #[tracing::instrument(skip(self))]
    #[d1_retry]
    async fn count(&self, table: &str) -> Result<Option<i64>, DbError> {
        let _ = table;
        self.db.prepare("SELECT count(*) FROM users").first().await
    }
}

fn main() {
    let repo = UserRepo { db: Db };
    let _ = repo.find(1, String::new());
    let _ = repo.count("users");
}
