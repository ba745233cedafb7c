//! Whether SQL is read-only: the scanner behind [`is_read_only`].
//!
//! It reads SQL the way SQLite's tokenizer does ([`lexer`]), gives the few words that matter
//! their meaning ([`keyword`](mod@keyword)), and here walks the statements. It must never
//! call read-only a statement that SQLite's `sqlite3_stmt_readonly()` calls a write; within
//! that, it keeps as many reads as it can show are reads.
//!
//! # Where a word can matter
//!
//! Whether a statement writes is decided by its kind, that is by its first words: a
//! `SELECT` or `VALUES` statement never writes, whatever it holds, since no statement that
//! writes can be nested in one (SQLite has no writing subqueries or common table
//! expressions). So once a statement has begun as a read, the scanner no longer looks at
//! its words: it skips its body in one pass ([`lexer::skip`]) until a `;` ends it, or a new
//! line begins with a word that matters (below). Keywords are therefore names anywhere in
//! a read's body, as SQLite allows (`SELECT replace, analyze FROM t`).
//!
//! A `WITH` is the exception: after its common table expressions comes the statement it
//! leads to, `SELECT` or a write, at parenthesis depth 0; so there the words at depth 0 are
//! looked at until `SELECT` or `VALUES` shows that the statement is a read. Inside the
//! parentheses only a `SELECT` can stand, so they are skipped like a read's body.
//!
//! After `EXPLAIN`, the explained statement decides, as it does for SQLite
//! (`sqlite3_stmt_readonly()` of `EXPLAIN X` is that of `X`); besides reads, a few
//! statements SQLite calls read-only are accepted there in exact forms (see
//! [`is_read_only`]), since `EXPLAIN` of them runs nothing.
//!
//! # Why line breaks matter
//!
//! D1's `exec()` does not hand its text to SQLite whole: it cuts it at every `\n` and runs
//! each line as a query of its own. So a verdict must also hold for every line on its own:
//!
//! - a string, quoted name or `/* */` comment that runs over several lines is not judged
//!   read-only, since its inner lines would run as SQL (`/*\nDELETE FROM t;\n*/`);
//! - the first word of every line is where a statement starts for `exec()`: a write keyword
//!   there is a write, whatever the line before says (`t.\nupdate`, `AS\nreindex`), and a
//!   line that starts with `WITH` or `EXPLAIN` must be read-only on its own, up to its end.
//!
//! Multi-line SQL without such tokens or lines keeps its verdict: splitting it into lines
//! only shows the scanner the same tokens.
//!
//! A prepared statement is never cut: D1 sends its text to SQLite whole. So the scanner
//! runs in one of two modes, `by_line` ([`is_read_only`], for text that may reach `exec()`)
//! or whole ([`is_read_only_prepared`]), where a line break is a space and none of the
//! rules above applies. Every other rule is the same code, so whatever the first mode
//! keeps, the second keeps too.

mod keyword;
mod lexer;
mod trim;

use self::keyword::{Keyword, is_read_pragma, keyword};
use self::lexer::{Event, Kind, next_token, skip};

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
    /// In a `SELECT` or `VALUES` statement: only a `;` or a new line can change anything.
    Body,
    /// In a `WITH`, before the statement it leads to (parenthesis depth aside).
    With,
    // The statements below are read-only to SQLite and called writes on their own, but
    // `EXPLAIN` of them runs nothing and is read-only to SQLite too.
    /// After `EXPLAIN BEGIN`: `DEFERRED`, `TRANSACTION` or the end.
    Begin,
    /// After `BEGIN DEFERRED`, `COMMIT`, `END` or `ROLLBACK`: `TRANSACTION`, `TO` (after
    /// `ROLLBACK`) or the end.
    TransactionWord { rollback: bool },
    /// After `... TRANSACTION`: its name, `TO` (after `ROLLBACK`) or the end.
    TransactionName { rollback: bool },
    /// After `ROLLBACK TRANSACTION name`: `TO` or the end.
    RollbackTo,
    /// After `RELEASE` or `ROLLBACK ... TO`: `SAVEPOINT` or the savepoint's name.
    SavepointWord,
    /// After `SAVEPOINT`: the savepoint's name.
    SavepointName,
    /// After `ATTACH` or `DETACH`: `DATABASE` or the database.
    DatabaseWord { attach: bool },
    /// After `ATTACH DATABASE` or `DETACH DATABASE`: the database.
    Database { attach: bool },
    /// After `ATTACH file`: `AS`.
    AttachAs,
    /// After `ATTACH file AS`: the schema name.
    AttachName,
    /// After `PRAGMA`: the pragma's name, or its schema.
    PragmaName,
    /// After `PRAGMA word`: `.`, or the end if `word` is a read pragma.
    PragmaDot { read: bool },
    /// After `PRAGMA schema.`: the pragma's name.
    SchemaPragmaName,
    /// A complete statement: only its end may follow.
    Done,
}

