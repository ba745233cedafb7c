use std::future::Future;

use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

struct Users {
    db: Db,
}

impl Users {
    const TOUCH: &str = "UPDATE users SET seen_at = unixepoch() WHERE id = ?1";

    // `Self::TOUCH` can only be named inside the body, so it is judged when the
    // function is compiled: here, when `main` needs its future.
    #[d1_retry(read_only)]
    async fn touch(&self, id: i64) -> Result<u64, DbError> {
        self.db.prepare(Self::TOUCH).bind(&[id])?.run().await
    }
}

fn main() {
    let users = Users { db: Db };
    let future: &dyn Future<Output = Result<u64, DbError>> = &users.touch(1);
    let _ = future;
}
