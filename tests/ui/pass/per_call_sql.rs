//! Default (per-call) mode: how the SQL of each execution is found, whatever its form,
//! with writes in several statements, branches and loops.
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, Statement, block_on};

/// A module constant that reads; `shadowed_const` declares a writing one of the same name.
const SQL: &str = "SELECT count(*) FROM users";

/// workers-rs's `query!(db, sql, args..)`, in a stand-in.
macro_rules! query {
    ($db:expr, $sql:expr $(, $arg:expr)* $(,)?) => {
        $db.prepare($sql).bind(&[$($arg),*])
    };
}

/// Statements collected into a `Vec` in a loop, then one `batch`.
#[d1_retry]
async fn batch_collected_in_loop(db: &Db, names: &[&str]) -> Result<Vec<u64>, DbError> {
    let mut statements = Vec::new();
    for (id, _name) in names.iter().enumerate() {
        statements.push(
            db.prepare("INSERT INTO users (id, name) VALUES (?1, ?2)")
                .bind(&[id as i64])?,
        );
    }
    db.batch(statements).await
}

/// `batch` of a `vec!` and of an array built in place.
#[d1_retry]
async fn batch_in_place(db: &Db) -> Result<usize, DbError> {
    let a = db
        .batch(vec![
            db.prepare("INSERT INTO users (name) VALUES ('ada')"),
            db.prepare("INSERT INTO audit (event) VALUES ('created')"),
        ])
        .await?;
    let b = db
        .batch([db.prepare("SELECT 1"), db.prepare("SELECT 2")].to_vec())
        .await?;
    let c = db.batch(vec![db.prepare("SELECT 3"); 3]).await?;
    Ok(a.len() + b.len() + c.len())
}

/// One `UPDATE` in each branch.
#[d1_retry]
async fn update_in_branches(db: &Db, admin: bool, id: i64) -> Result<u64, DbError> {
    if admin {
        db.prepare("UPDATE admins SET seen_at = unixepoch() WHERE id = ?1")
            .bind(&[id])?
            .run()
            .await
    } else {
        db.prepare("UPDATE users SET seen_at = unixepoch() WHERE id = ?1")
            .bind(&[id])?
            .run()
            .await
    }
}

/// A `match` with an execution in each arm, and `let .. else` on one.
#[d1_retry]
async fn update_in_arms(db: &Db, role: Option<&str>) -> Result<u64, DbError> {
    let Some(count) = db.prepare(SQL).first().await? else {
        return Ok(0);
    };
    match role {
        Some("admin") => db.exec("DELETE FROM admins").await,
        Some(_) => db.prepare("DELETE FROM users").run().await,
        None => Ok(count as u64),
    }
}

/// A constant declared inside the function, read and written.
#[d1_retry]
async fn local_const(db: &Db) -> Result<u64, DbError> {
    const FIND: &str = "SELECT id FROM users WHERE id = ?1";
    const TOUCH: &str = "UPDATE users SET seen_at = unixepoch()";
    db.prepare(FIND).bind(&[1])?.first().await?;
    db.prepare(TOUCH).run().await
}

/// A function-local constant that shadows the module's `SQL`, and writes.
#[d1_retry]
async fn shadowed_const(db: &Db) -> Result<u64, DbError> {
    const SQL: &str = "DELETE FROM users";
    db.prepare(SQL).run().await
}

struct Queries;

impl Queries {
    const FIND: &str = "SELECT id FROM users";

    /// `Self::` and associated constants.
    #[d1_retry]
    async fn associated(db: &Db) -> Result<Option<i64>, DbError> {
        db.prepare(Self::FIND).first().await?;
        db.prepare(Queries::FIND).first().await
    }
}

/// A constant of the type's parameter, bound to a variable: judged where it is bound, by
/// an inline `const` block, which may name the parameters of a generic impl.
trait Dialect {
    const COUNT: &'static str;
}

struct Generic<D>(core::marker::PhantomData<D>);

impl<D: Dialect> Generic<D> {
    const FIND: &str = "SELECT id FROM users";

    #[d1_retry]
    async fn bound(db: &Db) -> Result<Option<i64>, DbError> {
        let count = db.prepare(D::COUNT);
        let find = db.prepare(Self::FIND);
        count.first().await?;
        find.first().await
    }
}

/// Statement variables named by raw identifiers.
#[d1_retry]
async fn raw_names(db: &Db, sql: &str) -> Result<u64, DbError> {
    let r#type = db.prepare(sql);
    let r#match = db.prepare(Queries::FIND);
    r#match.first().await?;
    r#type.run().await
}

struct Repo {
    db: Db,
}

impl Repo {
    /// `Type::prepare(&db, sql)` on a database the method owns.
    #[d1_retry]
    async fn path_prepare(&self) -> Result<u64, DbError> {
        let db = Db;
        Db::prepare(&db, "DELETE FROM sessions").run().await?;
        Db::prepare(&self.db, "SELECT 1").run().await
    }
}

/// `Type::prepare(db, sql)`, in full.
#[d1_retry]
async fn path_prepare(db: &Db, id: i64) -> Result<u64, DbError> {
    Db::prepare(db, "UPDATE users SET name = 'ada' WHERE id = ?1")
        .bind(&[id])?
        .run()
        .await?;
    <Db>::prepare(db, "SELECT 1").run().await
}

