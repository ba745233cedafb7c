use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

#[d1_retry(read_only)]
async fn touch(db: &Db, id: i64) -> Result<u64, DbError> {
    db.prepare("UPDATE users SET seen_at = unixepoch() WHERE id = ?1")
        .bind(&[id])?
        .run()
        .await
}

fn main() {
    let _ = touch;
}
