//! Cuts SQL into tokens where SQLite's tokenizer (`sqlite3GetToken`) cuts it.
//!
//! The rule this file must keep: a token here never ends *after* the token SQLite reads at
//! the same place. A longer token could swallow a `;` or a keyword that SQLite sees, and so
//! hide a write. A shorter one only shows the scanner words that SQLite reads as part of a
//! literal, which can only make the verdict more conservative. That is why numbers are not
//! lexed at all (`1.5e3` is read as `1`, `.`, `5e3`: a dot and two words that are never
//! keywords), and why operators are single bytes.

/// What a token is, as far as the read-only verdict cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Spaces, tabs, line breaks, or a UTF-8 byte-order mark: only separates tokens.
    Space,
    /// `-- ...` up to the line break, or `/* ... */` (to the end of the input if unterminated).
    Comment,
    /// A run of identifier bytes: a keyword, a bare name, or the digits of a number.
    Word,
    /// `.`: the word after it is a qualified name.
    Dot,
    /// `(`.
    OpenParen,
    /// `;`: ends a statement.
    Semicolon,
    /// A string, a quoted name, a parameter, an operator: never a keyword.
    Other,
    /// Text whose meaning the scanner does not judge (see [`next_token`]).
    Unjudged,
}

/// One token: its kind, where it ends, and whether it contains a line break.
#[derive(Clone, Copy)]
pub(super) struct Token {
    pub(super) kind: Kind,
    /// The index just past the token; always after its start, so scanning makes progress.
    pub(super) end: usize,
    /// For [`Kind::Space`]: a new line begins. For any other kind: the token runs over
    /// several lines (see the module docs of `read_only` for why that matters to D1).
    pub(super) has_line_break: bool,
}

/// The token that starts at `start`. At the end of `sql` it is SQLite's terminating NUL:
/// a one-byte [`Kind::Unjudged`] token that ends past the input.
///
/// Two forms are [`Kind::Unjudged`]: any token holding a NUL byte (SQLite stops reading at
/// it, so it would not see what follows, while other layers of D1 might), and Tcl-style
/// parameters such as `$name(...)`, which SQLite reads up to the next `)` or space, quotes
/// included; nobody writes them for D1, and reading them differently from SQLite could hide
/// a statement.
pub(super) const fn next_token(sql: &[u8], start: usize) -> Token {
    let first = byte_at(sql, start);
    let second = byte_at(sql, start + 1);
    match first {
        b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' => {
            token(Kind::Space, sql, start, skip_spaces(sql, start))
        }
        // SQLite skips a byte-order mark only where a token starts; inside a word it is
        // part of the name, like any other non-ASCII byte.
        0xEF if second == 0xBB && byte_at(sql, start + 2) == 0xBF => {
            token(Kind::Space, sql, start, start + 3)
        }
        b'-' if second == b'-' => token(Kind::Comment, sql, start, find(sql, start, b'\n')),
        b'/' if second == b'*' => token(Kind::Comment, sql, start, block_comment_end(sql, start)),
        b'\'' | b'"' | b'`' => token(Kind::Other, sql, start, quoted_end(sql, start, first)),
        // `[name]` has no escape: it ends at the first `]`.
        b'[' => token(Kind::Other, sql, start, after(sql, find(sql, start, b']'))),
        b'$' | b'@' | b':' | b'#' => parameter(sql, start),
        b'.' => token(Kind::Dot, sql, start, start + 1),
        b'(' => token(Kind::OpenParen, sql, start, start + 1),
        b';' => token(Kind::Semicolon, sql, start, start + 1),
        _ if is_identifier_byte(first) => token(Kind::Word, sql, start, word_end(sql, start)),
        _ => token(Kind::Other, sql, start, start + 1),
    }
}

/// The byte at `index`, or 0 past the end: SQLite reads a NUL-terminated string, so a
/// missing byte behaves exactly like its terminator.
pub(super) const fn byte_at(sql: &[u8], index: usize) -> u8 {
    if index < sql.len() { sql[index] } else { 0 }
}

/// SQLite's `IdChar`: ASCII letters and digits, `_`, `$`, and every byte of a non-ASCII
/// character. So `ｓｅｌｅｃｔ`, `délete` or `update_at` are names, never keywords.
const fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$' || byte >= 0x80
}

