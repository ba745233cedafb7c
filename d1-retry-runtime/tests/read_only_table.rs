//! The read-only scanner, case by case: what it must call a write, and the reads it keeps.
//!
//! `true` means read-only. Every `false` here that SQLite can prepare is a write for
//! SQLite too, or a statement D1 refuses or never retries; `read_only_sqlite.rs` checks the
//! verdicts against SQLite itself.

use d1_retry_runtime::is_read_only;

const READ: bool = true;
const WRITE: bool = false;

#[track_caller]
fn check(cases: &[(&str, bool)]) {
    let wrong: Vec<String> = cases
        .iter()
        .filter(|(sql, expected)| is_read_only(sql) != *expected)
        .map(|(sql, expected)| {
            let verdict = if *expected { "read-only" } else { "a write" };
            format!("  {sql:?} should be {verdict}")
        })
        .collect();
    assert!(wrong.is_empty(), "wrong verdicts:\n{}", wrong.join("\n"));
}

#[test]
fn plain_statements() {
    check(&[
        ("SELECT 1", READ),
        ("SELECT * FROM users WHERE id = ?1", READ),
        (
            "SELECT u.id, count(*) FROM users u JOIN posts p ON p.user_id = u.id GROUP BY u.id",
            READ,
        ),
        (
            "SELECT * FROM t WHERE x IN (SELECT y FROM u) ORDER BY 1 LIMIT ?",
            READ,
        ),
        ("VALUES (1, 'a'), (2, 'b')", READ),
        ("SELECT a,\n  b\nFROM t\nWHERE c = 1", READ),
        ("INSERT INTO t VALUES (1)", WRITE),
        ("INSERT OR IGNORE INTO t VALUES (1)", WRITE),
        ("REPLACE INTO t VALUES (1)", WRITE),
        ("INSERT OR REPLACE INTO t VALUES (1)", WRITE),
        ("UPDATE t SET a = 1", WRITE),
        ("DELETE FROM t", WRITE),
        ("CREATE TABLE t (a)", WRITE),
        ("CREATE TEMP TABLE t (a)", WRITE),
        ("CREATE INDEX IF NOT EXISTS i ON t (a)", WRITE),
        ("DROP TABLE IF EXISTS t", WRITE),
        ("ALTER TABLE t ADD COLUMN b", WRITE),
        ("VACUUM", WRITE),
        ("ANALYZE", WRITE),
        ("REINDEX", WRITE),
        ("ATTACH 'other.db' AS other", WRITE),
        ("DETACH other", WRITE),
    ]);
}

#[test]
fn statement_must_begin_as_a_read() {
    check(&[
        ("(SELECT 1)", WRITE),
        ("'SELECT 1'", WRITE),
        ("\"SELECT\" 1", WRITE),
        ("1", WRITE),
        ("t.SELECT 1", WRITE),
        (".SELECT 1", WRITE),
        ("SELECTED 1", WRITE),
        ("SELECT_1", WRITE),
        ("AS SELECT 1", WRITE),
        ("UPSERT", WRITE),
    ]);
}

#[test]
fn keyword_case_is_ignored() {
    check(&[
        ("select 1", READ),
        ("SeLeCt 1", READ),
        ("values (1)", READ),
        ("wItH x aS (sElEcT 1) sElEcT * fRoM x", READ),
        ("explain query plan select 1", READ),
        ("insert into t values (1)", WRITE),
        ("wItH x aS (sElEcT 1) dElEtE fRoM t", WRITE),
        ("with x as (select 1) Replace into t select * from x", WRITE),
        ("pragma user_version", WRITE),
        ("bEgIn iMmEdIaTe", WRITE),
    ]);
}

#[test]
fn comments() {
    check(&[
        ("-- DELETE FROM t\nSELECT 1", READ),
        ("SELECT 1 -- ; DROP TABLE t", READ),
        ("SELECT 1 --; DROP TABLE t\n", READ),
        ("/* DROP TABLE t; */ SELECT 1", READ),
        ("SELECT /* INSERT INTO t VALUES (1); */ 1", READ),
        ("SELECT 1 /* unterminated; DELETE FROM t", READ),
        ("SELECT 1 /*/ still a comment; DELETE FROM t */", READ),
        ("SELECT 1 /**/ FROM t", READ),
        ("SELECT 1 /* a */ /* b */ -- c", READ),
        // `/* */` does not nest: the first `*/` ends it.
        ("SELECT 1 /* /* */ ; DELETE FROM t */", WRITE),
        // A `--` comment ends at the line break; what follows is SQL again.
        ("SELECT 1 -- c\nDELETE FROM t", WRITE),
        ("SELECT 1 -- c\n; DELETE FROM t", WRITE),
        ("SELECT 1 /* c */ ; DELETE FROM t", WRITE),
        // An empty `--` comment ends at its line break too.
        ("SELECT 1 --\nDELETE FROM t", WRITE),
        ("SELECT 1 --\n;DELETE FROM t", WRITE),
        ("SELECT 1 /**/\nDELETE FROM t", WRITE),
        // `-` alone, `/` alone and `*/` outside a comment are operators.
        ("SELECT 2 - 1, 4 / 2 */ 1; DELETE FROM t", WRITE),
        ("SELECT 2 -1; DELETE FROM t", WRITE),
        ("SELECT 2 / *; DELETE FROM t", WRITE),
        ("SELECT 2 /", READ),
    ]);
}

