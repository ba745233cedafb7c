use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

#[d1_retry]
async fn rename(db: &Db, name: String) -> Result<u64, DbError> {
    let name: Vec<u8> = name.into_bytes();
    db.prepare("UPDATE users SET name = ?1")
        .bind(&[name.len() as i64])?
        .run()
        .await
}

fn main() {
    let _ = rename;
}
