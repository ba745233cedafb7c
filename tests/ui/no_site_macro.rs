use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

/// A project's own statement macro: the execution it writes is not in the body.
macro_rules! touch {
    ($db:expr) => {
        $db.prepare("UPDATE users SET seen_at = unixepoch()")
            .run()
            .await
    };
}

#[d1_retry]
async fn touch(db: &Db) -> Result<u64, DbError> {
    touch!(db)
}

#[d1_retry]
async fn nested(db: &Db) -> Result<u64, DbError> {
    async fn inner(db: &Db) -> Result<u64, DbError> {
        db.prepare("SELECT 1").run().await
    }
    inner(db).await
}

fn main() {
    let _ = (touch, nested);
}
