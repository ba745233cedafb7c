//! The read-only scanner measured against a corpus of real SQL labelled by SQLite.
//!
//! The corpus (`shared/sql-corpus/public.jsonl`, a sibling of the repository) is external
//! data that is not part of the project: when it is absent this test says so and passes.
//! When present, the scanner must call no statement read-only that SQLite calls a write,
//! and the confusion matrix is printed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use d1_retry_runtime::is_read_only;

fn corpus_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/sql-corpus/public.jsonl")
}

/// One labelled statement of the corpus.
#[derive(Debug, PartialEq)]
struct Entry {
    sql: String,
    sqlite_readonly: bool,
}

#[derive(Default)]
struct Matrix {
    /// SQLite read, scanner read.
    reads_kept: usize,
    /// SQLite read, scanner write: a lost retry.
    reads_called_writes: usize,
    /// SQLite write, scanner write.
    writes_seen: usize,
    /// SQLite write, scanner read: a write that could run twice.
    writes_called_reads: Vec<String>,
    /// Reads called writes, by reason.
    lost_by_reason: BTreeMap<Reason, Vec<String>>,
}

/// Why the scanner called a read a write: a rough reading of the text for the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Reason {
    Pragma,
    Transaction,
    AttachDetach,
    NoOpDdl,
    LineBreak,
    Other,
}

impl Reason {
    fn of(sql: &str) -> Reason {
        let first_words: Vec<String> = without_comments(sql)
            .split(';')
            .filter_map(|statement| statement.split_whitespace().next())
            .map(str::to_ascii_uppercase)
            .collect();
        let starts = |words: &[&str]| {
            first_words
                .iter()
                .any(|word| words.contains(&word.as_str()))
        };
        if starts(&["PRAGMA"]) {
            Reason::Pragma
        } else if starts(&["BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"]) {
            Reason::Transaction
        } else if starts(&["ATTACH", "DETACH"]) {
            Reason::AttachDetach
        } else if starts(&["CREATE", "DROP", "ALTER"]) {
            Reason::NoOpDdl
        } else if is_read_only(&sql.replace('\n', " ")) {
            Reason::LineBreak
        } else {
            Reason::Other
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Reason::Pragma => "a `PRAGMA` (the scanner calls every PRAGMA a write)",
            Reason::Transaction => {
                "a transaction statement (`BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, \
                 `RELEASE`), which D1 refuses"
            }
            Reason::AttachDetach => "`ATTACH` or `DETACH`, which D1 refuses",
            Reason::NoOpDdl => {
                "DDL that SQLite found to be a no-op (`DROP ... IF EXISTS` of a missing object)"
            }
            Reason::LineBreak => {
                "a comment, string, `t.`, `AS` or `replace(` cut by a line break: read-only \
                 on one line, but D1's `exec()` runs each line on its own"
            }
            Reason::Other => {
                "a write keyword used as a bare name, outside `t.name`, `AS name` and `replace(`"
            }
        }
    }
}

/// `sql` without its `--` and `/* */` comments, ignoring strings: good enough to find the
/// first word of each statement for the report.
fn without_comments(sql: &str) -> String {
    let mut text = String::new();
    let mut rest = sql;
    while !rest.is_empty() {
        if let Some(comment) = rest.strip_prefix("--") {
            rest = comment.find('\n').map_or("", |end| &comment[end..]);
        } else if let Some(comment) = rest.strip_prefix("/*") {
            rest = comment.find("*/").map_or("", |end| &comment[end + 2..]);
            text.push(' ');
        } else {
            let mut chars = rest.chars();
            text.extend(chars.next());
            rest = chars.as_str();
        }
    }
    text
}

impl Matrix {
    fn record(&mut self, entry: &Entry) {
        let scanner = is_read_only(&entry.sql);
        match (entry.sqlite_readonly, scanner) {
            (true, true) => self.reads_kept += 1,
            (true, false) => {
                self.reads_called_writes += 1;
                let reason = Reason::of(&entry.sql);
                self.lost_by_reason
                    .entry(reason)
                    .or_default()
                    .push(entry.sql.clone());
            }
            (false, false) => self.writes_seen += 1,
            (false, true) => self.writes_called_reads.push(entry.sql.clone()),
        }
    }

