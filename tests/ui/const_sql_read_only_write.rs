use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

const TOUCH: &str = "UPDATE users SET seen_at = unixepoch() WHERE id = ?1";

#[d1_retry(read_only)]
async fn touch(db: &Db, id: i64) -> Result<u64, DbError> {
    db.prepare(TOUCH).bind(&[id])?.run().await
}

// The same in a body of two calls, retried whole (the one above is one call, retried as
// that call): the constant is judged alike.
#[d1_retry(read_only)]
async fn touch_after_a_read(db: &Db, id: i64) -> Result<u64, DbError> {
    db.prepare("SELECT 1").first().await?;
    db.prepare(TOUCH).bind(&[id])?.run().await
}

fn main() {
    // Called, so that the functions are compiled: the constant is only judged then.
    let _ = touch(&Db, 1);
    let _ = touch_after_a_read(&Db, 1);
}
