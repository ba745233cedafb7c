use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::Db;

#[derive(Debug)]
struct Opaque;

// A whole-body attempt is judged by the function's own error, which must be readable.
// (In the default mode each execution is judged by its own error instead:
// `pass/errors.rs`.)
#[d1_retry(read_only)]
async fn find(db: &Db) -> Result<Option<i64>, Opaque> {
    db.prepare("SELECT 1").first().await.map_err(|_| Opaque)
}

fn main() {
    let _ = find;
}
