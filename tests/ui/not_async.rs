use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

#[d1_retry]
fn find(db: &Db) -> Result<Option<i64>, DbError> {
    let _ = db.prepare("SELECT 1");
    Ok(None)
}

fn main() {
    let _ = find;
}
