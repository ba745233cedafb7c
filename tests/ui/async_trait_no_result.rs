use async_trait::async_trait;
use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::Db;

#[async_trait]
trait Touch {
    async fn touch(&self);
}

#[async_trait]
impl Touch for Db {
    #[d1_retry]
    async fn touch(&self) {
        let _ = self
            .prepare("UPDATE users SET seen_at = unixepoch()")
            .run()
            .await;
    }
}

fn main() {}
