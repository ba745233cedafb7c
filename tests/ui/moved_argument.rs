use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::{Db, DbError};

// The whole body is retried under `read_only` and `idempotent`, so it must not move an
// argument; the default mode, which has no loop, accepts this (`pass/moved_argument.rs`),
// and so does `read_only` on a body that is one D1 call, which the second `.await` keeps
// this one from being.
#[d1_retry(read_only)]
async fn find(db: &Db, name: String) -> Result<Option<i64>, DbError> {
    let name: Vec<u8> = name.into_bytes();
    core::future::ready(()).await;
    db.prepare("SELECT id FROM users WHERE length(name) = ?1")
        .bind(&[name.len() as i64])?
        .first()
        .await
}

#[d1_retry(idempotent)]
async fn rename(db: &Db, name: String) -> Result<u64, DbError> {
    let name: Vec<u8> = name.into_bytes();
    db.prepare("UPDATE users SET name = ?1")
        .bind(&[name.len() as i64])?
        .run()
        .await
}

fn main() {
    let _ = (find, rename);
}
