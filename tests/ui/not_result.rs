use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::Db;

#[d1_retry]
async fn find(db: &Db) -> Option<i64> {
    db.prepare("SELECT 1").first().await.ok().flatten()
}

fn main() {
    let _ = find;
}
