//! Default (per-call) mode: each execution is judged by its own error, so the function's
//! error type is free: D1's error behind `map_err`, `?` with `From`, an error that is not
//! even `Display`, and results that are matched or dropped.
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, block_on};
#[path = "../support/app_error.rs"]
mod app_error;
use app_error::AppError;

/// Not `Display`, not `Error`: only a whole-body attempt would need to read it
/// (`tests/ui/error_not_display.rs`).
#[derive(Debug, PartialEq)]
struct Opaque;

#[d1_retry]
async fn with_from(db: &Db, id: i64) -> Result<i64, AppError> {
    let found = db
        .prepare("SELECT id FROM users WHERE id = ?1")
        .bind(&[id])?
        .first()
        .await?;
    db.prepare("UPDATE users SET seen_at = unixepoch()")
        .run()
        .await?;
    found.ok_or(AppError::NotFound)
}

#[d1_retry]
async fn with_map_err(db: &Db) -> Result<u64, AppError> {
    db.exec("DELETE FROM sessions")
        .await
        .map_err(AppError::Db)?;
    db.prepare("SELECT 1").run().await.map_err(AppError::from)
}

#[d1_retry]
async fn opaque(db: &Db) -> Result<Option<i64>, Opaque> {
    db.prepare("SELECT 1").first().await.map_err(|_| Opaque)
}

#[d1_retry]
async fn string(db: &Db) -> Result<u64, String> {
    let statement = db.prepare("DELETE FROM t");
    statement.run().await.map_err(|error| error.to_string())
}

#[d1_retry]
async fn boxed(db: &Db) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    Ok(db.prepare("SELECT 1").run().await?)
}

#[d1_retry]
async fn anyhow_context(db: &Db) -> anyhow::Result<u64> {
    use anyhow::Context as _;
    db.prepare("SELECT 1").run().await.context("counting users")
}

/// Results matched, defaulted and dropped rather than returned.
#[d1_retry]
async fn handled(db: &Db) -> Result<u64, Opaque> {
    let n = match db.prepare("SELECT 1").run().await {
        Ok(n) => n,
        Err(_) => 0,
    };
    let m = db
        .prepare("SELECT 2")
        .first()
        .await
        .ok()
        .flatten()
        .unwrap_or(0);
    let _ = db.exec("DELETE FROM t").await;
    if db.prepare("SELECT 3").run().await.is_err() {
        return Err(Opaque);
    }
    Ok(n + m as u64)
}

fn main() {
    assert_eq!(block_on(with_from(&Db, 1)).ok(), Some(1));
    assert_eq!(block_on(with_map_err(&Db)).ok(), Some(1));
    assert_eq!(block_on(opaque(&Db)), Ok(Some(1)));
    assert_eq!(block_on(string(&Db)), Ok(1));
    assert_eq!(block_on(boxed(&Db)).ok(), Some(1));
    assert_eq!(block_on(anyhow_context(&Db)).ok(), Some(1));
    assert_eq!(block_on(handled(&Db)), Ok(2));
}
