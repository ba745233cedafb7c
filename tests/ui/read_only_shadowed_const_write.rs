use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

/// Reads; the function's own `SQL` shadows it, and writes.
const SQL: &str = "SELECT count(*) FROM users";

#[d1_retry(read_only)]
async fn purge(db: &Db) -> Result<u64, DbError> {
    const SQL: &str = "DELETE FROM users";
    db.prepare(SQL).run().await
}

fn main() {
    let _ = SQL;
    // Called, so that the function is compiled: the constant is only judged then.
    let _ = purge(&Db);
}
