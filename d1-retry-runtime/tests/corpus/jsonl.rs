//! A reader for the public corpus's JSON lines: flat objects of string, boolean, number
//! and null values. The corpus is external data, read where it lies and never copied into
//! the repository (see `scripts/public-corpus.sh`).

use std::collections::BTreeMap;

/// One labelled statement of the corpus.
#[derive(Debug, PartialEq)]
pub struct Entry {
    /// The text, sometimes several statements.
    pub sql: String,
    /// What `sqlite3_stmt_readonly()` said for every statement in it.
    pub sqlite_readonly: bool,
    /// A rough kind (`select`, `pragma`, ...).
    pub category: String,
}

/// Reads one line of the corpus.
pub fn parse_entry(line: &str) -> Result<Entry, String> {
    let fields = parse_object(line)?;
    let sql = match fields.get("sql") {
        Some(Value::String(sql)) => sql.clone(),
        other => return Err(format!("`sql` is not a string: {other:?}")),
    };
    let sqlite_readonly = match fields.get("sqlite_readonly") {
        Some(Value::Bool(readonly)) => *readonly,
        other => return Err(format!("`sqlite_readonly` is not a boolean: {other:?}")),
    };
    let category = match fields.get("category") {
        Some(Value::String(category)) => category.clone(),
        None => "uncategorised".to_owned(),
        other => return Err(format!("`category` is not a string: {other:?}")),
    };
    Ok(Entry {
        sql,
        sqlite_readonly,
        category,
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
