//! The confusion matrix of the scanner against SQLite's labels, and why reads were called
//! writes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use d1_retry_runtime::{is_read_only, is_read_only_prepared};

/// Why the scanner called a read a write: a rough reading of the text, for the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    /// Only spaces, comments and `;`.
    NoStatement,
    /// A NUL byte or a Tcl-style parameter.
    Unjudged,
    /// A `PRAGMA`.
    Pragma,
    /// `BEGIN`, `COMMIT`, `END`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`.
    Transaction,
    /// `ATTACH`, `DETACH`.
    AttachDetach,
    /// DDL or maintenance that SQLite found to be a no-op.
    NoOpDdl,
    /// Read-only on one line, not once D1's `exec()` cuts it into lines.
    LineBreak,
    /// Anything else: a write keyword used as a name where the scanner looks at words.
    KeywordName,
}

impl Reason {
    /// Why the scanner called `sql`, a read for SQLite, a write.
    pub fn of(sql: &str) -> Reason {
        if sql.contains('\0') || has_tcl_parameter(sql) {
            return Reason::Unjudged;
        }
        let first_words = first_words(sql);
        let starts = |words: &[&str]| {
            first_words
                .iter()
                .any(|word| words.contains(&word.as_str()))
        };
        if first_words.is_empty() {
            Reason::NoStatement
        } else if starts(&["PRAGMA"]) {
            Reason::Pragma
        } else if starts(&["BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"]) {
            Reason::Transaction
        } else if starts(&["ATTACH", "DETACH"]) {
            Reason::AttachDetach
        } else if starts(&["CREATE", "DROP", "ALTER", "REINDEX", "ANALYZE", "VACUUM"]) {
            Reason::NoOpDdl
        } else if is_read_only(&code_only(sql).replace('\n', " ")) {
            Reason::LineBreak
        } else {
            Reason::KeywordName
        }
    }

    /// The reason in words, for the report's table.
    pub fn describe(self) -> &'static str {
        match self {
            Reason::NoStatement => "no statement at all (only comments, spaces or `;`)",
            Reason::Unjudged => {
                "a NUL byte or a Tcl-style `$name(...)` parameter, which the scanner does not judge"
            }
            Reason::Pragma => {
                "a `PRAGMA` (the scanner calls every PRAGMA a write; under `EXPLAIN`, all \
                 but a read pragma without an argument)"
            }
            Reason::Transaction => {
                "a transaction statement (`BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, \
                 `RELEASE`), which D1 refuses (kept under `EXPLAIN`)"
            }
            Reason::AttachDetach => "`ATTACH` or `DETACH`, which D1 refuses (kept under `EXPLAIN`)",
            Reason::NoOpDdl => {
                "DDL or maintenance that SQLite found to be a no-op (`DROP ... IF EXISTS` of \
                 a missing object, `REINDEX` of a collation no index uses)"
            }
            Reason::LineBreak => {
                "a comment, string or quoted name over two lines, or a write keyword, `WITH` \
                 or `EXPLAIN` first on a line: read-only as one text, but D1's `exec()` runs \
                 each line on its own"
            }
            Reason::KeywordName => {
                "a write keyword used as a name where the scanner looks at words (outside \
                 the parentheses of a `WITH`: `WITH analyze AS (...)`)"
            }
        }
    }
}

/// The first word of each statement of `sql`, upper-cased, past `EXPLAIN [QUERY PLAN]`.
fn first_words(sql: &str) -> Vec<String> {
    code_only(sql)
        .split(';')
        .filter_map(|statement| {
            statement
                .split_whitespace()
                .map(|word| word.trim_start_matches('\u{FEFF}').to_ascii_uppercase())
                .find(|word| !matches!(word.as_str(), "EXPLAIN" | "QUERY" | "PLAN" | ""))
        })
        .collect()
}

/// `sql` with each comment made a space and each string or quoted name made `x`: good
/// enough to find the first word of each statement for the report, and to see whether a
/// text is read-only once its line breaks are spaces.
fn code_only(sql: &str) -> String {
    let mut text = String::new();
    let mut rest = sql;
    while let Some(c) = rest.chars().next() {
        let skip = if rest.starts_with("--") {
            text.push(' ');
            rest.find('\n').unwrap_or(rest.len())
        } else if let Some(comment) = rest.strip_prefix("/*") {
            text.push(' ');
            comment.find("*/").map_or(rest.len(), |end| end + 4)
        } else if let Some(close) = match c {
            '\'' | '"' | '`' => Some(c),
            '[' => Some(']'),
            _ => None,
        } {
            text.push('x');
            rest[1..].find(close).map_or(rest.len(), |end| end + 2)
        } else {
            text.push(c);
            c.len_utf8()
        };
        rest = &rest[skip..];
    }
    text
}

/// Whether `sql` holds `$name(`, `:name(`, `@name(` or `#name(`.
fn has_tcl_parameter(sql: &str) -> bool {
    let bytes = sql.as_bytes();
    bytes.iter().enumerate().any(|(start, byte)| {
        if !matches!(byte, b'$' | b':' | b'@' | b'#') {
            return false;
        }
        let name = bytes[start + 1..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b':'))
            .count();
        name > 0 && bytes.get(start + 1 + name) == Some(&b'(')
    })
}

