use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

#[d1_retry]
async fn transfer(db: &Db, from: i64, to: i64) -> Result<u64, DbError> {
    db.prepare("UPDATE accounts SET balance = balance - 10 WHERE id = ?1")
        .bind(&[from])?
        .run()
        .await?;
    db.prepare("UPDATE accounts SET balance = balance + 10 WHERE id = ?1")
        .bind(&[to])?
        .run()
        .await
}

fn main() {
    let _ = transfer;
}
