//! A small repository over D1, each method retried with `#[d1_retry]`.
//!
//! One source, two targets: on `wasm32` it runs against `worker`'s D1, and natively the
//! same file compiles against `d1_retry::testing`, the local D1 on SQLite with injectable
//! failures (`tests/example_repository.rs` at the repository root includes this file as is).
//! So it names only what both share: the types below, `serde`, and `crate::policy::POLICY`,
//! which the including crate provides.

use d1_retry::d1_retry;
use serde::{Deserialize, Serialize};

#[cfg(not(target_arch = "wasm32"))]
use d1_retry::testing::{D1Database, D1PreparedStatement, D1Result, Error, JsValue};
#[cfg(target_arch = "wasm32")]
use worker::{D1Database, D1PreparedStatement, D1Result, Error, wasm_bindgen::JsValue};

/// `worker::Result` on a Worker; the local D1's error natively.
pub type Result<T, E = Error> = core::result::Result<T, E>;

use crate::policy::POLICY;

/// A row of `users`.
#[derive(Debug, Serialize, Deserialize)]
pub struct User {
    pub id: i64,
    pub email: String,
    pub name: String,
}

/// A row of `orders`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Order {
    pub id: i64,
    pub user_id: i64,
    pub item: String,
    pub quantity: i64,
}

/// An order to place.
#[derive(Debug, Serialize, Deserialize)]
pub struct NewOrder {
    pub item: String,
    pub quantity: i64,
}

/// How many rows each table holds.
#[derive(Debug, Serialize)]
pub struct Stats {
    pub users: i64,
    pub orders: i64,
}

/// A constant: `#[d1_retry]` judges it at compile time, through the `const fn` scanner.
const INSERT_ORDER: &str = "INSERT INTO orders (user_id, item, quantity) VALUES (?1, ?2, ?3)";

pub struct Shop {
    db: D1Database,
}

impl Shop {
    pub fn new(db: D1Database) -> Self {
        Shop { db }
    }

    /// A read: retried after any transient failure.
    #[d1_retry(policy = POLICY)]
    pub async fn find_user(&self, id: i64) -> Result<Option<User>> {
        self.db
            .prepare("SELECT id, email, name FROM users WHERE id = ?1")
            .bind(&[number(id)])?
            .first(None)
            .await
    }

    /// A read through `all()`, whose failures arrive as `Error::UnknownJsError`: a user's
    /// orders, or only those of one item. The statement is chosen by `match`, and
    /// `#[d1_retry]` judges it by every arm: both read, so it is a read whichever arm ran,
    /// retried after any transient failure (an arm that wrote would make it a write). The
    /// first arm's SQL runs over several lines, comment included: D1 sends a prepared
    /// statement to SQLite whole, so it is a read too (`is_read_only_prepared`).
    #[d1_retry(policy = POLICY)]
    pub async fn user_orders(&self, user_id: i64, item: Option<&str>) -> Result<Vec<Order>> {
        let orders = match item {
            None => self
                .db
                .prepare(
                    "SELECT id, user_id, item, quantity
                       FROM orders /* a user's orders, in the order
                                      they were placed */
                      WHERE user_id = ?1
                      ORDER BY id",
                )
                .bind(&[number(user_id)])?,
            Some(item) => self
                .db
                .prepare(
                    "SELECT id, user_id, item, quantity FROM orders \
                     WHERE user_id = ?1 AND item = ?2 ORDER BY id",
                )
                .bind(&[number(user_id), item.into()])?,
        };
        orders.all().await?.results()
    }

    /// A read with the default schedule (about 200, 400, 800, 1600 ms).
    #[d1_retry]
    pub async fn count_users(&self) -> Result<i64> {
        let count = self
            .db
            .prepare("SELECT COUNT(*) AS n FROM users")
            .first::<i64>(Some("n"))
            .await?;
        Ok(count.unwrap_or(0))
    }

    /// A single write: retried only when D1 was not reached, since running it twice
    /// would create two users (or fail the second time on the unique email).
    #[d1_retry(policy = POLICY)]
    pub async fn create_user(&self, email: &str, name: &str) -> Result<i64> {
        let result = self
            .db
            .prepare("INSERT INTO users (email, name) VALUES (?1, ?2)")
            .bind(&[email.into(), name.into()])?
            .run()
            .await?;
        last_row_id(&result)
    }

