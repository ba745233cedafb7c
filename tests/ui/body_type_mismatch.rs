use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

#[d1_retry]
async fn count(db: &Db) -> Result<u64, DbError> {
    let rows = db.prepare("SELECT count(*) FROM users").first().await?;
    Ok(rows)
}

fn main() {
    let _ = count;
}
