use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

mod sqlx {
    pub struct Query;
    pub fn query(_sql: &str) -> Query {
        Query
    }
    impl Query {
        pub async fn execute(self, _db: &super::Db) -> Result<u64, super::DbError> {
            Ok(1)
        }
    }
}

// `execute` is not one of D1's executions: nothing here would be retried.
#[d1_retry]
async fn count(db: &Db) -> Result<u64, DbError> {
    sqlx::query("SELECT count(*) FROM users").execute(db).await
}

fn main() {
    let _ = count;
}