const fn token(kind: Kind, sql: &[u8], start: usize, end: usize) -> Token {
    let mut kind = kind;
    let mut has_line_break = false;
    let mut index = start;
    while index < end {
        match byte_at(sql, index) {
            b'\n' => has_line_break = true,
            0 => kind = Kind::Unjudged,
            _ => {}
        }
        index += 1;
    }
    Token {
        kind,
        end,
        has_line_break,
    }
}

const fn skip_spaces(sql: &[u8], start: usize) -> usize {
    let mut index = start;
    while matches!(
        byte_at(sql, index),
        b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'
    ) {
        index += 1;
    }
    index
}

const fn word_end(sql: &[u8], start: usize) -> usize {
    let mut index = start;
    while is_identifier_byte(byte_at(sql, index)) {
        index += 1;
    }
    index
}

/// The index of the first `byte` at or after `from`, or the length of `sql`.
const fn find(sql: &[u8], from: usize, byte: u8) -> usize {
    let mut index = from;
    while index < sql.len() && sql[index] != byte {
        index += 1;
    }
    index
}

/// One past `index`: the end of a token whose last byte is at `index`, if there is one.
const fn after(sql: &[u8], index: usize) -> usize {
    if index < sql.len() {
        index + 1
    } else {
        sql.len()
    }
}

/// `/* ... */` does not nest; unterminated, it runs to the end of the input, which SQLite
/// accepts as a comment.
const fn block_comment_end(sql: &[u8], start: usize) -> usize {
    let mut index = start + 2;
    while index < sql.len() {
        if sql[index] == b'*' && byte_at(sql, index + 1) == b'/' {
            return index + 2;
        }
        index += 1;
    }
    sql.len()
}

/// `'...'`, `"..."` and `` `...` `` end at a lone closing quote; a doubled quote is an
/// escaped one. There are no backslash escapes.
const fn quoted_end(sql: &[u8], start: usize, quote: u8) -> usize {
    let mut index = start + 1;
    while index < sql.len() {
        if sql[index] == quote {
            if byte_at(sql, index + 1) != quote {
                return index + 1;
            }
            index += 1;
        }
        index += 1;
    }
    sql.len()
}

