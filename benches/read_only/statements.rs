//! A seeded generator of the SQL a D1 application sends: point reads, joins, CTEs and
//! aggregates, commented queries, inserts with `RETURNING`, upserts, updates and deletes, and
//! `batch()` calls holding several of them. Every statement prepares against [`SCHEMA`].

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The schema the statements are written against (users, orders, products, sessions).
pub const SCHEMA: &str = "
CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT 'member', created_at TEXT NOT NULL, deleted_at TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id),
    status TEXT NOT NULL, total INTEGER NOT NULL, note TEXT, created_at TEXT NOT NULL);
CREATE TABLE products (id INTEGER PRIMARY KEY, sku TEXT NOT NULL UNIQUE, title TEXT NOT NULL,
    price INTEGER NOT NULL, stock INTEGER NOT NULL, meta TEXT);
CREATE TABLE order_items (order_id INTEGER NOT NULL, product_id INTEGER NOT NULL,
    qty INTEGER NOT NULL, price INTEGER NOT NULL, PRIMARY KEY (order_id, product_id));
CREATE TABLE sessions (token TEXT PRIMARY KEY, user_id INTEGER NOT NULL, expires_at TEXT NOT NULL);
";

/// One call to D1: a single `prepare`, or a `batch()` of several statements.
pub type Call = Vec<String>;

/// `count` calls, the same for the same `seed`: about 60 % single reads, 30 % single writes
/// and 10 % batches of 2 to 5 statements.
pub fn generate(seed: u64, count: usize) -> Vec<Call> {
    let mut generator = Generator {
        rng: SmallRng::seed_from_u64(seed),
    };
    (0..count)
        .map(|_| match generator.rng.random_range(0..10) {
            0..6 => vec![generator.read()],
            6..9 => vec![generator.write()],
            _ => {
                let len = generator.rng.random_range(2..=5);
                (0..len)
                    .map(|_| {
                        if generator.rng.random_bool(0.5) {
                            generator.read()
                        } else {
                            generator.write()
                        }
                    })
                    .collect()
            }
        })
        .collect()
}

/// `count` single-statement reads, the same for the same `seed`: the reads of
/// [`generate`], plus reads that use write keywords as names and are cut into lines. A
/// scanner must read each to its end to call it read-only.
pub fn reads(seed: u64, count: usize) -> Vec<String> {
    let mut generator = Generator {
        rng: SmallRng::seed_from_u64(seed ^ 0x5EAD),
    };
    (0..count)
        .map(|_| {
            if generator.rng.random_bool(0.2) {
                generator.keyword_read()
            } else {
                generator.read()
            }
        })
        .collect()
}

/// A read of about 100 bytes with `id` in it, so that it is only known at run time.
pub fn hundred_byte_read(id: u32) -> String {
    format!(
        "SELECT id, email, name, role FROM users WHERE id = {id} AND deleted_at IS NULL \
         ORDER BY created_at LIMIT 1"
    )
}

struct Generator {
    rng: SmallRng,
}

const STATUSES: [&str; 4] = ["pending", "paid", "shipped", "refunded"];
/// Values users type: some hold SQL keywords, which a scanner must treat as text.
const NOTES: [&str; 5] = [
    "leave at the door",
    "please delete my old address",
    "gift; don''t include the invoice",
    "update: call before delivery",
    "-- no comment --",
];
const COMMENTS: [&str; 4] = [
    "-- users by id\n",
    "/* dashboard: recent orders */ ",
    "-- TODO: index on created_at\n",
    "/* insert-heavy path, see #42 */\n",
];