#[test]
fn strings_and_quoted_names() {
    check(&[
        ("SELECT x FROM t WHERE name = 'DROP TABLE'", READ),
        ("SELECT 'it''s; DELETE FROM t'", READ),
        ("SELECT '' || ';DELETE FROM t;' FROM t", READ),
        ("SELECT x'00ff', X'AB' FROM t", READ),
        ("SELECT \"delete\" FROM t", READ),
        ("SELECT \"a\"\"; DELETE FROM t; --\" FROM t", READ),
        ("SELECT [update] FROM t", READ),
        ("SELECT [a]]; DELETE FROM t", WRITE),
        ("SELECT `drop` FROM t", READ),
        ("SELECT `a``; DROP TABLE t; --` FROM t", READ),
        ("SELECT \"t\".\"insert\" FROM \"t\"", READ),
        // Each quote ends where SQLite ends it, so what follows is SQL again.
        ("SELECT 'a'; DELETE FROM t", WRITE),
        ("SELECT 'a'''; DELETE FROM t", WRITE),
        ("SELECT \"a\"; DELETE FROM t", WRITE),
        ("SELECT `a`; DELETE FROM t", WRITE),
        ("SELECT [a]; DELETE FROM t", WRITE),
        ("SELECT 'a\"'; DELETE FROM t", WRITE),
        ("SELECT \"a'\"; DELETE FROM t", WRITE),
        ("SELECT [a'] ; DELETE FROM t", WRITE),
        // Unterminated: SQLite refuses the statement, so nothing after it runs.
        ("SELECT 'unterminated; DELETE FROM t", READ),
        ("SELECT [unterminated; DELETE FROM t", READ),
    ]);
}

#[test]
fn separators_and_whitespace() {
    check(&[
        ("  \t\r\n SELECT 1", READ),
        ("; SELECT 1", READ),
        (";;SELECT 1;;", READ),
        ("SELECT 1;", READ),
        ("SELECT 1 ; ; ", READ),
        ("\u{000B}\u{000C}SELECT 1", READ),
        ("SELECT\t1", READ),
        ("SELECT 1;SELECT 2", READ),
    ]);
}

/// D1's `exec()` trims its text as JavaScript does before it cuts it into lines, and
/// JavaScript's spaces include Unicode ones SQLite reads as letters: a text that ends in
/// `VACUUM\u{a0}` runs `VACUUM`. Found by a fuzzer against SQLite, these were read-only.
#[test]
fn unicode_spaces_at_the_ends_are_trimmed_as_exec_trims_them() {
    check(&[
        ("SELECT 1\nVACUUM\u{a0}", WRITE),
        ("SELECT 1\nVACUUM\u{3000}", WRITE),
        ("SELECT 1\nANALYZE\u{feff}", WRITE),
        ("SELECT 1\nREINDEX\u{2028}", WRITE),
        ("SELECT 1\nREINDEX\u{2029}", WRITE),
        ("SELECT 1\n  VACUUM\u{a0}\n", WRITE),
        ("SELECT 1 FROM t\n/* c */ VACUUM\u{2028}", WRITE),
        ("SELECT 1\r\n\u{feff}vacuum\u{feff}\n\u{202f}", WRITE),
        (
            "WITH x AS (SELECT 1) SELECT * FROM x\n\n\u{c}REINDEX\u{3000}\t",
            WRITE,
        ),
        ("EXPLAIN SELECT 1\n  ANALYZE\u{1680}", WRITE),
        ("SELECT\rt.a-- x\nVACUUM\u{a0}", WRITE),
        ("SELECT 1\nBEGIN\u{a0}", WRITE),
        ("SELECT 1\nCOMMIT\u{3000}", WRITE),
        ("\u{a0}\u{2000}VACUUM", WRITE),
        // Trimmed, the text is a read.
        ("\u{3000}SELECT 1\u{a0}", READ),
        ("SELECT 1\u{205f}", READ),
        ("\u{a0}", WRITE),
    ]);
}

#[test]
fn empty_input_is_not_read_only() {
    check(&[
        ("", WRITE),
        (" ", WRITE),
        ("\n\t", WRITE),
        (";", WRITE),
        (" ; ;; ", WRITE),
        ("-- only a comment", WRITE),
        ("/* only a comment */", WRITE),
        ("/* unterminated", WRITE),
        ("\u{FEFF}", WRITE),
    ]);
}