impl Expect {
    /// Whether the statement can end here, at a `;` or at the end of the input, as a read.
    const fn may_end(self) -> bool {
        matches!(
            self,
            Expect::Statement
                | Expect::Body
                | Expect::Begin
                | Expect::TransactionWord { .. }
                | Expect::TransactionName { .. }
                | Expect::RollbackTo
                | Expect::PragmaDot { read: true }
                | Expect::Done
        )
    }

    /// Whether the statement is not complete yet: SQLite refuses a statement that stops
    /// here. (`PRAGMA name` is complete, `PRAGMA` is not.)
    const fn incomplete(self) -> bool {
        matches!(
            self,
            Expect::Explained
                | Expect::Plan
                | Expect::PlannedStatement
                | Expect::With
                | Expect::SavepointWord
                | Expect::SavepointName
                | Expect::DatabaseWord { .. }
                | Expect::Database { .. }
                | Expect::AttachAs
                | Expect::AttachName
                | Expect::PragmaName
                | Expect::SchemaPragmaName
        )
    }
}

/// Whether `sql` is read-only: re-running it cannot change the database.
///
/// This is D1's own rule for the queries it retries, made exact where SQLite is exact:
///
/// - Every statement must begin with `SELECT`, `VALUES` or `WITH`, or be `EXPLAIN` or
///   `EXPLAIN QUERY PLAN` of such a statement or of one of the statements listed below.
///   Text holding several statements is read-only only if every one is; empty statements
///   (`;;`) are skipped.
/// - A statement that begins with `SELECT` or `VALUES` is a read to its end (the next `;`):
///   none of its words is looked at, so keywords may be names anywhere in it
///   (`SELECT replace, pragma FROM t`, `SELECT a update FROM t`), except at a line's start
///   (below).
/// - In a statement that begins with `WITH`, every word outside parentheses before its
///   `SELECT` or `VALUES` must be a name or a keyword of the `WITH` clause: `INSERT`,
///   `UPDATE`, `DELETE`, `REPLACE`, `CREATE`, `DROP`, `ALTER`, `VACUUM`, `ANALYZE`,
///   `REINDEX`, `PRAGMA`, `ATTACH`, `DETACH`, `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`,
///   `RELEASE`, `RETURNING`, `WITH` or `EXPLAIN` there is a write (this is what catches
///   `WITH ... DELETE`); a `)` without its `(` or a `;` before the `SELECT` is a write too.
/// - `EXPLAIN` runs nothing, but SQLite calls it a write when the statement it explains
///   writes. Besides reads, it may explain only these statements, in exactly these forms,
///   which SQLite calls read-only: `BEGIN [DEFERRED] [TRANSACTION [name]]`,
///   `COMMIT` or `END [TRANSACTION [name]]`,
///   `ROLLBACK [TRANSACTION [name]] [TO [SAVEPOINT] name]`, `SAVEPOINT name`,
///   `RELEASE [SAVEPOINT] name`, `ATTACH [DATABASE] file AS name`,
///   `DETACH [DATABASE] name`, and `PRAGMA [schema.]name` without a value or an argument,
///   where `name` is one of a short list of pragmas that only read (`user_version`,
///   `table_list`, `foreign_keys`, ...; not `journal_mode`, which writes even when read).
///   Names there are bare words that are not keywords of this list, or quoted; files are
///   names, strings or parameters.
/// - A word is a keyword only where SQLite would read one: not inside a string, a quoted
///   name (`"delete"`, `[update]`, `` `drop` ``) or a comment (`--` to the line's end,
///   `/* */` without nesting, to the end of the input if unterminated); not as part of a
///   longer name (`deleted_at`, `délete`, full-width letters); ASCII case ignored.
///
/// Some statements are called writes although SQLite calls them read-only, because D1
/// either refuses them or does not retry them itself, and a lost retry is cheap while a
/// repeated write is not:
///
/// - every `PRAGMA` (but `EXPLAIN` of the read pragmas above): whether one writes depends
///   on its name, its argument and the SQLite version (`journal_mode` writes even when only
///   read);
/// - `BEGIN`, `COMMIT`, `END`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`, `ATTACH`, `DETACH`
///   (but `EXPLAIN` of them, as above);
/// - empty input, or input holding only comments and `;`: it runs nothing, and a caller
///   that could not find its SQL should not be told it only reads;
/// - a NUL byte anywhere (SQLite stops reading there, and would not see what follows), and
///   a Tcl-style parameter (`$name(...)`, `:name(...)`; inside a statement's body, also a
///   `$` inside a longer name followed by `(`, as in `a$b(`);
/// - because D1's `exec()` trims its text as JavaScript does before it cuts it into lines,
///   the text is judged without JavaScript's white space at its two ends, Unicode spaces
///   included, which SQLite would read as letters of a name: `SELECT 1\nVACUUM\u{a0}` runs
///   `VACUUM`, a write ([`is_read_only_prepared`] judges the same trimmed text);
/// - because D1's `exec()` runs each line of its input on its own, so that every line must
///   be read-only by itself ([`is_read_only_prepared`], for a prepared statement, which is
///   sent whole, drops these): a string, quoted name or block comment that runs over more
///   than one line; a line whose first word (after spaces and comments) is one of the
///   write keywords above, whatever came before it (`SELECT t.\nupdate FROM t`,
///   `SELECT 1 AS\nreindex`), save `replace` followed by `(` on the same line, which is the
///   string function; and a line that begins with `WITH` or `EXPLAIN` and is not, on its
///   own up to its end, read-only by these rules (a line that stops before its statement
///   is complete is fine: SQLite refuses it).
///
/// Statements SQLite refuses to prepare run nothing, so their verdict does not matter;
/// the scanner may call them either.
///
/// The function is linear in the length of `sql`, allocates nothing and never panics.
///
/// ```
/// use d1_retry_runtime::is_read_only;
///
/// assert!(is_read_only("SELECT * FROM users WHERE id = ?1"));
/// assert!(is_read_only("WITH recent AS (SELECT * FROM posts) SELECT title FROM recent"));
/// assert!(is_read_only("SELECT replace(name, 'DROP', '') AS \"delete\" FROM t -- UPDATE"));
/// assert!(is_read_only("SELECT replace, pragma FROM t"));
/// assert!(is_read_only("EXPLAIN PRAGMA user_version"));
/// assert!(!is_read_only("INSERT INTO users (name) VALUES (?1)"));
/// assert!(!is_read_only("WITH x AS (SELECT 1) DELETE FROM t"));
/// assert!(!is_read_only("SELECT 1; DROP TABLE t"));
/// assert!(!is_read_only("SELECT 1,\nreplace FROM t"));
/// assert!(!is_read_only("EXPLAIN DELETE FROM t"));
///
/// // Judged by the compiler when the SQL is a constant.
/// const LIST_USERS: bool = is_read_only("SELECT id, name FROM users");
/// assert!(LIST_USERS);
/// ```
#[must_use]
pub const fn is_read_only(sql: &str) -> bool {
    scan(trim::trimmed(sql.as_bytes()), 0, false, true)
}

