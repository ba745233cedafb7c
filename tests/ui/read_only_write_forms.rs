use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{D1Database, Db, DbError};

// A literal write refused under `read_only`, however it reaches D1.
#[d1_retry(read_only)]
async fn exec(db: &Db) -> Result<u64, DbError> {
    db.exec("DELETE FROM sessions").await
}

#[d1_retry(read_only)]
async fn path_prepare(db: &Db) -> Result<u64, DbError> {
    D1Database::prepare(db, "INSERT INTO audit (event) VALUES ('seen')")
        .run()
        .await
}

#[d1_retry(read_only)]
async fn path_exec(db: &Db) -> Result<u64, DbError> {
    D1Database::exec(db, "DELETE FROM sessions").await
}

#[d1_retry(read_only)]
async fn concatenated(db: &Db) -> Result<u64, DbError> {
    db.prepare(concat!("UPDATE users ", "SET n = n + 1"))
        .run()
        .await
}

#[d1_retry(read_only)]
async fn in_batch(db: &Db) -> Result<Vec<u64>, DbError> {
    db.batch(vec![
        db.prepare("SELECT 1"),
        db.prepare("DELETE FROM users"),
    ])
    .await
}

#[d1_retry(read_only)]
async fn in_helper_argument(db: &Db) -> Result<u64, DbError> {
    let statement = db.prepare("SELECT 1");
    statement.run().await?;
    helper(db.prepare("REPLACE INTO t VALUES (1)")).await
}

async fn helper(statement: db::Statement) -> Result<u64, DbError> {
    statement.run().await
}

fn main() {
    let _ = (
        exec,
        path_prepare,
        path_exec,
        concatenated,
        in_batch,
        in_helper_argument,
    );
}