#[test]
fn ctes_that_write() {
    check(&[
        ("WITH t AS (SELECT 1) SELECT * FROM t", READ),
        (
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT n FROM c",
            READ,
        ),
        (
            "WITH a AS (SELECT 1), b AS MATERIALIZED (SELECT 2) VALUES (3)",
            READ,
        ),
        ("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", WRITE),
        (
            "WITH x AS (SELECT 1) INSERT OR REPLACE INTO t SELECT * FROM x",
            WRITE,
        ),
        ("WITH x AS (SELECT 1) REPLACE INTO t SELECT * FROM x", WRITE),
        (
            "WITH x AS (SELECT 1) UPDATE t SET a = (SELECT * FROM x)",
            WRITE,
        ),
        ("WITH x AS (SELECT 1) DELETE FROM t WHERE a IN x", WRITE),
        ("WITH x AS NOT MATERIALIZED (SELECT 1) DELETE FROM t", WRITE),
        ("WITH x AS (SELECT 1)DELETE FROM t", WRITE),
        // Only the words outside parentheses can be the statement the `WITH` leads to.
        ("WITH x(replace) AS (SELECT 1) SELECT * FROM x", READ),
        (
            "WITH x AS (SELECT replace, analyze FROM t) SELECT * FROM x",
            READ,
        ),
        ("WITH x AS (SELECT (1) AS pragma) SELECT * FROM x", READ),
        (
            "WITH a AS (SELECT 1), b AS (SELECT 2) SELECT replace FROM a, b",
            READ,
        ),
        ("WITH a AS (SELECT 1), b AS (SELECT 2) DELETE FROM t", WRITE),
        ("WITH a AS ((SELECT 1)) UPDATE t SET a = 1", WRITE),
        ("WITH x AS (SELECT 1) SELECT 1; DELETE FROM t", WRITE),
        ("WITH x AS (SELECT 1) VALUES (1); UPDATE t SET a = 1", WRITE),
        // A keyword where a name of the `WITH` clause goes is taken for a write.
        ("WITH replace AS (SELECT 1) SELECT * FROM replace", WRITE),
        ("WITH analyze AS (SELECT 1) SELECT * FROM analyze", WRITE),
        // Anything odd before the main statement: a write.
        ("WITH x AS (SELECT 1)) SELECT * FROM x", WRITE),
        ("WITH x AS (SELECT 1; DELETE FROM t", WRITE),
        ("WITH x AS (SELECT 1);", WRITE),
        ("WITH x AS (SELECT 1)", WRITE),
        ("WITH x AS (SELECT 1) WITH y AS (SELECT 2) SELECT 1", WRITE),
        ("WITH x AS (SELECT 1) EXPLAIN SELECT 1", WRITE),
        ("WITH", WRITE),
        ("WITH x AS (", WRITE),
        // Parentheses inside strings, names and comments do not count.
        ("WITH x AS (SELECT ')') DELETE FROM t", WRITE),
        ("WITH x AS (SELECT \"(\") DELETE FROM t", WRITE),
        ("WITH x AS (SELECT 1 /* ( */) DELETE FROM t", WRITE),
        ("WITH x AS (SELECT [)]) SELECT * FROM x", READ),
        // SQLite refuses these (no write is nested in a `WITH`'s parentheses): nothing runs.
        ("WITH x(update) AS (SELECT 1) SELECT * FROM x", READ),
        ("WITH x AS (DELETE FROM t) SELECT 1", READ),
    ]);
}

#[test]
fn explain() {
    check(&[
        ("EXPLAIN SELECT 1", READ),
        ("EXPLAIN QUERY PLAN SELECT * FROM t WHERE a = 1", READ),
        (
            "EXPLAIN QUERY PLAN WITH x AS (SELECT 1) SELECT * FROM x",
            READ,
        ),
        ("EXPLAIN VALUES (1)", READ),
        ("EXPLAIN WITH x AS (SELECT 1) SELECT * FROM x", READ),
        ("EXPLAIN INSERT INTO t VALUES (1)", WRITE),
        ("EXPLAIN QUERY PLAN DELETE FROM t", WRITE),
        (
            "EXPLAIN QUERY PLAN WITH x AS (SELECT 1) UPDATE t SET a = 1",
            WRITE,
        ),
        ("EXPLAIN PRAGMA user_version = 1", WRITE),
        ("EXPLAIN PRAGMA journal_mode", WRITE),
        ("EXPLAIN BEGIN IMMEDIATE", WRITE),
        ("EXPLAIN", WRITE),
        ("EXPLAIN QUERY", WRITE),
        ("EXPLAIN QUERY PLAN", WRITE),
        ("EXPLAIN;", WRITE),
        ("EXPLAIN QUERY PLAN; SELECT 1", WRITE),
        ("EXPLAIN PLAN SELECT 1", WRITE),
        ("EXPLAIN QUERY SELECT 1", WRITE),
        ("EXPLAIN QUERY PLAN QUERY PLAN SELECT 1", WRITE),
        ("EXPLAIN EXPLAIN SELECT 1", WRITE),
        ("SELECT 1; EXPLAIN", WRITE),
        ("SELECT EXPLAIN", READ),
    ]);
}