/// Whether `sql`, prepared as one statement (D1's `prepare`, then `first`, `all`, `run`,
/// `raw` or `batch`), is read-only: re-running it cannot change the database.
///
/// D1 hands a prepared statement's text to SQLite whole, where [`is_read_only`]'s text may
/// be given to `exec()`, which runs each line as a query of its own. So this verdict is
/// [`is_read_only`]'s without its line rules: a line break is a space, as it is to SQLite,
/// and a string, quoted name or `/* */` comment may run over several lines. Every other
/// rule is the same, and whatever [`is_read_only`] calls read-only, this does too, save a
/// known shape it calls a write: a line whose first word holds a `$` followed by `(`
/// (`SELECT 1\nx$a(y)`), which [`is_read_only`] reads as one name at the line's start and
/// this, inside a statement's body, as a Tcl-style parameter.
///
/// Use it for SQL handed to `prepare`, never for SQL handed to `exec`. `#[d1_retry]` and
/// `D1Retry` do so.
///
/// ```
/// use d1_retry_runtime::{is_read_only, is_read_only_prepared};
///
/// let commented = "SELECT id FROM users /* active\n   ones only */ WHERE active";
/// assert!(is_read_only_prepared(commented));
/// // `exec()` would run `   ones only */ WHERE active` as a query of its own.
/// assert!(!is_read_only(commented));
/// assert!(is_read_only_prepared("SELECT id,\n  replace FROM t"));
/// assert!(!is_read_only_prepared("SELECT 1;\nDELETE FROM t"));
/// assert!(!is_read_only_prepared("INSERT INTO t VALUES ('a\nb')"));
/// // A read of exec text it does not keep (above).
/// assert!(is_read_only("SELECT 1\nx$a(y)") && !is_read_only_prepared("SELECT 1\nx$a(y)"));
/// ```
#[must_use]
pub const fn is_read_only_prepared(sql: &str) -> bool {
    scan(trim::trimmed(sql.as_bytes()), 0, false, false)
}

