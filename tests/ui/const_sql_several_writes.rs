use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

mod sql {
    pub const FIND: &str = "SELECT id FROM users WHERE email = ?1";
    pub const AUDIT: &str = "INSERT INTO audit (event) VALUES ('lookup')";
}

#[d1_retry]
async fn find_and_audit(db: &Db) -> Result<u64, DbError> {
    db.prepare(sql::FIND).run().await?;
    db.prepare(sql::AUDIT).run().await
}

fn main() {
    let _ = find_and_audit;
}