impl Generator {
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.rng.random_range(0..items.len())]
    }

    fn maybe_comment(&mut self) -> &'static str {
        if self.rng.random_bool(0.2) {
            self.pick(&COMMENTS)
        } else {
            ""
        }
    }

    /// Keywords in either case, as hand-written and ORM-generated SQL differ.
    fn kw(&self, keyword: &'static str, lower: bool) -> String {
        if lower {
            keyword.to_ascii_lowercase()
        } else {
            keyword.to_owned()
        }
    }

    fn read(&mut self) -> String {
        let comment = self.maybe_comment();
        let lower = self.rng.random_bool(0.3);
        let select = self.kw("SELECT", lower);
        let from = self.kw("FROM", lower);
        let where_ = self.kw("WHERE", lower);
        let limit = self.rng.random_range(1..100);
        let status = self.pick(&STATUSES);
        let body = match self.rng.random_range(0..8) {
            0 => format!(
                "{select} id, email, name, role, created_at {from} users {where_} id = ?1 \
                 AND deleted_at IS NULL"
            ),
            1 => format!(
                "{select} u.id, u.name, o.id AS order_id, o.total, o.status\n  {from} users u\n  \
                 JOIN orders o ON o.user_id = u.id\n  {where_} u.id = ?1 AND o.status = '{status}'\n  \
                 ORDER BY o.created_at DESC LIMIT {limit}"
            ),
            2 => format!(
                "WITH recent AS (\n  {select} user_id, COUNT(*) AS n, SUM(total) AS spent\n  \
                 {from} orders {where_} created_at > datetime('now', '-30 days')\n  \
                 GROUP BY user_id\n)\n{select} u.email, r.n, r.spent {from} recent r \
                 JOIN users u ON u.id = r.user_id {where_} r.spent > ?1 ORDER BY r.spent DESC \
                 LIMIT {limit}"
            ),
            3 => format!(
                "{select} p.sku, p.title, oi.qty, oi.price * oi.qty AS line_total\n{from} \
                 order_items oi\nINNER JOIN products p ON p.id = oi.product_id\nLEFT JOIN orders \
                 o ON o.id = oi.order_id\n{where_} oi.order_id IN (?1, ?2, ?3) AND o.status <> \
                 'refunded'"
            ),
            4 => format!(
                "{select} replace(title, 'a', 'b') AS update_title, \
                 json_extract(meta, '$.color') AS color,\n  CASE WHEN stock > 0 THEN 'in stock' \
                 ELSE 'sold out' END AS availability\n{from} products {where_} title LIKE ?1 \
                 ESCAPE '\\' AND price BETWEEN ?2 AND ?3"
            ),
            5 => format!(
                "{select} COUNT(*) AS total, status {from} orders {where_} user_id = ?1 AND note \
                 <> '{}' GROUP BY status HAVING COUNT(*) > 1",
                self.pick(&NOTES)
            ),
            6 => format!(
                "{select} s.user_id, u.role {from} sessions s JOIN users u ON u.id = s.user_id \
                 {where_} s.token = ?1 AND s.expires_at > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
            ),
            _ => format!(
                "WITH RECURSIVE days(d) AS ({select} date(?1) UNION ALL {select} date(d, '+1 day') \
                 {from} days {where_} d < date(?2))\n{select} d, (\n  {select} COUNT(*) {from} \
                 orders o {where_} date(o.created_at) = d\n) AS orders_that_day {from} days"
            ),
        };
        format!("{comment}{body}")
    }

    /// A read with columns, aliases and tables named like keywords, as schemas and ORMs
    /// name them (`replace`, `analyze`, `begin`, `release`).
    fn keyword_read(&mut self) -> String {
        let limit = self.rng.random_range(1..100);
        match self.rng.random_range(0..3) {
            0 => format!(
                "SELECT o.id, o.status AS replace, o.total AS analyze, o.note pragma\n  FROM \
                 orders AS begin\n  JOIN orders o ON o.id = begin.id\n  WHERE o.user_id = ?1 \
                 AND o.status <> 'refunded'\n  ORDER BY replace, analyze DESC LIMIT {limit}"
            ),
            1 => "SELECT release.sku, release.title, release.price AS savepoint\nFROM products \
                  release\nWHERE release.stock > 0 AND release.meta IS NOT NULL\nORDER BY \
                  savepoint DESC"
                .to_owned(),
            _ => format!(
                "WITH plan AS (SELECT user_id, SUM(total) AS vacuum FROM orders GROUP BY \
                 user_id)\nSELECT u.email, plan.vacuum AS reindex FROM plan JOIN users u ON \
                 u.id = plan.user_id WHERE plan.vacuum > {limit}"
            ),
        }
    }

    fn write(&mut self) -> String {
        let comment = self.maybe_comment();
        let lower = self.rng.random_bool(0.3);
        let insert = self.kw("INSERT INTO", lower);
        let returning = self.kw("RETURNING", lower);
        let note = self.pick(&NOTES);
        let status = self.pick(&STATUSES);
        let body = match self.rng.random_range(0..7) {
            0 => format!(
                "{insert} users (email, name, created_at) VALUES (?1, ?2, datetime('now')) \
                 {returning} id, created_at"
            ),
            1 => format!(
                "{insert} orders (user_id, status, total, note, created_at)\nVALUES (?1, \
                 '{status}', ?2, '{note}', datetime('now'))\n{returning} *"
            ),
            2 => format!(
                "{insert} products (sku, title, price, stock) VALUES (?1, ?2, ?3, ?4)\nON \
                 CONFLICT(sku) DO UPDATE SET title = excluded.title, price = excluded.price, \
                 stock = products.stock + excluded.stock"
            ),
            3 => "INSERT OR IGNORE INTO sessions (token, user_id, expires_at) VALUES (?1, ?2, \
                  datetime('now', '+7 days'))"
                .to_owned(),
            4 => format!(
                "UPDATE orders SET status = '{status}', note = ?2 WHERE id = ?1 AND status = \
                 'pending' {returning} id, status"
            ),
            5 => "DELETE FROM sessions WHERE expires_at < datetime('now') OR user_id IN \
                  (SELECT id FROM users WHERE deleted_at IS NOT NULL)"
                .to_owned(),
            _ => "WITH stale AS (SELECT id FROM orders WHERE status = 'pending' AND created_at \
                  < datetime('now', '-1 day'))\nUPDATE orders SET status = 'refunded' WHERE id \
                  IN (SELECT id FROM stale)"
                .to_owned(),
        };
        format!("{comment}{body}")
    }
}
