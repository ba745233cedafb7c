use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

// A wrong argument to an execution: the error belongs at the argument.
#[d1_retry]
async fn purge(db: &Db, id: i64) -> Result<u64, DbError> {
    db.exec(id).await
}

#[d1_retry]
async fn create(db: &Db) -> Result<Vec<u64>, DbError> {
    let statement = db.prepare("INSERT INTO t VALUES (1)");
    db.batch(statement).await
}

fn main() {
    let _ = (purge, create);
}
