//! Free functions: plain, `pub(crate)` with doc comments, and the literal forms of SQL.
#![deny(warnings)]
use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError};

#[d1_retry]
async fn find(db: &Db, id: i64) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT id FROM users WHERE id = ?1")
        .bind(&[id])?
        .first()
        .await
}

/// Documented, and visible to the crate only: both survive the expansion.
#[d1_retry]
pub(crate) async fn raw(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare(r#"SELECT "id" FROM users WHERE name = 'a "quoted" name'"#)
        .first()
        .await
}

#[d1_retry]
pub async fn concatenated(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare(concat!("SELECT id ", "FROM users ", "LIMIT ", 1))
        .first()
        .await
}

#[d1_retry]
async fn exec(db: &Db) -> Result<u64, DbError> {
    #![allow(clippy::needless_return)]
    db.exec("DELETE FROM sessions WHERE expires_at < unixepoch()")
        .await
}

#[d1_retry]
async fn batch(db: &Db) -> Result<Vec<u64>, DbError> {
    db.batch(vec![
        db.prepare("INSERT INTO users (name) VALUES ('ada')"),
        db.prepare("INSERT INTO audit (event) VALUES ('created')"),
    ])
    .await
}

#[d1_retry]
async fn dynamic(db: &Db, table: &str) -> Result<Option<i64>, DbError> {
    db.prepare(format!("SELECT count(*) FROM {table}"))
        .first()
        .await
}

fn main() {
    let _ = (find, raw, concatenated, exec, batch, dynamic);
}