    fn total(&self) -> usize {
        self.reads_kept
            + self.reads_called_writes
            + self.writes_seen
            + self.writes_called_reads.len()
    }

    fn markdown(&self) -> String {
        let reads = self.reads_kept + self.reads_called_writes;
        let writes = self.writes_seen + self.writes_called_reads.len();
        let mut text = String::new();
        let _ = writeln!(
            text,
            "Measured over {} statements from public SQLite test suites, sqllogictest, ORM \
             migrations and D1 templates, each labelled by SQLite's `sqlite3_stmt_readonly()`:\n",
            self.total()
        );
        let _ = writeln!(
            text,
            "| SQLite says | scanner: read-only | scanner: write |"
        );
        let _ = writeln!(text, "|---|---:|---:|");
        let _ = writeln!(
            text,
            "| read-only ({reads}) | {} | {} |",
            self.reads_kept, self.reads_called_writes
        );
        let _ = writeln!(
            text,
            "| write ({writes}) | **{}** | {} |",
            self.writes_called_reads.len(),
            self.writes_seen
        );
        let _ = writeln!(text);
        let _ = writeln!(
            text,
            "No write is called read-only. The {} reads called writes are lost retries, on \
             purpose; each holds:\n",
            self.reads_called_writes
        );
        let _ = writeln!(text, "| reads called writes | because the text holds |");
        let _ = writeln!(text, "|---:|---|");
        for (reason, statements) in &self.lost_by_reason {
            let _ = writeln!(text, "| {} | {} |", statements.len(), reason.describe());
        }
        text
    }
}

#[test]
fn no_corpus_write_is_called_read_only() {
    let path = corpus_path();
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!(
            "note: no corpus at {}; this measurement needs the external `shared/sql-corpus` \
             folder beside the repository, skipped",
            path.display()
        );
        return;
    };
    let mut matrix = Matrix::default();
    for (number, line) in text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
    {
        let entry =
            parse_entry(line).unwrap_or_else(|error| panic!("line {}: {error}", number + 1));
        matrix.record(&entry);
    }
    let markdown = matrix.markdown();
    println!("{markdown}");
    for reason in [Reason::LineBreak, Reason::NoOpDdl, Reason::Other] {
        for sql in matrix.lost_by_reason.get(&reason).into_iter().flatten() {
            println!("{reason:?}: {sql:?}");
        }
    }
    assert!(
        matrix.total() > 1_000,
        "the corpus looks truncated: {} statements",
        matrix.total()
    );
    assert!(
        matrix.writes_called_reads.is_empty(),
        "writes called read-only:\n{}",
        matrix.writes_called_reads.join("\n")
    );
    // The scanner must keep reads, not only refuse everything.
    assert!(
        matrix.reads_kept * 2 > matrix.reads_kept + matrix.reads_called_writes,
        "{markdown}"
    );
}

// ---------------------------------------------------------------------------------------
// A JSON reader for the corpus's flat objects: string, boolean, number and null values.

fn parse_entry(line: &str) -> Result<Entry, String> {
    let fields = parse_object(line)?;
    let sql = match fields.get("sql") {
        Some(Value::String(sql)) => sql.clone(),
        other => return Err(format!("`sql` is not a string: {other:?}")),
    };
    let sqlite_readonly = match fields.get("sqlite_readonly") {
        Some(Value::Bool(readonly)) => *readonly,
        other => return Err(format!("`sqlite_readonly` is not a boolean: {other:?}")),
    };
    Ok(Entry {
        sql,
        sqlite_readonly,
    })
}

#[derive(Debug, PartialEq)]
enum Value {
    String(String),
    Bool(bool),
    Other,
}

struct Reader<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

fn parse_object(text: &str) -> Result<BTreeMap<String, Value>, String> {
    let mut reader = Reader {
        chars: text.chars().peekable(),
    };
    let mut fields = BTreeMap::new();
    reader.expect('{')?;
    if reader.peek() == Some('}') {
        reader.chars.next();
        return Ok(fields);
    }
    loop {
        reader.expect('"')?;
        let key = reader.string()?;
        reader.expect(':')?;
        let value = reader.value()?;
        fields.insert(key, value);
        match reader.next_significant() {
            Some(',') => {}
            Some('}') => return Ok(fields),
            other => return Err(format!("expected `,` or `}}`, found {other:?}")),
        }
    }
}