#[test]
fn returning() {
    check(&[
        ("INSERT INTO t (a) VALUES (1) RETURNING id", WRITE),
        ("UPDATE t SET a = 1 RETURNING *", WRITE),
        ("DELETE FROM t RETURNING a", WRITE),
        (
            "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x RETURNING rowid",
            WRITE,
        ),
        ("SELECT 1 AS returning", READ),
        ("SELECT 1;\nRETURNING", WRITE),
        ("SELECT 1,\nreturning FROM t", WRITE),
        // SQLite refuses it: nothing runs.
        ("SELECT 1 RETURNING", READ),
    ]);
}

#[test]
fn several_statements() {
    check(&[
        ("SELECT 1; SELECT 2", READ),
        (
            "SELECT 1; VALUES (2); WITH x AS (SELECT 3) SELECT * FROM x;",
            READ,
        ),
        ("SELECT 1; EXPLAIN SELECT 2", READ),
        ("SELECT 1; DELETE FROM t", WRITE),
        ("SELECT 1;DELETE FROM t", WRITE),
        ("DELETE FROM t; SELECT 1", WRITE),
        ("SELECT 1; SELECT 2; VACUUM", WRITE),
        ("SELECT 1;\nPRAGMA foreign_keys = ON", WRITE),
        ("SELECT 1; (SELECT 2)", WRITE),
        ("SELECT 1; 'x'", WRITE),
        (
            "CREATE TRIGGER g AFTER INSERT ON t BEGIN SELECT 1; END; SELECT 2",
            WRITE,
        ),
    ]);
}

#[test]
fn pragmas_and_transactions_are_writes() {
    check(&[
        ("PRAGMA user_version", WRITE),
        ("PRAGMA user_version = 1", WRITE),
        ("PRAGMA main.user_version(7)", WRITE),
        ("PRAGMA table_info(users)", WRITE),
        ("PRAGMA foreign_keys = ON", WRITE),
        ("PRAGMA journal_mode", WRITE),
        ("PRAGMA optimize", WRITE),
        ("BEGIN", WRITE),
        ("BEGIN DEFERRED TRANSACTION", WRITE),
        ("BEGIN IMMEDIATE", WRITE),
        ("BEGIN EXCLUSIVE", WRITE),
        ("COMMIT", WRITE),
        ("END TRANSACTION", WRITE),
        ("ROLLBACK", WRITE),
        ("ROLLBACK TO SAVEPOINT s", WRITE),
        ("SAVEPOINT s", WRITE),
        ("RELEASE s", WRITE),
        ("BEGIN; SELECT 1; COMMIT", WRITE),
        // Table-valued pragma functions are reads, like any SELECT.
        ("SELECT name FROM pragma_table_info('users')", READ),
    ]);
}

#[test]
fn keywords_used_as_names() {
    check(&[
        ("SELECT replace(a, 'x', 'y') FROM t", READ),
        ("SELECT REPLACE (a, 'x', 'y') FROM t", READ),
        ("SELECT replace/* call */(a, 'x', 'y') FROM t", READ),
        (
            "SELECT upper(replace(replace(a, 'x', 'y'), 'b', 'c')) FROM t",
            READ,
        ),
        ("SELECT 1 AS reindex", READ),
        ("SELECT name AS pragma, id AS \"delete\" FROM t", READ),
        ("SELECT 1 AS /* alias */ drop", READ),
        ("SELECT t.update FROM t", READ),
        ("SELECT t . delete FROM t", READ),
        ("SELECT t./* c */insert FROM t", READ),
        ("SELECT main.t.create, t.replace FROM t", READ),
        (
            "SELECT deleted_at, updated_at, created_at, drop1, _update FROM t",
            READ,
        ),
        (
            "SELECT * FROM t WHERE a = :delete OR b = @update OR c = $insert OR d = #drop",
            READ,
        ),
        ("SELECT $a::delete, :b::pragma", READ),
        ("SELECT ?1, ?2, ?", READ),
        ("SELECT 1 AS select_, 2 AS explain FROM t", READ),
        ("SELECT 1 AS x replace (1)", READ),
        // In the body of a `SELECT`, no word can write: keywords are names anywhere.
        ("SELECT replace FROM t", READ),
        ("SELECT replace", READ),
        ("SELECT replace;", READ),
        ("SELECT replace.x FROM t", READ),
        ("SELECT a reindex FROM t", READ),
        ("SELECT analyze FROM t", READ),
        ("SELECT pragma, analyze FROM t", READ),
        ("SELECT \"x\" AS a, replace FROM t", READ),
        ("SELECT * FROM t WHERE analyze AND NOT vacuum", READ),
        ("SELECT * FROM t ORDER BY replace, begin", READ),
        ("SELECT max(savepoint) FROM t GROUP BY release", READ),
        (
            "SELECT * FROM t AS attach JOIN u AS detach ON attach.a = detach.a",
            READ,
        ),
        ("VALUES (1) UNION SELECT reindex FROM t", READ),
        // ...up to the end of the statement: after `;`, a new one begins.
        ("SELECT (1) AS x; delete FROM t", WRITE),
        ("SELECT t.; DELETE FROM t", WRITE),
        ("SELECT 1 AS; DELETE FROM t", WRITE),
        ("SELECT replace; replace INTO t VALUES (1)", WRITE),
        ("SELECT analyze;analyze", WRITE),
        // SQLite refuses these (a keyword that is never a name): nothing runs.
        ("SELECT update", READ),
        ("SELECT 1 AS x, update FROM t", READ),
        ("SELECT t.x update FROM t", READ),
        ("SELECT 1 AS x delete FROM t", READ),
        ("SELECT 1 AS 'x' DELETE FROM t", READ),
        ("SELECT \"t\" DELETE FROM t", READ),
        ("SELECT t.(delete) FROM t", READ),
    ]);
}

