//! What the per-call tests do to the testing kit's database most often: fail a statement
//! once after it ran (the first with some SQL, or one call among several), and read a
//! number back from SQLite.

use d1_retry_runtime::testing::{D1Database, Fault, Message, Operation};

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
