use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

// A constant declared inside the function is judged where it is used.
#[d1_retry(read_only)]
async fn touch(db: &Db, id: i64) -> Result<u64, DbError> {
    const TOUCH: &str = "UPDATE users SET seen_at = unixepoch() WHERE id = ?1";
    db.prepare(TOUCH).bind(&[id])?.run().await
}

fn main() {
    // Called, so that the function is compiled: the constant is only judged then.
    let _ = touch(&Db, 1);
}
