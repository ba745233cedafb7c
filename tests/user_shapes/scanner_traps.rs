//! SQL written to fool the read-only scanner (quotes and comments that hide a `;`, a write
//! after a CTE, form feeds and odd line ends, parameters and numbers of every spelling,
//! transaction and maintenance statements), judged by SQLite itself: no text the scanner
//! calls read-only may change the database, whole as `prepare` sends it or line by line as
//! D1's `exec` runs it.

/// Whether running `text` on a fresh database changed it: rows, schema, `user_version`.
/// With `line_by_line`, each line is run on its own, as D1's `exec` runs it.
fn sqlite_writes(text: &str, line_by_line: bool) -> bool {
    let c = rusqlite::Connection::open_in_memory().expect("an in-memory SQLite opens");
    c.execute_batch(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT);
         CREATE TABLE t (a);
         INSERT INTO orders (item) VALUES ('x');",
    )
    .expect("the schema is valid");
    let state = |c: &rusqlite::Connection| -> (u64, i64, i64, i64) {
        let read = |sql: &str| -> i64 {
            c.query_row(sql, [], |r| r.get(0))
                .expect("the state query runs")
        };
        (
            c.total_changes(),
            read("PRAGMA schema_version"),
            read("PRAGMA user_version"),
            read("SELECT count(*) FROM orders"),
        )
    };
    let before = state(&c);
    // A trap SQLite rejects may still have run its statements before the error: the state
    // says what it did.
    if line_by_line {
        for line in text.split('\n').filter(|line| !line.trim().is_empty()) {
            let _ = c.execute_batch(line);
        }
    } else {
        let _ = c.execute_batch(text);
    }
    state(&c) != before
}

const TRAPS: &[&str] = &[
    "SELECT 'a\\'; DELETE FROM orders; --'",
    "SELECT 1 /* /* */ ; DELETE FROM orders; /* */ */",
    "SELECT [a;b] FROM (SELECT 1 AS [a;b]); DELETE FROM orders",
    "SELECT `x``;` FROM (SELECT 1 AS `x``;`); DELETE FROM orders",
    "WITH x AS (SELECT [(] FROM (SELECT 1 AS [(])) DELETE FROM orders",
    "WITH x AS (SELECT `(` FROM (SELECT 1 AS `(`)) DELETE FROM orders",
    "WITH x AS (SELECT \"(\" FROM (SELECT 1 AS \"(\")) DELETE FROM orders",
    "WITH x AS (SELECT ')') DELETE FROM orders",
    "WITH x AS (SELECT 1)\x0cDELETE FROM orders",
    "SELECT 1;\x0cDELETE FROM orders",
    "SELECT 1;\rDELETE FROM orders",
    "SELECT 1 --\r; DELETE FROM orders",
    "SELECT 1 -- x\r\nDELETE FROM orders",
    "SELECT x'41'; DELETE FROM orders",
    "SELECT 1 AS \u{a0}; DELETE FROM orders",
    "SELECT 1;\u{a0}DELETE FROM orders",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) \
     INSERT INTO orders (item) SELECT x FROM c",
    "WITH x AS NOT MATERIALIZED (SELECT 1) UPDATE orders SET item = 'y'",
    "WITH x AS (SELECT 1), y AS (SELECT 2) REPLACE INTO orders (id, item) VALUES (1, 'z')",
    "WITH \"delete\" AS (SELECT 1) SELECT * FROM \"delete\"",
    "WITH x AS (SELECT 1) SELECT * FROM x; INSERT INTO orders (item) VALUES ('w')",
    "VALUES (1); INSERT INTO orders (item) VALUES ('w')",
    "EXPLAIN SELECT 1; DELETE FROM orders",
    "PRAGMA user_version = 7",
    "PRAGMA main.user_version = 7",
    "SELECT 1 ;; DELETE FROM orders",
    "SELECT 1 -- ; \n; DELETE FROM orders",
    "SELECT $a::b(;) ; DELETE FROM orders",
    "SELECT :a; DELETE FROM orders",
    "SELECT ?1; DELETE FROM orders",
    "SELECT 1e5; DELETE FROM orders",
    "SELECT 0x1F; DELETE FROM orders",
    "SELECT 1_000; DELETE FROM orders",
    "SELECT CASE WHEN 1 THEN 'END' END; DELETE FROM orders",
    "CREATE TEMP TABLE tmp (a)",
    "CREATE TEMP VIEW v AS SELECT 1",
    "ANALYZE",
    "VACUUM",
    "REINDEX",
    "SELECT * FROM orders WHERE item = 'it''s'; DELETE FROM orders",
    "\u{feff}DELETE FROM orders",
    "select 1;DELETE FROM orders",
    "SeLeCt 1;dElEtE FROM orders",
    "SELECT\t1\t;\tDELETE\tFROM\torders",
    "SELECT 1 /**/; DELETE FROM orders",
    "SELECT 1 /*/ ; DELETE FROM orders; /*/",
    "SELECT 1 /***/; DELETE FROM orders",
    "SELECT '\n'; DELETE FROM orders",
    "SELECT \"a\nb\" FROM (SELECT 1 AS \"a\nb\"); DELETE FROM orders",
    "WITH x AS (SELECT 1) SELECT 1 FROM x WHERE 1 IN (SELECT 1); UPDATE orders SET item = 'q'",
    "INSERT INTO orders (item) SELECT 'w' WHERE 0",
    "SELECT 1 UNION SELECT 2; DELETE FROM orders",
    "SELECT * FROM pragma_table_info('orders')",
    "SELECT sqlite_version(); DELETE FROM orders",
    "DETACH x",
    "BEGIN; DELETE FROM orders; COMMIT",
    "SAVEPOINT a; DELETE FROM orders; RELEASE a",
    "EXPLAIN QUERY PLAN DELETE FROM orders; DELETE FROM orders",
    "WITH x AS (SELECT 1) SELECT 1 -- \nDELETE FROM orders",
    "SELECT 1 FROM orders WHERE item = ?1 -- ?1 \n; DELETE FROM orders",
    "SELECT 1\u{2028}; DELETE FROM orders",
    "SELECT 1 AS \"\u{0}\"; DELETE FROM orders",
];

