use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

#[d1_retry]
async fn tag_all(db: &Db, ids: &[i64]) -> Result<(), DbError> {
    for id in ids {
        db.prepare("INSERT INTO tags (user_id, tag) VALUES (?1, 'new')")
            .bind(&[*id])?
            .run()
            .await?;
    }
    Ok(())
}

fn main() {
    let _ = tag_all;
}