/// Scans `sql` from `start`. With `one_line`, only up to the first line break, where the
/// last statement may also stop before it is complete: SQLite refuses such a line. With
/// `by_line`, the text may be run line by line (by `exec()`), so every line must be
/// read-only by itself; without it, it is sent to SQLite whole.
const fn scan(sql: &[u8], start: usize, one_line: bool, by_line: bool) -> bool {
    let mut expect = Expect::Statement;
    // Parentheses open in a `WITH` before its main statement.
    let mut depth = 0;
    // The next token is the first of its line (only lines run on their own count; the
    // first token of the text is judged as a statement's start anyway).
    let mut line_start = by_line;
    let mut any_statement = false;
    let mut at = start;
    loop {
        let skips = match expect {
            Expect::Body => true,
            Expect::With => depth > 0,
            _ => false,
        };
        if skips && !line_start {
            let stop = skip(sql, at, depth, one_line, by_line);
            at = stop.at;
            depth = stop.depth;
            match stop.event {
                Event::End => break,
                Event::Unjudged => return false,
                Event::NewLine if one_line => return expect.may_end() || expect.incomplete(),
                Event::NewLine => line_start = true,
                Event::Semicolon if matches!(expect, Expect::With) => return false,
                Event::Semicolon => expect = Expect::Statement,
                Event::Closed => {}
            }
            continue;
        }
        if at >= sql.len() {
            break;
        }
        let token_start = at;
        let token = next_token(sql, at, by_line);
        at = token.end;
        let word = match token.kind {
            Kind::Space | Kind::Comment => continue,
            // Sent whole, the text is one input to SQLite, for which `\n` is a space.
            Kind::LineBreak if !by_line => continue,
            Kind::LineBreak if one_line => return expect.may_end() || expect.incomplete(),
            Kind::LineBreak => {
                line_start = true;
                continue;
            }
            Kind::Unjudged => return false,
            Kind::Word => keyword(sql, token_start, at),
            _ => Keyword::None,
        };
        let is_word = matches!(token.kind, Kind::Word);
        if line_start && is_word {
            if word.writes() || (matches!(word, Keyword::Replace) && !opens_call(sql, at)) {
                return false;
            }
            // Elsewhere the statement is judged from here on anyway.
            if matches!(word, Keyword::With | Keyword::Explain)
                && matches!(expect, Expect::Body | Expect::With)
                && !scan(sql, token_start, true, true)
            {
                return false;
            }
        }
        line_start = false;
        let semicolon = matches!(token.kind, Kind::Semicolon);
        let name = matches!(token.kind, Kind::Quoted) || (is_word && matches!(word, Keyword::None));
        let file = name || matches!(token.kind, Kind::Parameter);
        expect = match expect {
            _ if semicolon => {
                if !expect.may_end() {
                    return false;
                }
                Expect::Statement
            }
            Expect::Statement => match word {
                Keyword::Select | Keyword::Values | Keyword::With => {
                    any_statement = true;
                    if matches!(word, Keyword::With) {
                        Expect::With
                    } else {
                        Expect::Body
                    }
                }
                Keyword::Explain => Expect::Explained,
                _ => return false,
            },
            Expect::Explained if matches!(word, Keyword::Query) => Expect::Plan,
            Expect::Plan if matches!(word, Keyword::Plan) => Expect::PlannedStatement,
            Expect::Explained | Expect::PlannedStatement => {
                any_statement = true;
                match word {
                    Keyword::Select | Keyword::Values => Expect::Body,
                    Keyword::With => Expect::With,
                    Keyword::Begin => Expect::Begin,
                    Keyword::Commit | Keyword::End => Expect::TransactionWord { rollback: false },
                    Keyword::Rollback => Expect::TransactionWord { rollback: true },
                    Keyword::Savepoint => Expect::SavepointName,
                    Keyword::Release => Expect::SavepointWord,
                    Keyword::Attach => Expect::DatabaseWord { attach: true },
                    Keyword::Detach => Expect::DatabaseWord { attach: false },
                    Keyword::Pragma => Expect::PragmaName,
                    _ => return false,
                }
            }
            Expect::Body => Expect::Body,
            Expect::With => match token.kind {
                Kind::OpenParen => {
                    depth += 1;
                    Expect::With
                }
                Kind::CloseParen if depth == 0 => return false,
                Kind::CloseParen => {
                    depth -= 1;
                    Expect::With
                }
                _ if depth > 0 => Expect::With,
                _ => match word {
                    Keyword::Select | Keyword::Values => Expect::Body,
                    Keyword::With | Keyword::Explain | Keyword::Replace => return false,
                    _ if word.writes() => return false,
                    _ => Expect::With,
                },
            },
            Expect::Begin => match word {
                Keyword::Deferred => Expect::TransactionWord { rollback: false },
                Keyword::Transaction => Expect::TransactionName { rollback: false },
                _ => return false,
            },
            Expect::TransactionWord { rollback } => match word {
                Keyword::Transaction => Expect::TransactionName { rollback },
                Keyword::To if rollback => Expect::SavepointWord,
                _ => return false,
            },
            Expect::TransactionName { rollback } => match word {
                Keyword::To if rollback => Expect::SavepointWord,
                _ if name && rollback => Expect::RollbackTo,
                _ if name => Expect::Done,
                _ => return false,
            },
            Expect::RollbackTo if matches!(word, Keyword::To) => Expect::SavepointWord,
            Expect::SavepointWord if matches!(word, Keyword::Savepoint) => Expect::SavepointName,
            Expect::SavepointWord | Expect::SavepointName if name => Expect::Done,
            Expect::DatabaseWord { attach } if matches!(word, Keyword::Database) => {
                Expect::Database { attach }
            }
            Expect::DatabaseWord { attach } | Expect::Database { attach } if file => {
                if attach {
                    Expect::AttachAs
                } else {
                    Expect::Done
                }
            }
            Expect::AttachAs if matches!(word, Keyword::As) => Expect::AttachName,
            Expect::AttachName if file => Expect::Done,
            Expect::PragmaName if is_word && matches!(word, Keyword::None) => Expect::PragmaDot {
                read: is_read_pragma(sql, token_start, at),
            },
            Expect::PragmaDot { .. } if matches!(token.kind, Kind::Dot) => Expect::SchemaPragmaName,
            Expect::SchemaPragmaName
                if is_word
                    && matches!(word, Keyword::None)
                    && is_read_pragma(sql, token_start, at) =>
            {
                Expect::Done
            }
            _ => return false,
        };
    }
    if one_line {
        expect.may_end() || expect.incomplete()
    } else {
        any_statement && expect.may_end()
    }
}

/// Whether the next token on the same line is `(`. `replace(` is the string function:
/// `REPLACE INTO` and `INSERT OR REPLACE` are never followed by `(`.
const fn opens_call(sql: &[u8], mut at: usize) -> bool {
    // No bound check needed: at the end of the input the lexer reads SQLite's terminating
    // NUL, a token that is neither space nor comment, which ends the loop.
    loop {
        let token = next_token(sql, at, true);
        match token.kind {
            Kind::Space | Kind::Comment => at = token.end,
            kind => return matches!(kind, Kind::OpenParen),
        }
    }
}