/// The judge itself tells a write from a read, whole and line by line: a judge that saw no
/// write would pass every trap.
#[test]
fn sqlite_tells_a_write_from_a_read() {
    for line_by_line in [false, true] {
        assert!(sqlite_writes("DELETE FROM orders", line_by_line));
        assert!(sqlite_writes("SELECT 1; DELETE FROM orders", line_by_line));
        assert!(!sqlite_writes("SELECT 1", line_by_line));
    }
    // Only run line by line do these texts write: whole, the first is a syntax error, the
    // second a string.
    for text in [
        "SELECT 1 -- x\nDELETE FROM orders",
        "SELECT '\nDELETE FROM orders\n'",
    ] {
        assert!(!sqlite_writes(text, false), "{text:?}");
        assert!(sqlite_writes(text, true), "{text:?}");
    }
    // Most traps do write (48 of 62 on the bundled SQLite): they test the scanner, not the
    // judge's blind spots.
    let writing = TRAPS.iter().filter(|t| sqlite_writes(t, false)).count();
    assert!(
        writing * 3 > TRAPS.len() * 2,
        "{writing} of {}",
        TRAPS.len()
    );
}

/// No trap that changes SQLite's database is called read-only, by `is_read_only_prepared`
/// (the text run whole) or `is_read_only` (run line by line, as `exec` does).
#[test]
fn no_trap_that_writes_in_sqlite_is_called_read_only() {
    let mut called_read_only = Vec::new();
    for trap in TRAPS {
        for (line_by_line, verdict) in [
            (false, d1_retry::is_read_only_prepared(trap)),
            (true, d1_retry::is_read_only(trap)),
        ] {
            if verdict && sqlite_writes(trap, line_by_line) {
                let how = if line_by_line { "exec" } else { "prepared" };
                called_read_only.push(format!("{how} {trap:?}"));
            }
        }
    }
    assert!(
        called_read_only.is_empty(),
        "writes called read-only:\n{}",
        called_read_only.join("\n")
    );
}
