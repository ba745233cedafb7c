//! SQLite's verdict on a text, asked when the test runs: every statement is prepared on a
//! connection holding [`SCHEMA`], and `sqlite3_stmt_readonly()` (rusqlite:
//! `Statement::readonly()`) says whether it writes. Nothing is executed, so the schema stays
//! as it is for every text.
//!
//! Three of the ways D1 reads text are applied on top, so that the label says what could
//! write once the text reaches D1:
//!
//! - a text holding several statements writes if any of them does (`Batch` walks SQLite's
//!   tail, statement by statement);
//! - D1's `exec()` trims its text, cuts it at every `\n` and runs each line as a query of
//!   its own: a text writes if one of its lines, run alone, writes;
//! - SQLite stops reading at a NUL byte, but another layer might not: the text after one is
//!   judged too.
//!
//! What the scanner calls writes on purpose although SQLite calls them read-only (every
//! `PRAGMA`, transactions, `ATTACH`) stays read-only here: the confusion matrix counts
//! those as reads called writes, by reason.

use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::{Batch, Connection};

/// The schema the corpus's statements use: columns and a savepoint named like keywords, a
/// view, an index, a trigger and an FTS5 table to drop or query.
pub const SCHEMA: &str = r#"
    CREATE TABLE users (
        id INTEGER PRIMARY KEY, name TEXT, email TEXT UNIQUE, created_at TEXT, deleted_at TEXT,
        "update" TEXT, "delete" INTEGER, replace TEXT, analyze INTEGER, pragma TEXT, ünïcödé TEXT
    );
    CREATE TABLE posts (
        id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users (id), title TEXT, body TEXT,
        "drop" TEXT
    );
    CREATE TABLE tags (post_id INTEGER, tag TEXT, PRIMARY KEY (post_id, tag)) WITHOUT ROWID;
    CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT);
    CREATE INDEX posts_user ON posts (user_id);
    CREATE VIEW active_users AS SELECT * FROM users WHERE deleted_at IS NULL;
    CREATE TRIGGER posts_touch AFTER UPDATE ON posts BEGIN
        UPDATE users SET created_at = 'now' WHERE id = new.user_id;
    END;
    CREATE VIRTUAL TABLE docs USING fts5(title, body);
"#;

/// What SQLite says about one text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label {
    /// Some statement of the text, read whole, writes.
    pub whole_writes: bool,
    /// Some line of the text, run alone as D1's `exec()` runs it, writes.
    pub a_line_writes: bool,
}

impl Label {
    /// Whether the text can write once it reaches D1.
    pub fn writes(self) -> bool {
        self.whole_writes || self.a_line_writes
    }
}

/// A connection holding [`SCHEMA`], to prepare statements on.
pub struct Oracle {
    connection: Connection,
}

impl Oracle {
    /// An in-memory database with [`SCHEMA`].
    pub fn new() -> Self {
        let connection = Connection::open_in_memory().expect("an in-memory SQLite opens");
        connection
            .execute_batch(SCHEMA)
            .expect("the schema applies");
        Oracle { connection }
    }

    /// SQLite's version, for the report.
    pub fn version() -> &'static str {
        rusqlite::version()
    }

    /// SQLite's label for `sql`, or why some statement of it does not prepare.
    ///
    /// Text with no statement at all (spaces, comments, `;`) is read-only:
    /// `sqlite3_stmt_readonly()` of no statement is true, and nothing runs.
    pub fn label(&self, sql: &str) -> Result<Label, String> {
        let mut whole_writes = false;
        for part in sql.split('\0') {
            let mut batch = Batch::new(&self.connection, part);
            loop {
                match batch.next() {
                    Ok(Some(statement)) => whole_writes |= !statement.readonly(),
                    Ok(None) => break,
                    Err(error) => return Err(error.to_string()),
                }
            }
        }
        Ok(Label {
            whole_writes,
            a_line_writes: self.a_line_writes(sql),
        })
    }

    /// Whether a line of `sql` writes when D1's `exec()` runs each line on its own. A line
    /// ends at its first statement that does not prepare, as it would in SQLite.
    fn a_line_writes(&self, sql: &str) -> bool {
        let trimmed = sql.trim_matches(|c: char| c.is_whitespace() || c == '\u{FEFF}');
        trimmed.split(['\n', '\0']).any(|line| {
            let mut batch = Batch::new(&self.connection, line);
            let mut writes = false;
            while let Ok(Some(statement)) = batch.next() {
                writes |= !statement.readonly();
            }
            writes
        })
    }
}