    /// An upsert: running it twice leaves the row as running it once, so it is declared
    /// idempotent and retried like a read.
    #[d1_retry(idempotent, policy = POLICY)]
    pub async fn save_user(&self, user: &User) -> Result<()> {
        self.db
            .prepare(
                "INSERT INTO users (id, email, name) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (id) DO UPDATE SET email = excluded.email, name = excluded.name",
            )
            .bind(&[
                number(user.id),
                user.email.as_str().into(),
                user.name.as_str().into(),
            ])?
            .run()
            .await?;
        Ok(())
    }

    /// A single write whose SQL is a constant.
    #[d1_retry(policy = POLICY)]
    pub async fn place_order(&self, user_id: i64, order: &NewOrder) -> Result<i64> {
        let result = self
            .db
            .prepare(INSERT_ORDER)
            .bind(&[
                number(user_id),
                order.item.as_str().into(),
                number(order.quantity),
            ])?
            .run()
            .await?;
        last_row_id(&result)
    }

    /// A read whose statement a helper makes: `#[d1_retry]` cannot see its SQL where it
    /// runs, so it reads the SQL the statement holds when the call begins (workerd keeps it
    /// on the statement), finds a read, and retries it after any transient failure.
    #[d1_retry(policy = POLICY)]
    pub async fn order_count(&self, user_id: i64) -> Result<i64> {
        let count = self.orders_of(user_id)?.first::<i64>(Some("n")).await?;
        Ok(count.unwrap_or(0))
    }

    /// The same read in a body declared `read_only`. It is one D1 call, so that call is
    /// retried on its own, as `order_count`'s is, rather than the body run again as a whole
    /// (which would only make the statement again): the statement it runs but did not make
    /// in sight is read when it runs (workerd keeps its SQL), a read, retried after any
    /// transient failure; SQL there that may write would be retried only when D1 was not
    /// reached.
    #[d1_retry(read_only, policy = POLICY)]
    pub async fn order_report(&self, user_id: i64) -> Result<i64> {
        let count = self.orders_of(user_id)?.first::<i64>(Some("n")).await?;
        Ok(count.unwrap_or(0))
    }

    /// Two reads in a body declared `read_only`, which runs again as a whole after any
    /// transient failure: the user's orders (`all`), then their count through the helper's
    /// statement (`first`), each attempt both. The helper's statement is read when it runs
    /// (workerd keeps its SQL), a read, so the body stays retried; SQL there that may write
    /// would stop it from running again.
    #[d1_retry(read_only, policy = POLICY)]
    pub async fn order_summary(&self, user_id: i64) -> Result<i64> {
        let orders: Vec<Order> = self
            .db
            .prepare("SELECT id, user_id, item, quantity FROM orders WHERE user_id = ?1")
            .bind(&[number(user_id)])?
            .all()
            .await?
            .results()?;
        let count = self.orders_of(user_id)?.first::<i64>(Some("n")).await?;
        let listed = i64::try_from(orders.len()).unwrap_or(i64::MAX);
        Ok(count.unwrap_or(0).min(listed))
    }

    /// A write whose statement a helper makes: read the same way, it is a write, retried
    /// only when D1 was not reached.
    #[d1_retry(policy = POLICY)]
    pub async fn place_prepared_order(&self, user_id: i64, order: &NewOrder) -> Result<i64> {
        let insert = self.order_insert(user_id, order)?;
        let result = insert.run().await?;
        last_row_id(&result)
    }

    /// A statement made once for the methods that run it.
    fn orders_of(&self, user_id: i64) -> Result<D1PreparedStatement> {
        self.db
            .prepare("SELECT COUNT(*) AS n FROM orders WHERE user_id = ?1")
            .bind(&[number(user_id)])
    }

    fn order_insert(&self, user_id: i64, order: &NewOrder) -> Result<D1PreparedStatement> {
        self.db.prepare(INSERT_ORDER).bind(&[
            number(user_id),
            order.item.as_str().into(),
            number(order.quantity),
        ])
    }

    /// A batch of writes: one transaction, so one statement site, retried like a single write.
    #[d1_retry(policy = POLICY)]
    pub async fn place_orders(&self, user_id: i64, orders: &[NewOrder]) -> Result<usize> {
        let results = self
            .db
            .batch(
                orders
                    .iter()
                    .map(|order| {
                        self.db.prepare(INSERT_ORDER).bind(&[
                            number(user_id),
                            order.item.as_str().into(),
                            number(order.quantity),
                        ])
                    })
                    .collect::<Result<Vec<_>>>()?,
            )
            .await?;
        Ok(results.len())
    }