#[test]
fn unicode_is_never_a_keyword() {
    check(&[
        ("SELECT ünïcödé FROM t", READ),
        ("SELECT délete, deletё FROM t", READ),
        ("SELECT ＤＥＬＥＴＥ FROM t", READ),
        ("SELECT 'ДРОП ТАБЛЕ', \"表\" FROM t", READ),
        ("SELECT 1 AS ünïcödé", READ),
        ("SELECT DELETEé FROM t", READ),
        ("SELECT éDELETE FROM t", READ),
        // Characters that share one or two bytes with a byte-order mark are letters.
        ("SELECT ＸDELETE FROM t", READ),
        ("SELECT ＿DELETE FROM t", READ),
        ("SELECT ﻠDELETE FROM t", READ),
        ("ＳＥＬＥＣＴ 1", WRITE),
        ("SELECTé 1", WRITE),
        ("éSELECT 1", WRITE),
        ("SELECT\u{00A0}1", WRITE),
        ("SELECT 1;\u{00A0}SELECT 2", WRITE),
        // A byte-order mark is skipped where a token starts, like a space...
        ("\u{FEFF}SELECT 1", READ),
        ("SELECT \u{FEFF}1", READ),
        ("WITH x AS (SELECT 1) \u{FEFF}DELETE FROM t", WRITE),
        ("SELECT 1;\u{FEFF}DELETE FROM t", WRITE),
        // ...and is part of the name inside a word.
        ("SELECT\u{FEFF} 1", WRITE),
        ("SELECT x\u{FEFF}DELETE FROM t", READ),
    ]);
}

/// D1's `exec()` runs each line of its text as a query of its own.
#[test]
fn every_line_must_be_read_only_by_itself() {
    check(&[
        ("SELECT 'a\nb'", WRITE),
        ("SELECT 'a\rb'", READ),
        ("SELECT \"a\nb\" FROM t", WRITE),
        ("SELECT `a\nb` FROM t", WRITE),
        ("SELECT [a\nb] FROM t", WRITE),
        ("SELECT 1 /*\nDELETE FROM t;\n*/", WRITE),
        ("SELECT 1 /* one line */\n/* another */", READ),
        ("SELECT 1\n-- DELETE FROM t;\n", READ),
        ("SELECT t.\nupdate FROM t", WRITE),
        ("SELECT 1 AS\ndrop", WRITE),
        ("SELECT 1 AS -- alias\n drop", WRITE),
        ("SELECT 1 AS\n\nx", READ),
        // The line that starts with `(` is refused alone, and `SELECT replace` reads.
        ("SELECT replace\n(a, 'x', 'y') FROM t", READ),
        ("SELECT replace -- call\n(a, 'x', 'y') FROM t", READ),
        ("SELECT replace /*\n*/ (a, 'x', 'y') FROM t", WRITE),
        ("SELECT replace(a,\n'x', 'y') FROM t", READ),
        ("SELECT 1\nFROM t\nWHERE a = 'x'\n;\nSELECT 2\n", READ),
    ]);
}

/// Text the scanner does not judge: SQLite would read it differently from other layers.
#[test]
fn nul_bytes_and_tcl_parameters_are_not_judged() {
    check(&[
        ("SELECT 1\0; DELETE FROM t", WRITE),
        ("SELECT '\0'", WRITE),
        ("\0", WRITE),
        ("SELECT 1 -- \0", WRITE),
        (
            "SELECT $a(') FROM t; DELETE FROM t; SELECT ') FROM t",
            WRITE,
        ),
        (
            "SELECT $a::(') FROM t; DELETE FROM t; SELECT ') FROM t",
            WRITE,
        ),
        ("SELECT :a::b(x) FROM t", WRITE),
        ("SELECT @a(1)", WRITE),
        ("SELECT #a(1)", WRITE),
        ("SELECT $a (1)", READ),
        ("SELECT $(1)", READ),
        ("SELECT $::(1)", READ),
        ("SELECT $a:(1)", READ),
    ]);
}

