use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::Db;

#[d1_retry]
async fn touch(db: &Db) {
    let _ = db.prepare("SELECT 1").run().await;
}

fn main() {
    let _ = touch;
}
