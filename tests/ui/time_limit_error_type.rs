use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::Db;

// The function's error type must receive a `TimedOut`; the error points at the option.
#[derive(Debug)]
struct AppError;

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("app error")
    }
}

impl std::error::Error for AppError {}

impl From<db::DbError> for AppError {
    fn from(_: db::DbError) -> Self {
        AppError
    }
}

#[d1_retry(attempt_timeout_ms = 2000)]
async fn find(db: &Db) -> Result<u64, AppError> {
    Ok(db.prepare("SELECT 1").run().await?)
}

#[d1_retry(read_only, deadline_ms = 10000)]
async fn count(db: &Db) -> Result<u64, AppError> {
    Ok(db.prepare("SELECT count(*) FROM t").run().await?)
}

fn main() {
    let _ = (find, count);
}
