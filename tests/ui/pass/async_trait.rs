//! `#[async_trait]` on the trait or the impl expands first, so `#[d1_retry]` sees its
//! boxed output, and retries inside the boxed future.
#![deny(warnings)]
use async_trait::async_trait;
use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError};

#[async_trait]
trait UserRepo {
    async fn find(&self, id: i64) -> Result<Option<i64>, DbError>;

    fn db(&self) -> &Db;

    #[d1_retry]
    async fn count(&self) -> Result<Option<i64>, DbError> {
        self.db()
            .prepare("SELECT count(*) FROM users")
            .first()
            .await
    }
}

struct D1Users {
    db: Db,
}

#[async_trait]
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

#[async_trait(?Send)]
trait Local {
    async fn rename(&mut self, name: String, (a, b): (i64, i64)) -> Result<u64, DbError>;
}

#[async_trait(?Send)]
impl Local for D1Users {
    #[d1_retry]
    async fn rename(&mut self, name: String, (a, b): (i64, i64)) -> Result<u64, DbError> {
        let _ = (name.len(), a, b);
        self.db.prepare("UPDATE users SET name = ?1").run().await
    }
}

fn assert_send<T: Send>(_: &T) {}

fn main() {
    let mut users = D1Users { db: Db };
    assert_send(&users.find(1));
    let _ = users.count();
    let _ = users.rename("ada".to_owned(), (1, 2));
}
