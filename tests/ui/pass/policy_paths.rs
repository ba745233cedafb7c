//! `policy = PATH` in each shape the expansion treats apart: a constant or a `static`
//! nameable outside the body (held in a constant of the expansion and validated by a
//! `const _` item, then borrowed as it is; the loop, with time limits or without, chosen
//! from its value by a const argument, also in a generic function and a whole body), and
//! `Self::POLICY`, which only the body can name (validated in a const block there; the
//! time-limited loop).
#![deny(warnings)]
use d1_retry::{RetryPolicy, d1_retry};

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError};

const CONSTANT: RetryPolicy = RetryPolicy::DEFAULT.with_max_attempts(3);
static STATIC: RetryPolicy = RetryPolicy::DEFAULT;
const LIMITED: RetryPolicy =
    RetryPolicy::DEFAULT.with_attempt_timeout(core::time::Duration::from_secs(2));

#[d1_retry(policy = LIMITED)]
async fn limited(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

#[d1_retry(policy = CONSTANT)]
async fn generic<T: Into<i64>>(db: &Db, _id: T) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

#[d1_retry(read_only, policy = LIMITED)]
async fn whole_body(db: &Db) -> Result<Option<i64>, DbError> {
    // A second `.await`: a body of one D1 call is retried as that call.
    core::future::ready(()).await;
    db.prepare("SELECT 1").first().await
}

#[d1_retry(idempotent, policy = CONSTANT)]
async fn idempotent_body(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

#[d1_retry(policy = CONSTANT)]
async fn constant(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

#[d1_retry(policy = STATIC)]
async fn from_static(db: &Db) -> Result<Option<i64>, DbError> {
    db.prepare("SELECT 1").first().await
}

struct Repo {
    db: Db,
}

impl Repo {
    const POLICY: RetryPolicy = RetryPolicy::DEFAULT.with_max_attempts(2);

    #[d1_retry(policy = Self::POLICY)]
    async fn associated(&self) -> Result<Option<i64>, DbError> {
        self.db.prepare("SELECT 1").first().await
    }
}

/// A `macro_rules!` of the user's that passes the policy on as a path fragment, or as an
/// expression: either arrives in an invisible group, which the attribute looks through.
macro_rules! finders {
    ($path_name:ident: $path:path, $expr_name:ident: $expr:expr) => {
        #[d1_retry(policy = $path)]
        async fn $path_name(db: &Db) -> Result<Option<i64>, DbError> {
            db.prepare("SELECT 1").first().await
        }

        #[d1_retry(read_only, policy = $expr)]
        async fn $expr_name(db: &Db) -> Result<Option<i64>, DbError> {
            db.prepare("SELECT 1").first().await
        }
    };
}

finders!(by_path_fragment: crate::LIMITED, by_expr_fragment: CONSTANT);

fn main() {
    let _ = (by_path_fragment, by_expr_fragment);
    let _ = (constant, from_static, Repo::associated, limited, whole_body);
    let _ = (generic::<i32>, idempotent_body);
}
