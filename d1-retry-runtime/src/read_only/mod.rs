//! Whether SQL is read-only: the scanner behind [`is_read_only`].
//!
//! It reads SQL the way SQLite's tokenizer does ([`lexer`]), gives bare words their meaning
//! ([`keyword`]), and here walks the statements. It must never call read-only a statement
//! that SQLite's `sqlite3_stmt_readonly()` calls a write; within that, it keeps as many reads
//! as it can show are reads.
//!
//! # Why line breaks matter
//!
//! D1's `exec()` does not hand its text to SQLite whole: it cuts it at every `\n` and runs
//! each line as a query of its own. So a verdict must also hold for every line on its own:
//!
//! - a string, quoted name or `/* */` comment that runs over several lines is not judged
//!   read-only, since its inner lines would run as SQL (`/*\nDELETE FROM t;\n*/`);
//! - the context that makes a keyword a name (`t.`, `AS`, `replace(`) counts only on the
//!   keyword's own line, so that every line that could start a write contains its keyword
//!   where it is a keyword.
//!
//! Multi-line SQL without such tokens keeps its verdict: splitting it into lines only
//! shows the scanner the same tokens.

mod keyword;
mod lexer;

use self::keyword::Role;
use self::lexer::{Kind, next_token};

/// Where the scanner is in the current statement.
#[derive(Clone, Copy)]
enum Expect {
    /// Before a statement's first token.
    Statement,
    /// After `EXPLAIN`: `QUERY PLAN` or the explained statement.
    Explained,
    /// After `EXPLAIN QUERY`: `PLAN`.
    Plan,
    /// After `EXPLAIN QUERY PLAN`: the explained statement.
    PlannedStatement,
    /// Inside a statement that began as a read.
    Body,
}

/// Whether `sql` is read-only: re-running it cannot change the database.
///
/// This is D1's own rule for the queries it retries, made exact where SQLite is exact:
///
/// - Every statement must begin with `SELECT`, `VALUES` or `WITH`, or be `EXPLAIN` or
///   `EXPLAIN QUERY PLAN` of such a statement. Text holding several statements is read-only
///   only if every one is; empty statements (`;;`) are skipped.
/// - No statement may contain, as a keyword, `INSERT`, `UPDATE`, `DELETE`, `REPLACE`,
///   `CREATE`, `DROP`, `ALTER`, `VACUUM`, `ANALYZE`, `REINDEX`, `PRAGMA`, `ATTACH`, `DETACH`,
///   `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `RELEASE` or `RETURNING`. This is what
///   catches `WITH ... INSERT` and `EXPLAIN DELETE`.
/// - A word is a keyword only where SQLite would read one: not inside a string, a quoted
///   name (`"delete"`, `[update]`, `` `drop` ``) or a comment (`--` to the line's end,
///   `/* */` without nesting, to the end of the input if unterminated); not as part of a
///   longer name (`deleted_at`, `délete`, full-width letters); ASCII case ignored.
/// - A write keyword is a name where no statement can use it as a keyword: after `.`
///   (`t.update`), after `AS` (`SELECT 1 AS reindex`), and `replace` followed by `(` is the
///   string function. These hold only on the same line as the keyword (see below).
///
/// Some statements are called writes although SQLite calls them read-only, because D1
/// either refuses them or does not retry them itself, and a lost retry is cheap while a
/// repeated write is not:
///
/// - every `PRAGMA`: whether one writes depends on its name, its argument and the SQLite
///   version (`journal_mode` writes even when only read);
/// - `BEGIN`, `COMMIT`, `END`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`, `ATTACH`, `DETACH`;
/// - empty input, or input holding only comments and `;`: it runs nothing, and a caller
///   that could not find its SQL should not be told it only reads;
/// - a NUL byte anywhere (SQLite stops reading there, and would not see what follows);
/// - a string, quoted name or block comment that runs over more than one line, a keyword
///   made a name by a `.` or `AS` at the end of the previous line, and `replace` with its
///   `(` on the next line: D1's `exec()` runs each line of its input on its own, so every
///   line must be read-only by itself.
///
/// The function is linear in the length of `sql`, allocates nothing and never panics.
///
/// ```
/// use d1_retry_runtime::is_read_only;
///
/// assert!(is_read_only("SELECT * FROM users WHERE id = ?1"));
/// assert!(is_read_only("WITH recent AS (SELECT * FROM posts) SELECT title FROM recent"));
/// assert!(is_read_only("SELECT replace(name, 'DROP', '') AS \"delete\" FROM t -- UPDATE"));
/// assert!(!is_read_only("INSERT INTO users (name) VALUES (?1)"));
/// assert!(!is_read_only("WITH x AS (SELECT 1) DELETE FROM t"));
/// assert!(!is_read_only("SELECT 1; DROP TABLE t"));
///
/// // Judged by the compiler when the SQL is a constant.
/// const LIST_USERS: bool = is_read_only("SELECT id, name FROM users");
/// assert!(LIST_USERS);
/// ```
#[must_use]
pub const fn is_read_only(sql: &str) -> bool {
    let sql = sql.as_bytes();
    let mut expect = Expect::Statement;
    let mut any_statement = false;
    // The previous token, on this same line, was `.` or `AS`: this word is a name.
    let mut name_expected = false;
    let mut at = 0;
    while at < sql.len() {
        let start = at;
        let token = next_token(sql, at);
        at = token.end;
        match token.kind {
            Kind::Space => {
                if token.has_line_break {
                    name_expected = false;
                }
                continue;
            }
            Kind::Unjudged => return false,
            _ if token.has_line_break => return false,
            Kind::Comment => continue,
            _ => {}
        }
        let role = match token.kind {
            Kind::Word => keyword::role(sql, start, at),
            _ => Role::Other,
        };
        expect = match (expect, token.kind, role) {
            (Expect::Statement | Expect::Body, Kind::Semicolon, _) => Expect::Statement,
            (Expect::Body, _, Role::Write) if !name_expected => return false,
            (Expect::Body, _, Role::Replace) if !name_expected && !opens_call(sql, at) => {
                return false;
            }
            (Expect::Body, _, _) => Expect::Body,
            (
                Expect::Statement | Expect::Explained | Expect::PlannedStatement,
                _,
                Role::ReadStart,
            ) => {
                any_statement = true;
                Expect::Body
            }
            (Expect::Statement, _, Role::Explain) => Expect::Explained,
            (Expect::Explained, _, Role::Query) => Expect::Plan,
            (Expect::Plan, _, Role::Plan) => Expect::PlannedStatement,
            _ => return false,
        };
        name_expected = matches!(token.kind, Kind::Dot) || matches!(role, Role::As);
    }
    any_statement && matches!(expect, Expect::Statement | Expect::Body)
}

/// Whether the next token on the same line is `(`. `replace(` is the string function:
/// `REPLACE INTO` and `INSERT OR REPLACE` are never followed by `(`.
const fn opens_call(sql: &[u8], mut at: usize) -> bool {
    // No bound check needed: at the end of the input the lexer reads SQLite's terminating
    // NUL, a token that is neither space nor comment, which ends the loop.
    loop {
        let token = next_token(sql, at);
        match token.kind {
            _ if token.has_line_break => return false,
            Kind::Space | Kind::Comment => at = token.end,
            kind => return matches!(kind, Kind::OpenParen),
        }
    }
}