/// One kind's row of the per-kind table.
#[derive(Clone, Copy, Default)]
pub struct KindRow {
    /// Texts of this kind.
    pub statements: usize,
    /// SQLite reads among them, and how many the scanner kept.
    pub reads: usize,
    /// SQLite reads the scanner called read-only.
    pub reads_kept: usize,
    /// SQLite writes among them.
    pub writes: usize,
    /// SQLite writes the scanner called writes.
    pub writes_caught: usize,
}

/// The scanner's verdicts against SQLite's labels.
#[derive(Default)]
pub struct Matrix {
    /// SQLite read, scanner read.
    pub reads_kept: usize,
    /// SQLite read, scanner write (a lost retry), by reason.
    pub reads_called_writes: BTreeMap<Reason, Vec<String>>,
    /// SQLite write, scanner write.
    pub writes_caught: usize,
    /// Writes that write only when D1's `exec()` runs the text line by line.
    pub writes_by_lines_only: usize,
    /// SQLite write, scanner read: a write that could run twice.
    pub writes_called_reads: Vec<String>,
    /// The same counts by kind of statement.
    pub kinds: BTreeMap<String, KindRow>,
    /// Texts SQLite reads whole (as a prepared statement is sent), and how many of them
    /// `is_read_only_prepared` keeps.
    pub prepared_reads: usize,
    pub prepared_reads_kept: usize,
    /// SQLite writes whole, `is_read_only_prepared` says read-only.
    pub prepared_writes_called_reads: Vec<String>,
}

impl Matrix {
    /// Counts one text of kind `kind`, which SQLite says `writes` (`by_lines_only`: only
    /// when D1's `exec()` runs it line by line).
    pub fn record(&mut self, kind: &str, sql: &str, writes: bool, by_lines_only: bool) {
        let scanner_read = is_read_only(sql);
        let prepared_read = is_read_only_prepared(sql);
        if writes && !by_lines_only {
            if prepared_read {
                self.prepared_writes_called_reads.push(sql.to_owned());
            }
        } else {
            self.prepared_reads += 1;
            self.prepared_reads_kept += usize::from(prepared_read);
        }
        let row = self.kinds.entry(kind.to_owned()).or_default();
        row.statements += 1;
        if writes {
            row.writes += 1;
            self.writes_by_lines_only += usize::from(by_lines_only);
            if scanner_read {
                self.writes_called_reads.push(sql.to_owned());
            } else {
                row.writes_caught += 1;
                self.writes_caught += 1;
            }
        } else {
            row.reads += 1;
            if scanner_read {
                row.reads_kept += 1;
                self.reads_kept += 1;
            } else {
                self.reads_called_writes
                    .entry(Reason::of(sql))
                    .or_default()
                    .push(sql.to_owned());
            }
        }
    }

    /// Reads the scanner called writes.
    pub fn reads_lost(&self) -> usize {
        self.reads_called_writes.values().map(Vec::len).sum()
    }

    /// SQLite reads.
    pub fn reads(&self) -> usize {
        self.reads_kept + self.reads_lost()
    }

    /// SQLite writes.
    pub fn writes(&self) -> usize {
        self.writes_caught + self.writes_called_reads.len()
    }

    /// Every text counted.
    pub fn total(&self) -> usize {
        self.reads() + self.writes()
    }

    /// The confusion matrix and the reasons for lost reads, as markdown.
    pub fn markdown(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(
            text,
            "| SQLite says | scanner: read-only | scanner: write |"
        );
        let _ = writeln!(text, "|---|---:|---:|");
        let _ = writeln!(
            text,
            "| read-only ({}) | {} | {} |",
            self.reads(),
            self.reads_kept,
            self.reads_lost()
        );
        let _ = writeln!(
            text,
            "| write ({}) | **{}** | {} |",
            self.writes(),
            self.writes_called_reads.len(),
            self.writes_caught
        );
        let _ = writeln!(
            text,
            "\nAs prepared statements (`is_read_only_prepared`: the text sent to SQLite whole), \
             {} of the {} texts SQLite reads whole are kept, and **{}** writes are called \
             read-only.",
            self.prepared_reads_kept,
            self.prepared_reads,
            self.prepared_writes_called_reads.len()
        );
        if self.writes_by_lines_only > 0 {
            let _ = writeln!(
                text,
                "\n{} of the writes write only when D1's `exec()` runs the text line by line.",
                self.writes_by_lines_only
            );
        }
        let _ = writeln!(
            text,
            "\n| reads called writes | because the text holds |\n|---:|---|"
        );
        for (reason, statements) in &self.reads_called_writes {
            let _ = writeln!(text, "| {} | {} |", statements.len(), reason.describe());
        }
        text
    }

    /// The counts by kind of statement, as markdown.
    pub fn kinds_markdown(&self) -> String {
        let mut text = String::from(
            "| kind | statements | SQLite reads | kept | SQLite writes | called writes |\n\
             |---|---:|---:|---:|---:|---:|\n",
        );
        for (kind, row) in &self.kinds {
            let _ = writeln!(
                text,
                "| {kind} | {} | {} | {} | {} | {} |",
                row.statements, row.reads, row.reads_kept, row.writes, row.writes_caught
            );
        }
        text
    }
}