impl Reader<'_> {
    fn peek(&mut self) -> Option<char> {
        while self.chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.chars.next();
        }
        self.chars.peek().copied()
    }

    fn next_significant(&mut self) -> Option<char> {
        self.peek();
        self.chars.next()
    }

    fn expect(&mut self, wanted: char) -> Result<(), String> {
        match self.next_significant() {
            Some(found) if found == wanted => Ok(()),
            other => Err(format!("expected `{wanted}`, found {other:?}")),
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some('"') => {
                self.chars.next();
                Ok(Value::String(self.string()?))
            }
            Some('t') => self.word("true").map(|()| Value::Bool(true)),
            Some('f') => self.word("false").map(|()| Value::Bool(false)),
            Some('n') => self.word("null").map(|()| Value::Other),
            Some(c) if c == '-' || c.is_ascii_digit() => {
                while self
                    .chars
                    .peek()
                    .is_some_and(|c| "+-.eE".contains(*c) || c.is_ascii_digit())
                {
                    self.chars.next();
                }
                Ok(Value::Other)
            }
            other => Err(format!("unexpected value start {other:?}")),
        }
    }

    fn word(&mut self, word: &str) -> Result<(), String> {
        for wanted in word.chars() {
            if self.chars.next() != Some(wanted) {
                return Err(format!("expected `{word}`"));
            }
        }
        Ok(())
    }

    /// The rest of a string whose opening quote was read.
    fn string(&mut self) -> Result<String, String> {
        let mut text = String::new();
        loop {
            match self.chars.next().ok_or("unterminated string")? {
                '"' => return Ok(text),
                '\\' => text.push(self.escape()?),
                c => text.push(c),
            }
        }
    }

    fn escape(&mut self) -> Result<char, String> {
        Ok(match self.chars.next().ok_or("unterminated escape")? {
            '"' => '"',
            '\\' => '\\',
            '/' => '/',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => {
                let unit = self.hex4()?;
                if (0xD800..0xDC00).contains(&unit) {
                    // A high surrogate: the low half must follow as another `\uXXXX`.
                    self.word("\\u")?;
                    let low = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err(format!("unpaired surrogate \\u{unit:04x}"));
                    }
                    let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    char::from_u32(code).ok_or("invalid surrogate pair")?
                } else {
                    char::from_u32(unit)
                        .ok_or_else(|| format!("unpaired surrogate \\u{unit:04x}"))?
                }
            }
            other => return Err(format!("unknown escape `\\{other}`")),
        })
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let mut value = 0;
        for _ in 0..4 {
            let digit = self
                .chars
                .next()
                .and_then(|c| c.to_digit(16))
                .ok_or("bad \\u escape")?;
            value = value * 16 + digit;
        }
        Ok(value)
    }
}

#[test]
fn json_reader_handles_escapes() {
    let line = r#"{"sql": "SELECT \"a\\b\"\n\t'\u00e9' -- \ud83d\ude00 \/", "sqlite_readonly": true, "n": -1.5e3, "x": null, "category": "select"}"#;
    assert_eq!(
        parse_entry(line),
        Ok(Entry {
            sql: "SELECT \"a\\b\"\n\t'é' -- 😀 /".to_owned(),
            sqlite_readonly: true,
        })
    );
    assert_eq!(
        parse_entry(r#"{"sqlite_readonly": false, "sql": "DELETE FROM t"}"#)
            .map(|e| e.sqlite_readonly),
        Ok(false)
    );
    assert!(parse_entry(r#"{"sql": "\ud83d", "sqlite_readonly": true}"#).is_err());
    assert!(parse_entry(r#"{"sql": "SELECT 1", "sqlite_readonly": "yes"}"#).is_err());
    assert!(parse_entry(r#"{"sql": "SELECT 1"#).is_err());
}