    /// Several D1 calls in one function, the shape real Workers take: read the user, insert
    /// one order per item through one statement prepared once, then read the count back.
    ///
    /// Each D1 call is retried on its own, and a completed one never runs again: a failure
    /// of the third insert that never reached D1 retries the third insert alone; one that
    /// may have run it is handed back (a write); one on either read retries that read.
    /// The calls share the policy's retries (4 in all), however many items there are.
    #[d1_retry(policy = POLICY)]
    pub async fn place_items(&self, user_id: i64, items: &[String]) -> Result<i64> {
        let user: Option<User> = self
            .db
            .prepare("SELECT id, email, name FROM users WHERE id = ?1")
            .bind(&[number(user_id)])?
            .first(None)
            .await?;
        let Some(user) = user else {
            return Err("no such user".into());
        };
        let insert = self.db.prepare(INSERT_ORDER);
        for item in items {
            insert
                .clone()
                .bind(&[number(user.id), item.as_str().into(), number(1)])?
                .run()
                .await?;
        }
        let count = self
            .db
            .prepare("SELECT COUNT(*) AS n FROM orders WHERE user_id = ?1")
            .bind(&[number(user.id)])?
            .first::<i64>(Some("n"))
            .await?;
        Ok(count.unwrap_or(0))
    }

    /// A read with time limits, for a D1 that stalls: each attempt is cut after 1 s and
    /// retried (a read may run twice), and the whole call, retries included, ends by 4 s
    /// with a `TimedOut` error ("D1 call timed out: ... passed its deadline of 4000 ms")
    /// however long D1 hangs. Tight limits, chosen so the end-to-end tests stay quick; a
    /// healthy read takes milliseconds.
    #[d1_retry(policy = POLICY, attempt_timeout_ms = 1000, deadline_ms = 4000)]
    pub async fn find_user_bounded(&self, id: i64) -> Result<Option<User>> {
        self.db
            .prepare("SELECT id, email, name FROM users WHERE id = ?1")
            .bind(&[number(id)])?
            .first(None)
            .await
    }

    /// A write with time limits: an attempt that passes 1 s is abandoned and the caller
    /// gets the timeout error at once, never a retry, because the abandoned insert may
    /// still run in D1 (dropping the call does not cancel the query). So a stalled write
    /// returns a timeout error and is in the database at most once.
    #[d1_retry(policy = POLICY, attempt_timeout_ms = 1000, deadline_ms = 4000)]
    pub async fn place_order_bounded(&self, user_id: i64, order: &NewOrder) -> Result<i64> {
        let result = self
            .db
            .prepare(INSERT_ORDER)
            .bind(&[
                number(user_id),
                order.item.as_str().into(),
                number(order.quantity),
            ])?
            .run()
            .await?;
        last_row_id(&result)
    }

    /// A batch of reads: retried after any transient failure.
    #[d1_retry(policy = POLICY)]
    pub async fn stats(&self) -> Result<Stats> {
        let results = self
            .db
            .batch(vec![
                self.db.prepare("SELECT COUNT(*) AS n FROM users"),
                self.db.prepare("SELECT COUNT(*) AS n FROM orders"),
            ])
            .await?;
        let count = |index: usize| -> Result<i64> {
            let rows: Vec<Count> = match results.get(index) {
                Some(result) => result.results()?,
                None => return Err("the batch returned fewer results than statements".into()),
            };
            Ok(rows.first().map_or(0, |row| row.n))
        };
        Ok(Stats {
            users: count(0)?,
            orders: count(1)?,
        })
    }

    /// SQL that SQLite refuses: a permanent failure, never retried. (It never returns a
    /// row; the row type only has to be one both targets can read.)
    #[d1_retry(policy = POLICY)]
    pub async fn broken_syntax(&self) -> Result<Option<User>> {
        self.db.prepare("SELEC 1").first(None).await
    }

    /// A table that does not exist: a permanent failure, never retried.
    #[d1_retry(policy = POLICY)]
    pub async fn missing_table(&self) -> Result<Vec<User>> {
        self.db
            .prepare("SELECT * FROM no_such_table")
            .all()
            .await?
            .results()
    }
}

#[derive(Deserialize)]
struct Count {
    n: i64,
}

/// D1 takes JavaScript numbers; `JsValue::from(i64)` would be a `BigInt`, which it refuses.
pub fn number(value: i64) -> JsValue {
    JsValue::from_f64(value as f64)
}

pub fn last_row_id(result: &D1Result) -> Result<i64> {
    result
        .meta()?
        .and_then(|meta| meta.last_row_id)
        .ok_or_else(|| "D1 did not report the new row's id".into())
}