/// Dynamic SQL: `String`, `&String`, `&str`, `format!`, each scanned at `prepare`.
#[d1_retry]
async fn dynamic(db: &Db, table: &str) -> Result<u64, DbError> {
    let sql = format!("SELECT count(*) FROM {table}");
    db.prepare(&sql).first().await?;
    db.prepare(sql.as_str()).first().await?;
    db.prepare(format!("DELETE FROM {table}")).run().await?;
    let owned: String = format!("UPDATE {table} SET n = n + 1");
    db.prepare(owned).run().await
}

/// `exec(&string)` where `string: String`: the `&String` still coerces to `&str`.
#[d1_retry]
async fn exec_string(db: &Db, table: String) -> Result<u64, DbError> {
    let string = format!("DELETE FROM {table}");
    let a = db.exec(&string).await?;
    let b = db.exec(&table).await?;
    let c = db.exec(string.as_str()).await?;
    let d = db.exec(&*string).await?;
    Ok(a + b + c + d)
}

/// A statement variable, run and awaited directly; rebinding and shadowing hide its SQL,
/// which then counts as a write.
#[d1_retry]
async fn statement_variables(db: &Db) -> Result<u64, DbError> {
    let find = db.prepare("SELECT 1");
    find.first().await?;
    find.clone().await?;
    let touched = db.prepare("UPDATE users SET n = 1").await?;
    let shadow = db.prepare("SELECT 2");
    let shadow = shadow.bind(&[1])?;
    let mut reassigned = db.prepare("SELECT 3");
    reassigned.run().await?;
    reassigned = db.prepare("DELETE FROM users");
    reassigned.run().await?;
    Ok(touched + shadow.run().await? + find.await?)
}

/// A typed `let`, `query!`, and every execution method.
#[d1_retry]
async fn every_method(db: &Db) -> Result<usize, DbError> {
    let statement: Statement = db.prepare("SELECT id FROM users");
    let all = statement.all().await?;
    let raw = statement.raw::<i64>().await?;
    let js = statement.raw_js_value().await?;
    let first = query!(db, "SELECT 1", 1)?.first().await?;
    let dump = db.dump().await?;
    Ok(all.len() + raw.len() + js.len() + first.map_or(0, |_| 1) + dump.len())
}

/// Result types inferred from a `let` and from the return type; `let` chains.
#[d1_retry]
async fn inferred(db: &Db) -> Result<Vec<i64>, DbError> {
    let statement = db.prepare("SELECT 1");
    let bytes: Vec<u8> = statement.raw().await?;
    if let Some(n) = statement.first().await?
        && n > 0
        && let Ok(m) = statement.run().await
    {
        return Ok(vec![n, m as i64, bytes.len() as i64]);
    }
    db.prepare("SELECT 2").raw().await
}

/// Nested items keep their own code.
#[d1_retry]
async fn nested_items(db: &Db) -> Result<u64, DbError> {
    async fn helper(db: &Db) -> Result<u64, DbError> {
        db.prepare("DELETE FROM users").run().await
    }
    helper(db).await?;
    db.prepare("SELECT 1").run().await
}

fn main() {
    let db = Db;
    assert_eq!(
        block_on(batch_collected_in_loop(&db, &["a", "b"])).ok(),
        Some(vec![1, 1])
    );
    assert_eq!(block_on(batch_in_place(&db)).ok(), Some(7));
    assert_eq!(block_on(update_in_branches(&db, true, 1)).ok(), Some(1));
    assert_eq!(block_on(update_in_branches(&db, false, 1)).ok(), Some(1));
    assert_eq!(block_on(update_in_arms(&db, None)).ok(), Some(1));
    assert!(block_on(update_in_arms(&db, Some("admin"))).is_ok());
    assert_eq!(block_on(local_const(&db)).ok(), Some(1));
    assert_eq!(block_on(shadowed_const(&db)).ok(), Some(1));
    assert_eq!(block_on(Queries::associated(&db)).ok(), Some(Some(1)));
    struct Sqlite;
    impl Dialect for Sqlite {
        const COUNT: &'static str = "SELECT count(*) FROM users";
    }
    assert_eq!(block_on(Generic::<Sqlite>::bound(&db)).ok(), Some(Some(1)));
    assert_eq!(block_on(raw_names(&db, "SELECT 1")).ok(), Some(1));
    assert_eq!(block_on(path_prepare(&db, 1)).ok(), Some(1));
    assert_eq!(block_on(Repo { db: Db }.path_prepare()).ok(), Some(1));
    assert_eq!(block_on(inferred(&db)).ok(), Some(vec![1, 1, 1]));
    assert_eq!(block_on(dynamic(&db, "users")).ok(), Some(1));
    let deleted = "DELETE FROM t".len() as u64;
    assert_eq!(
        block_on(exec_string(&db, "t".to_owned())).ok(),
        Some(3 * deleted + 1)
    );
    assert_eq!(block_on(statement_variables(&db)).ok(), Some(3));
    assert_eq!(block_on(every_method(&db)).ok(), Some(3));
    assert_eq!(block_on(nested_items(&db)).ok(), Some(1));
}
