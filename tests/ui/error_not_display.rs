use d1_retry::d1_retry;

#[path = "support/db.rs"]
mod db;
use db::Db;

#[derive(Debug)]
struct Opaque;

// A whole-body attempt is judged by the function's own error, which must be readable.
// (In the default mode each execution is judged by its own error instead:
// `pass/errors.rs`; so is a `read_only` body that is one D1 call, which the second
// `.await` keeps this one from being.)
#[d1_retry(read_only)]
async fn find(db: &Db) -> Result<Option<i64>, Opaque> {
    core::future::ready(()).await;
    db.prepare("SELECT 1").first().await.map_err(|_| Opaque)
}

fn main() {
    let _ = find;
}