/// Named parameters: `:name`, `@name`, `$name`, `#name`. SQLite also joins `::` into the
/// name (`$a::b`), and reads `$name(...)` Tcl-style (see [`next_token`]). (`?1` needs no
/// care: `?` and the digits after it are never keywords.)
const fn parameter(sql: &[u8], start: usize) -> Token {
    let mut index = start + 1;
    let mut named = false;
    while index < sql.len() {
        let byte = sql[index];
        if is_identifier_byte(byte) {
            named = true;
            index += 1;
        } else if byte == b'(' && named {
            // Nothing after it is judged either.
            return token(Kind::Unjudged, sql, start, sql.len());
        } else if byte == b':' && byte_at(sql, index + 1) == b':' {
            index += 2;
        } else {
            break;
        }
    }
    token(Kind::Other, sql, start, index)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every token of `sql` with its kind, and whether it holds a line break.
    fn tokens(sql: &str) -> Vec<(Kind, &str, bool)> {
        let bytes = sql.as_bytes();
        let mut tokens = Vec::new();
        let mut start = 0;
        while start < bytes.len() {
            let token = next_token(bytes, start);
            assert!(token.end > start, "no progress at {start} in {sql:?}");
            let end = token.end.min(bytes.len());
            tokens.push((token.kind, &sql[start..end], token.has_line_break));
            start = token.end;
        }
        tokens
    }

    use Kind::{Comment, Dot, OpenParen, Other, Semicolon, Space, Unjudged, Word};

    /// Where SQLite's `sqlite3GetToken` ends each token (or, for numbers and operators,
    /// where it ends no earlier).
    #[test]
    fn tokens_end_where_sqlite_ends_them() {
        let cases: &[(&str, &[(Kind, &str)])] = &[
            (
                "SELECT  a.b;(",
                &[
                    (Word, "SELECT"),
                    (Space, "  "),
                    (Word, "a"),
                    (Dot, "."),
                    (Word, "b"),
                    (Semicolon, ";"),
                    (OpenParen, "("),
                ],
            ),
            (
                " \t\u{b}\u{c}\r\n x",
                &[(Space, " \t\u{b}\u{c}\r\n "), (Word, "x")],
            ),
            ("'it''s'x", &[(Other, "'it''s'"), (Word, "x")]),
            (
                "'a\"'\"b'\"`",
                &[(Other, "'a\"'"), (Other, "\"b'\""), (Other, "`")],
            ),
            ("\"a\"\"b\"c", &[(Other, "\"a\"\"b\""), (Word, "c")]),
            ("`a``b`c", &[(Other, "`a``b`"), (Word, "c")]),
            ("''", &[(Other, "''")]),
            ("'a", &[(Other, "'a")]),
            ("[a]]x", &[(Other, "[a]"), (Other, "]"), (Word, "x")]),
            ("[a''b]c", &[(Other, "[a''b]"), (Word, "c")]),
            ("[a", &[(Other, "[a")]),
            (
                "-- c;\nx",
                &[(Comment, "-- c;"), (Space, "\n"), (Word, "x")],
            ),
            ("--", &[(Comment, "--")]),
            ("/* a */b", &[(Comment, "/* a */"), (Word, "b")]),
            ("/**/b", &[(Comment, "/**/"), (Word, "b")]),
            ("/*/ a */b", &[(Comment, "/*/ a */"), (Word, "b")]),
            (
                "/* /* */ */",
                &[
                    (Comment, "/* /* */"),
                    (Space, " "),
                    (Other, "*"),
                    (Other, "/"),
                ],
            ),
            ("/* a *", &[(Comment, "/* a *")]),
            (
                "-x/y*",
                &[
                    (Other, "-"),
                    (Word, "x"),
                    (Other, "/"),
                    (Word, "y"),
                    (Other, "*"),
                ],
            ),
            ("$a::b c", &[(Other, "$a::b"), (Space, " "), (Word, "c")]),
            (":a:b", &[(Other, ":a"), (Other, ":b")]),
            ("@1x#y", &[(Other, "@1x"), (Other, "#y")]),
            ("$(", &[(Other, "$"), (OpenParen, "(")]),
            ("$::x", &[(Other, "$::x")]),
            ("$a:", &[(Other, "$a"), (Other, ":")]),
            ("?1", &[(Other, "?"), (Word, "1")]),
            ("\u{FEFF}a", &[(Space, "\u{FEFF}"), (Word, "a")]),
            ("a\u{FEFF}b", &[(Word, "a\u{FEFF}b")]),
            ("\u{FF38}DELETE", &[(Word, "\u{FF38}DELETE")]),
            ("\u{FF3F}x", &[(Word, "\u{FF3F}x")]),
            ("\u{FEE0}x", &[(Word, "\u{FEE0}x")]),
            ("\u{EF}x", &[(Word, "\u{EF}x")]),
            ("é1_$x+", &[(Word, "é1_$x"), (Other, "+")]),
            ("1.5e3", &[(Word, "1"), (Dot, "."), (Word, "5e3")]),
            ("x'00'", &[(Word, "x"), (Other, "'00'")]),
        ];
        for (sql, expected) in cases {
            let got: Vec<(Kind, &str)> = tokens(sql)
                .into_iter()
                .map(|(kind, text, _)| (kind, text))
                .collect();
            assert_eq!(&got, expected, "tokens of {sql:?}");
        }
    }

    #[test]
    fn tcl_parameters_and_nul_bytes_are_unjudged() {
        for sql in ["$a(x)", "$a::b(x)", ":a(", "@a(')", "#a()"] {
            assert_eq!(tokens(sql)[0].0, Unjudged, "{sql:?}");
        }
        assert_eq!(next_token(b"ab", 2).kind, Unjudged, "the end reads as NUL");
        assert_eq!(
            tokens("a\0b"),
            [
                (Word, "a", false),
                (Unjudged, "\0", false),
                (Word, "b", false)
            ]
        );
        for sql in ["'a\0'", "\"\0\"", "[\0]", "-- \0", "/* \0 */"] {
            assert_eq!(tokens(sql)[0].0, Unjudged, "{sql:?}");
        }
    }

    #[test]
    fn line_breaks_are_reported() {
        assert_eq!(
            tokens("a \n'b\nc'-- d\n/*\n*/"),
            [
                (Word, "a", false),
                (Space, " \n", true),
                (Other, "'b\nc'", true),
                (Comment, "-- d", false),
                (Space, "\n", true),
                (Comment, "/*\n*/", true),
            ]
        );
        assert_eq!(
            tokens("'a'\n"),
            [(Other, "'a'", false), (Space, "\n", true)]
        );
    }
}
