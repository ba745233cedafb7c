use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::Db;

// The `?` error belongs at the `?` and the expression before it.
#[d1_retry]
async fn find(db: &Db) -> Result<Option<i64>, String> {
    let row = db.prepare("SELECT 1").first().await?;
    Ok(row)
}

#[d1_retry]
async fn find_by_name(db: &Db) -> Result<Option<i64>, String> {
    let statement = db.prepare("SELECT 1");
    let row = statement.first().await?;
    Ok(row)
}

fn main() {
    let _ = (find, find_by_name);
}