/// Every keyword of the rule, in every position that decides its meaning.
#[test]
fn every_write_keyword() {
    let keywords = [
        "INSERT",
        "UPDATE",
        "DELETE",
        "REPLACE",
        "CREATE",
        "DROP",
        "ALTER",
        "VACUUM",
        "ANALYZE",
        "REINDEX",
        "PRAGMA",
        "ATTACH",
        "DETACH",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "RETURNING",
    ];
    let mut cases: Vec<(String, bool)> = Vec::new();
    for keyword in keywords {
        let lower = keyword.to_ascii_lowercase();
        cases.extend([
            (format!("{keyword} x"), WRITE),
            (format!("SELECT 1; {lower} x"), WRITE),
            (format!("WITH x AS (SELECT 1) {keyword} x"), WRITE),
            (
                format!("WITH x AS (SELECT {lower} FROM t) {keyword} x"),
                WRITE,
            ),
            (format!("SELECT x {lower} FROM t"), READ),
            (format!("SELECT x,\n{lower} FROM t"), WRITE),
            (format!("SELECT x,\n  /* c */ {lower} FROM t"), WRITE),
            (format!("SELECT x FROM t\n-- c\n\t{keyword} x"), WRITE),
            (format!("SELECT t.\n{lower} FROM t"), WRITE),
            (format!("SELECT 1 AS\n{lower}"), WRITE),
            (format!("SELECT 1;\n{lower}"), WRITE),
            (format!("SELECT 1\n;{lower}"), WRITE),
            (format!("SELECT 1\n\u{FEFF}{lower}"), WRITE),
            (format!("WITH x AS (\n{lower}) SELECT 1"), WRITE),
            (format!("SELECT 1 AS {lower}"), READ),
            (format!("SELECT t.{keyword} FROM t"), READ),
            (
                format!("SELECT \"{keyword}\", '{keyword}', [{keyword}], `{keyword}` FROM t"),
                READ,
            ),
            (
                format!("SELECT {keyword}_at, {lower}1, x{lower} FROM t"),
                READ,
            ),
            (format!("SELECT 1 -- {keyword}"), READ),
        ]);
        // `EXPLAIN` of a write, or of a statement that takes something but a name.
        let explained = match keyword {
            "SAVEPOINT" | "RELEASE" | "DETACH" => READ,
            _ => WRITE,
        };
        cases.push((format!("EXPLAIN {keyword} x"), explained));
    }
    let cases: Vec<(&str, bool)> = cases
        .iter()
        .map(|(sql, verdict)| (sql.as_str(), *verdict))
        .collect();
    check(&cases);
}

/// `EXPLAIN` runs nothing: of the statements the scanner calls writes by policy, it keeps
/// those SQLite calls read-only (`read_only_sqlite.rs` asks SQLite about each form).
#[test]
fn explain_of_statements_sqlite_calls_read_only() {
    check(&[
        ("EXPLAIN BEGIN", READ),
        ("EXPLAIN BEGIN DEFERRED", READ),
        ("EXPLAIN BEGIN TRANSACTION", READ),
        ("EXPLAIN BEGIN DEFERRED TRANSACTION t1", READ),
        ("explain query plan begin", READ),
        ("EXPLAIN COMMIT", READ),
        ("EXPLAIN END TRANSACTION", READ),
        ("EXPLAIN COMMIT TRANSACTION \"t\"", READ),
        ("EXPLAIN ROLLBACK", READ),
        ("EXPLAIN ROLLBACK TO sp", READ),
        ("EXPLAIN ROLLBACK TRANSACTION TO SAVEPOINT sp", READ),
        ("EXPLAIN ROLLBACK TRANSACTION t1 TO sp", READ),
        ("EXPLAIN SAVEPOINT sp", READ),
        ("EXPLAIN SAVEPOINT 'sp'", READ),
        ("EXPLAIN RELEASE sp", READ),
        ("EXPLAIN RELEASE SAVEPOINT sp", READ),
        ("EXPLAIN ATTACH ':memory:' AS aux", READ),
        ("EXPLAIN ATTACH DATABASE ?1 AS aux", READ),
        ("EXPLAIN ATTACH :file AS \"aux\"", READ),
        ("EXPLAIN DETACH aux", READ),
        ("EXPLAIN DETACH DATABASE 'aux'", READ),
        ("EXPLAIN PRAGMA user_version", READ),
        ("EXPLAIN PRAGMA main.user_version", READ),
        ("EXPLAIN QUERY PLAN PRAGMA TABLE_LIST", READ),
        ("EXPLAIN PRAGMA foreign_keys;", READ),
        ("EXPLAIN PRAGMA schema_version; SELECT 1", READ),
        ("SELECT 1; EXPLAIN BEGIN; EXPLAIN COMMIT", READ),
        ("EXPLAIN PRAGMA user_version -- = 1", READ),
        // Not these forms: a write.
        ("EXPLAIN BEGIN IMMEDIATE", WRITE),
        ("EXPLAIN BEGIN EXCLUSIVE TRANSACTION", WRITE),
        ("EXPLAIN BEGIN DEFERRED DEFERRED", WRITE),
        ("EXPLAIN BEGIN TRANSACTION t1 t2", WRITE),
        ("EXPLAIN BEGIN TRANSACTION delete", WRITE),
        ("EXPLAIN COMMIT TO sp", WRITE),
        ("EXPLAIN ROLLBACK TO", WRITE),
        ("EXPLAIN ROLLBACK TO SAVEPOINT", WRITE),
        ("EXPLAIN ROLLBACK sp", WRITE),
        ("EXPLAIN SAVEPOINT", WRITE),
        ("EXPLAIN SAVEPOINT sp sp", WRITE),
        ("EXPLAIN SAVEPOINT begin", WRITE),
        ("EXPLAIN RELEASE", WRITE),
        ("EXPLAIN ATTACH 'a'", WRITE),
        ("EXPLAIN ATTACH 'a' AS", WRITE),
        ("EXPLAIN ATTACH 'a' || 'b' AS aux", WRITE),
        ("EXPLAIN ATTACH 'a' AS aux KEY 'k'", WRITE),
        ("EXPLAIN DETACH", WRITE),
        ("EXPLAIN DETACH aux aux", WRITE),
        ("EXPLAIN PRAGMA", WRITE),
        ("EXPLAIN PRAGMA user_version = 1", WRITE),
        ("EXPLAIN PRAGMA user_version(1)", WRITE),
        ("EXPLAIN PRAGMA main.user_version = 1", WRITE),
        ("EXPLAIN PRAGMA table_info(t)", WRITE),
        ("EXPLAIN PRAGMA journal_mode", WRITE),
        ("EXPLAIN PRAGMA wal_checkpoint", WRITE),
        ("EXPLAIN PRAGMA optimize", WRITE),
        ("EXPLAIN PRAGMA incremental_vacuum", WRITE),
        ("EXPLAIN PRAGMA user_version.journal_mode", WRITE),
        ("EXPLAIN PRAGMA main.", WRITE),
        ("EXPLAIN PRAGMA \"user_version\"", WRITE),
        ("EXPLAIN PRAGMA main.user_version.x", WRITE),
        ("EXPLAIN PRAGMA user_version; PRAGMA user_version", WRITE),
        ("EXPLAIN BEGIN; BEGIN", WRITE),
        ("EXPLAIN VACUUM", WRITE),
        ("EXPLAIN REINDEX", WRITE),
        ("EXPLAIN ANALYZE", WRITE),
        // On its own, the statement stays a write.
        ("BEGIN", WRITE),
        ("PRAGMA user_version", WRITE),
        ("ATTACH ':memory:' AS aux", WRITE),
    ]);
}

