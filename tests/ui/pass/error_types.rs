//! Error types: `std::error::Error`, `anyhow::Error`, `Box<dyn Error + Send + Sync>`,
//! `String`, and `Result` aliases such as `worker::Result<T>`.
#![deny(warnings)]
use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError};

mod worker {
    pub type Result<T> = std::result::Result<T, super::DbError>;
}

#[d1_retry]
async fn std_error(db: &Db) -> Result<u64, DbError> {
    db.prepare("SELECT 1").run().await
}

#[d1_retry]
async fn alias(db: &Db) -> worker::Result<u64> {
    db.prepare("SELECT 1").run().await
}

#[d1_retry]
async fn anyhow_error(db: &Db) -> anyhow::Result<u64> {
    Ok(db.prepare("SELECT 1").run().await?)
}

#[d1_retry]
async fn boxed(db: &Db) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    Ok(db.prepare("SELECT 1").run().await?)
}

#[d1_retry]
async fn string(db: &Db) -> Result<u64, String> {
    db.prepare("SELECT 1")
        .run()
        .await
        .map_err(|e| e.to_string())
}

#[d1_retry]
async fn full_path(db: &Db) -> std::result::Result<u64, &'static str> {
    db.prepare("SELECT 1").run().await.map_err(|_| "failed")
}

fn main() {
    let _ = (std_error, alias, anyhow_error, boxed, string, full_path);
}
