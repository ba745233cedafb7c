//! The same kind of calls through `D1Retry`: the binding wrapped once, the call sites
//! unchanged from plain `worker::D1Database` code.

use d1_retry::worker::D1Retry;
use worker::{Env, Result};

use crate::policy::POLICY;
use crate::shop::{NewOrder, Order, Stats, User, last_row_id, number};

fn db(env: &Env) -> Result<D1Retry> {
    Ok(D1Retry::new(env.d1("DB")?).with_policy(POLICY))
}

pub async fn find_user(env: &Env, id: i64) -> Result<Option<User>> {
    db(env)?
        .prepare("SELECT id, email, name FROM users WHERE id = ?1")
        .bind(&[number(id)])?
        .first(None)
        .await
}

pub async fn user_orders(env: &Env, user_id: i64) -> Result<Vec<Order>> {
    db(env)?
        .prepare("SELECT id, user_id, item, quantity FROM orders WHERE user_id = ?1 ORDER BY id")
        .bind(&[number(user_id)])?
        .all()
        .await?
        .results()
}

/// `raw()`: rows as arrays, here `[item, quantity]`. The SQL's comment runs over two lines:
/// a prepared statement reaches SQLite whole, so it is still a read.
pub async fn order_items(env: &Env, user_id: i64) -> Result<Vec<Vec<serde_json::Value>>> {
    db(env)?
        .prepare(
            "SELECT item, quantity FROM orders /* oldest first,
                one row per order */ WHERE user_id = ?1 ORDER BY id",
        )
        .bind(&[number(user_id)])?
        .raw()
        .await
}

pub async fn place_order(env: &Env, user_id: i64, order: &NewOrder) -> Result<i64> {
    let result = db(env)?
        .prepare("INSERT INTO orders (user_id, item, quantity) VALUES (?1, ?2, ?3)")
        .bind(&[
            number(user_id),
            order.item.as_str().into(),
            number(order.quantity),
        ])?
        .run()
        .await?;
    last_row_id(&result)
}

pub async fn place_orders(env: &Env, user_id: i64, orders: &[NewOrder]) -> Result<usize> {
    let db = db(env)?;
    let insert = db.prepare("INSERT INTO orders (user_id, item, quantity) VALUES (?1, ?2, ?3)");
    let statements = orders
        .iter()
        .map(|order| {
            insert.clone().bind(&[
                number(user_id),
                order.item.as_str().into(),
                number(order.quantity),
            ])
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(db.batch(statements).await?.len())
}

pub async fn stats(env: &Env) -> Result<Stats> {
    let db = db(env)?;
    let results = db
        .batch(vec![
            db.prepare("SELECT COUNT(*) AS n FROM users"),
            db.prepare("SELECT COUNT(*) AS n FROM orders"),
        ])
        .await?;
    let mut counts = [0; 2];
    for (count, result) in counts.iter_mut().zip(&results) {
        let rows: Vec<serde_json::Value> = result.results()?;
        *count = rows
            .first()
            .and_then(|row| row.get("n"))
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(0);
    }
    Ok(Stats {
        users: counts[0],
        orders: counts[1],
    })
}

/// `exec()` of read-only SQL: retried like a read. Returns how many queries ran.
pub async fn exec_read(env: &Env) -> Result<Option<u32>> {
    let result = db(env)?.exec("SELECT COUNT(*) FROM users").await?;
    result.count().map_err(worker::Error::from)
}

/// A read in a session (`withSession`).
pub async fn find_user_in_session(env: &Env, id: i64) -> Result<Option<User>> {
    let session = db(env)?.with_session(Some("first-unconstrained"))?;
    session
        .prepare("SELECT id, email, name FROM users WHERE id = ?1")
        .bind(&[number(id)])?
        .first(None)
        .await
}