/// D1's `exec()` runs each line on its own: the first word of a line starts a statement.
#[test]
fn a_line_starts_a_statement() {
    check(&[
        ("SELECT a,\n  b\nFROM t\nWHERE c = 1", READ),
        ("SELECT 1;\nDELETE FROM t", WRITE),
        ("SELECT 1\nDELETE FROM t", WRITE),
        ("SELECT a,\nreplace FROM t", WRITE),
        ("SELECT a,\n  replace(b, 'x', 'y') FROM t", READ),
        ("SELECT a,\n  replace /* c */ (b, 'x', 'y') FROM t", READ),
        ("SELECT a,\n  replace\n(b, 'x', 'y') FROM t", WRITE),
        ("SELECT a,\n  analyze\nFROM t", WRITE),
        ("SELECT a\n  /* c */ pragma FROM t", WRITE),
        ("SELECT a -- c\nbegin FROM t", WRITE),
        ("SELECT CASE WHEN a THEN 1\nEND FROM t", READ),
        ("SELECT a\nFROM t\nWHERE b IN (\n  SELECT c FROM u\n)", READ),
        ("SELECT a\r\nFROM t\r\n", READ),
        // A line that begins with `WITH` or `EXPLAIN` is judged on its own, to its end.
        (
            "SELECT * FROM (\n  WITH x AS (SELECT 1)\n  SELECT * FROM x\n)",
            READ,
        ),
        (
            "SELECT * FROM (\nWITH x AS (SELECT 1) SELECT * FROM x)",
            READ,
        ),
        (
            "SELECT * FROM t,\nWITH x AS (SELECT 1) DELETE FROM t",
            WRITE,
        ),
        ("SELECT a AS\nexplain", READ),
        ("SELECT a AS\nexplain DELETE FROM t", WRITE),
        ("SELECT a AS\nexplain SELECT 1", READ),
        ("SELECT a FROM t WHERE b IN (SELECT 1)\nEXPLAIN BEGIN", READ),
        (
            "SELECT a FROM t WHERE b IN (SELECT 1)\nEXPLAIN BEGIN IMMEDIATE",
            WRITE,
        ),
        ("SELECT a AS\nwith", READ),
        (
            "SELECT 1\n  with x AS (SELECT 1) select 2; insert INTO t VALUES (1)",
            WRITE,
        ),
        (
            "WITH a AS (\n  WITH b AS (SELECT 1) SELECT * FROM b\n) SELECT * FROM a",
            READ,
        ),
        (
            "WITH a AS (\n  WITH b AS (SELECT 1) SELECT * FROM b\n) DELETE FROM t",
            WRITE,
        ),
        (
            "WITH a AS (\n  WITH b AS (SELECT 1) DELETE FROM t\n) SELECT 1",
            WRITE,
        ),
        ("WITH a AS (\n  SELECT 1\n)\nSELECT * FROM a", READ),
        ("WITH a AS (\n  SELECT 1\n)\nDELETE FROM t", WRITE),
        (
            "WITH a AS (\n  SELECT 1\n)\n-- c\nUPDATE t SET a = 1",
            WRITE,
        ),
        (
            "WITH a AS (SELECT 1\nUNION\nSELECT 2)\nSELECT * FROM a",
            READ,
        ),
        // After `EXPLAIN`, the explained statement may begin on the next line...
        ("EXPLAIN\nSELECT 1", READ),
        ("EXPLAIN QUERY PLAN\n  SELECT 1", READ),
        ("EXPLAIN\nWITH x AS (SELECT 1) SELECT * FROM x", READ),
        ("EXPLAIN PRAGMA\nuser_version", READ),
        // ...but a write keyword there runs alone under exec().
        ("EXPLAIN\nDELETE FROM t", WRITE),
        ("EXPLAIN\nBEGIN", WRITE),
        ("EXPLAIN\nPRAGMA user_version", WRITE),
        ("EXPLAIN BEGIN\nIMMEDIATE", WRITE),
        ("EXPLAIN SAVEPOINT\nrelease", WRITE),
        ("EXPLAIN\nWITH x AS (SELECT 1) DELETE FROM t", WRITE),
        ("EXPLAIN\nWITH x AS (SELECT 1)\nDELETE FROM t", WRITE),
    ]);
}

