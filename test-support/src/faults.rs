//! What the per-call tests do to the testing kit's database most often: fail a statement
//! once after it ran (the first with some SQL, or one call among several), read a number
//! back from SQLite or count the calls D1 was sent, and start from a table of orders with
//! an empty archive, which a statement builder of the user's own fills, or from empty
//! orders and audit tables.

use d1_retry_runtime::testing::{
    D1Database, D1PreparedStatement, Fault, Message, Operation, Timing,
};

/// The next call whose SQL holds `fragment` fails as maybe executed, after it ran, once:
/// the failure after which only a read may be made again.
pub fn lose_once_after_running(db: &D1Database, fragment: &str) {
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .when_sql_contains(fragment)
            .times(1),
    );
}

/// The next call whose SQL holds `fragment` fails once, as `message` says, at `timing`.
pub fn fail_once(db: &D1Database, fragment: &str, message: Message, timing: Timing) {
    db.add_fault(
        Fault::new(message)
            .timing(timing)
            .when_sql_contains(fragment)
            .times(1),
    );
}

/// A database on SQLite with an empty `orders` table (`id`, `item`) and an empty `audit`
/// table (`what`): the tables of the repositories the per-call tests write.
///
/// # Panics
///
/// When SQLite cannot open an in-memory database.
#[must_use]
pub fn orders_and_audit() -> D1Database {
    let db = D1Database::open_in_memory().unwrap_or_else(|error| panic!("{error}"));
    db.with_connection(|c| {
        c.execute_batch(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL);
             CREATE TABLE audit (what TEXT NOT NULL);",
        )
    })
    .unwrap_or_else(|error| panic!("{error}"));
    db
}

/// The `call`-th call of `operation` (counting from 0) fails as maybe executed, after it
/// ran: one run among several of a statement prepared once.
pub fn lose_call_after_running(db: &D1Database, operation: Operation, call: u64) {
    db.add_fault(
        Fault::new(Message::NetworkConnectionLost)
            .after_execution()
            .on(operation)
            .on_calls(call..call + 1),
    );
}

/// The integer `sql` reads, straight from SQLite (no fault applies).
///
/// # Panics
///
/// When `sql` fails or reads no integer: the test's own query is wrong.
pub fn count(db: &D1Database, sql: &str) -> i64 {
    db.with_connection(|c| c.query_row(sql, [], |row| row.get(0)))
        .unwrap_or_else(|error| panic!("{sql}: {error}"))
}

/// The calls D1 was sent whose statements' SQL holds `fragment`, every attempt counted.
pub fn calls_with(db: &D1Database, fragment: &str) -> usize {
    db.calls()
        .iter()
        .filter(|call| {
            call.statements
                .iter()
                .any(|(sql, _)| sql.contains(fragment))
        })
        .count()
}

/// A database on SQLite with an `orders` table holding one order (`'tea'`) and an empty
/// `archive` table: the tests of statements prepared by a receiver of the user's own
/// archive the orders they select, and count what landed there.
///
/// # Panics
///
/// When SQLite cannot open an in-memory database.
pub fn orders_with_archive() -> D1Database {
    let db = D1Database::open_in_memory().unwrap_or_else(|error| panic!("{error}"));
    db.with_connection(|c| {
        c.execute_batch(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL);
             CREATE TABLE archive (item TEXT NOT NULL);
             INSERT INTO orders (item) VALUES ('tea');",
        )
    })
    .unwrap_or_else(|error| panic!("{error}"));
    db
}

/// A statement builder of the user's own, with a `prepare` of its own: it archives the
/// items the `SELECT` it is handed returns, so the SQL handed to it is not the statement's
/// (it writes, where its argument reads).
#[derive(Clone)]
pub struct Archive {
    /// The database the archive is written to.
    pub db: D1Database,
}

impl Archive {
    /// `INSERT INTO archive (item) <select>`.
    pub fn prepare(&self, select: &str) -> D1PreparedStatement {
        self.db
            .prepare(format!("INSERT INTO archive (item) {select}"))
    }
}
