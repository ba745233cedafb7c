use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::Db;

#[derive(Debug)]
struct Opaque;

#[d1_retry]
async fn find(db: &Db) -> Result<Option<i64>, Opaque> {
    db.prepare("SELECT 1").first().await.map_err(|_| Opaque)
}

fn main() {
    let _ = find;
}