/// Forms that only a careless reading of the rules above would accept (from `cargo
/// mutants`): each is a write, or SQLite refuses it.
#[test]
fn near_misses() {
    check(&[
        // Only `PLAN` follows `EXPLAIN QUERY`.
        ("EXPLAIN QUERY x SELECT 1", WRITE),
        // Only `TO` follows `ROLLBACK TRANSACTION name`.
        ("EXPLAIN ROLLBACK TRANSACTION t1 x sp", WRITE),
        ("EXPLAIN ROLLBACK TRANSACTION +", WRITE),
        // `TO` follows `ROLLBACK`, not `COMMIT`.
        ("EXPLAIN COMMIT TRANSACTION TO sp", WRITE),
        // `ATTACH file AS name`, with a file and a name.
        ("EXPLAIN ATTACH 'a' x aux", WRITE),
        ("EXPLAIN ATTACH 'a' AS +", WRITE),
        ("EXPLAIN DETACH -", WRITE),
        ("EXPLAIN DETACH DATABASE -", WRITE),
        // `PRAGMA [schema.]name`, with words.
        ("EXPLAIN PRAGMA ..user_version", WRITE),
        ("EXPLAIN PRAGMA main - user_version", WRITE),
        // A `;` inside a `WITH`'s parentheses.
        ("WITH x AS (SELECT 1; SELECT 2", WRITE),
        ("WITH x AS (SELECT 1\n; SELECT 2", WRITE),
        // Parentheses after a comment at a line's start still count.
        ("WITH a AS (SELECT 1\n/* c */ ) SELECT * FROM a", READ),
        ("WITH a AS (SELECT 1\n/* c */ ) DELETE FROM t", WRITE),
        ("WITH a AS (SELECT (1\n/* c */ )) SELECT * FROM a", READ),
        ("WITH a AS (SELECT 1\n/* c */ ( 2) SELECT * FROM a", WRITE),
        // What cannot be judged at a line's start is a write, there too.
        ("SELECT 1,\n'a\nb'", WRITE),
        ("SELECT 1,\n/* c */ 'a\nb'", WRITE),
        // A line judged on its own ends at its line break: a `WITH` or `EXPLAIN` line that
        // stops early is refused by SQLite, whatever the next lines hold.
        ("SELECT 1 AS\nexplain\nFROM t", READ),
        ("SELECT * FROM (\nWITH a AS (SELECT 1\n)) AS x", READ),
        ("SELECT 1 AS\nEXPLAIN PRAGMA journal_mode", WRITE),
        ("SELECT 1 AS\nEXPLAIN PRAGMA incremental_vacuum\n, 2", WRITE),
        ("SELECT 1 AS\nEXPLAIN PRAGMA user_version\n, 2", READ),
    ]);
}

#[test]
fn works_in_const_context() {
    // Both verdicts are computed by the compiler, while this file compiles.
    const SELECT_IS_READ_ONLY: bool = is_read_only("SELECT 1");
    const CTE_DELETE_IS_READ_ONLY: bool = is_read_only("WITH x AS (SELECT 1) DELETE FROM t");
    assert_eq!(
        [SELECT_IS_READ_ONLY, CTE_DELETE_IS_READ_ONLY],
        [true, false]
    );
}

/// Linear time: a long input is judged in one pass, not one pass per token.
#[test]
fn long_input_is_judged() {
    let mut sql = String::from("SELECT 1");
    for _ in 0..50_000 {
        sql.push_str(" + replace(a, 'x', 'y') /* c */");
    }
    assert!(is_read_only(&sql));
    sql.push_str("; DELETE FROM t");
    assert!(!is_read_only(&sql));
}
