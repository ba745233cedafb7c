//! Cuts SQL into tokens where SQLite's tokenizer (`sqlite3GetToken`) cuts it ([`next_token`]),
//! and skips the body of a statement in one pass where no word can matter ([`skip`]).
//!
//! The rule this file must keep: a token here never ends *after* the token SQLite reads at
//! the same place. A longer token could swallow a `;` or a keyword that SQLite sees, and so
//! hide a write. A shorter one only shows the scanner words that SQLite reads as part of a
//! literal, which can only make the verdict more conservative. That is why numbers are not
//! lexed at all (`1.5e3` is read as `1`, `.`, `5e3`: a dot and two words that are never
//! keywords), and why operators are single bytes.
//!
//! Both functions also report, as they go, what no verdict can survive: a NUL byte,
//! Tcl-style parameters, and, for text run line by line (`by_line`: D1's `exec()` runs each
//! line as a query of its own), a string, quoted name or block comment that runs over a line
//! break, whose inner lines would run as SQL; so that no token is walked twice. Text sent to
//! SQLite whole (a prepared statement) has no such lines: there `\n` is a space.
//! [`skip`] looks up each byte in a `const` table of byte classes, eight at a time.

use super::keyword;

/// What a token is, as far as the read-only verdict cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Spaces, tabs, `\r`, form feeds, or a UTF-8 byte-order mark, on one line.
    Space,
    /// A run of spaces holding at least one `\n`: a new line begins after it.
    LineBreak,
    /// `-- ...` up to the line break, or `/* ... */` (to the end of the input if
    /// unterminated), on one line when the text is run `by_line`.
    Comment,
    /// A run of identifier bytes: a keyword, a bare name, or the digits of a number.
    Word,
    /// `.`.
    Dot,
    /// `(`.
    OpenParen,
    /// `)`.
    CloseParen,
    /// `;`: ends a statement.
    Semicolon,
    /// A string or a quoted name (`'...'`, `"..."`, `` `...` ``, `[...]`), on one line when
    /// the text is run `by_line`.
    Quoted,
    /// A parameter: `?`, `?NNN`, `:name`, `@name`, `$name`, `#name`.
    Parameter,
    /// An operator, or any other byte: never a keyword.
    Other,
    /// Text whose meaning the scanner does not judge (see [`next_token`]).
    Unjudged,
}

/// One token: its kind and where it ends.
#[derive(Clone, Copy)]
pub(super) struct Token {
    pub(super) kind: Kind,
    /// The index just past the token; always after its start, so scanning makes progress.
    pub(super) end: usize,
}

/// The token that starts at `start`. At the end of `sql` it is SQLite's terminating NUL:
/// a one-byte [`Kind::Unjudged`] token that ends past the input.
///
/// Three forms are [`Kind::Unjudged`]: any token holding a NUL byte (SQLite stops reading at
/// it, so it would not see what follows, while other layers of D1 might); with `by_line`, a
/// string, quoted name or block comment that runs over a line break; and Tcl-style
/// parameters such as `$name(...)`, which SQLite reads up to the next `)` or space, quotes
/// included: nobody writes them for D1, and reading them differently from SQLite could hide
/// a statement.
pub(super) const fn next_token(sql: &[u8], start: usize, by_line: bool) -> Token {
    let first = byte_at(sql, start);
    let second = byte_at(sql, start + 1);
    match first {
        b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' => spaces(sql, start),
        // SQLite skips a byte-order mark only where a token starts; inside a word it is
        // part of the name, like any other non-ASCII byte.
        0xEF if second == 0xBB && byte_at(sql, start + 2) == 0xBF => Token {
            kind: Kind::Space,
            end: start + 3,
        },
        b'-' if second == b'-' => judged(Kind::Comment, line_comment_end(sql, start)),
        b'/' if second == b'*' => judged(Kind::Comment, block_comment_end(sql, start, by_line)),
        b'\'' | b'"' | b'`' => judged(Kind::Quoted, quoted_end(sql, start, first, by_line)),
        b'[' => judged(Kind::Quoted, bracket_end(sql, start, by_line)),
        b'$' | b'@' | b':' | b'#' | b'?' => parameter(sql, start),
        b'.' => single(Kind::Dot, start),
        b'(' => single(Kind::OpenParen, start),
        b')' => single(Kind::CloseParen, start),
        b';' => single(Kind::Semicolon, start),
        0 => single(Kind::Unjudged, start),
        _ if is_identifier_byte(first) => Token {
            kind: Kind::Word,
            end: word_end(sql, start),
        },
        _ => single(Kind::Other, start),
    }
}

/// The byte at `index`, or 0 past the end: SQLite reads a NUL-terminated string, so a
/// missing byte behaves exactly like its terminator.
pub(super) const fn byte_at(sql: &[u8], index: usize) -> u8 {
    if index < sql.len() { sql[index] } else { 0 }
}

/// SQLite's `IdChar`: ASCII letters and digits, `_`, `$`, and every byte of a non-ASCII
/// character. So `ｓｅｌｅｃｔ`, `délete` or `update_at` are names, never keywords.
pub(super) const fn is_identifier_byte(byte: u8) -> bool {
    IDENTIFIER[byte as usize]
}

/// [`is_identifier_byte`] of every byte.
const IDENTIFIER: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
        byte += 1;
    }
    table
};

/// A token whose last byte is at `last`.
const fn single(kind: Kind, last: usize) -> Token {
    Token {
        kind,
        end: last + 1,
    }
}

/// Where a string, quoted name or comment ends, and whether it stays judgeable: on one line
/// and free of NUL bytes.
#[derive(Clone, Copy)]
pub(super) struct Span {
    pub(super) end: usize,
    pub(super) clean: bool,
}

const fn judged(kind: Kind, span: Span) -> Token {
    Token {
        kind: if span.clean { kind } else { Kind::Unjudged },
        end: span.end,
    }
}

/// The byte besides NUL that makes a string, quoted name or comment unjudgeable: `\n` when
/// the text is run `by_line`; else NUL again. Found once per token, so that the loop over
/// its bytes compares each with two bytes, as it would with a fixed rule.
const fn line_break(by_line: bool) -> u8 {
    if by_line { b'\n' } else { 0 }
}

/// A byte that makes a string, quoted name or comment unjudgeable: NUL, or `line_break`.
const fn breaks_judgement(byte: u8, line_break: u8) -> bool {
    byte == 0 || byte == line_break
}

const fn spaces(sql: &[u8], start: usize) -> Token {
    let mut index = start;
    let mut kind = Kind::Space;
    while index < sql.len() {
        match sql[index] {
            b'\n' => kind = Kind::LineBreak,
            b' ' | b'\t' | 0x0b | 0x0c | b'\r' => {}
            _ => break,
        }
        index += 1;
    }
    Token { kind, end: index }
}

/// The first byte at or after `start` that is not a space on the same line.
const fn line_start(sql: &[u8], start: usize) -> usize {
    let mut index = start;
    while index < sql.len() && matches!(sql[index], b' ' | b'\t' | 0x0b | 0x0c | b'\r') {
        index += 1;
    }
    index
}

/// One past the last identifier byte of the word starting at `start`.
const fn word_end(sql: &[u8], start: usize) -> usize {
    let mut index = start;
    while index < sql.len() && is_identifier_byte(sql[index]) {
        index += 1;
    }
    index
}

/// `-- ...` ends at `\n` (not included) or at the end of the input.
const fn line_comment_end(sql: &[u8], start: usize) -> Span {
    let mut index = start + 2;
    while index < sql.len() {
        match sql[index] {
            b'\n' => break,
            0 => {
                return Span {
                    end: index + 1,
                    clean: false,
                };
            }
            _ => index += 1,
        }
    }
    Span {
        end: index,
        clean: true,
    }
}

/// `/* ... */` does not nest; unterminated, it runs to the end of the input, which SQLite
/// accepts as a comment.
const fn block_comment_end(sql: &[u8], start: usize, by_line: bool) -> Span {
    let mut index = start + 2;
    let line_break = line_break(by_line);
    let mut clean = true;
    while index < sql.len() {
        let byte = sql[index];
        if byte == b'*' && byte_at(sql, index + 1) == b'/' {
            return Span {
                end: index + 2,
                clean,
            };
        }
        if breaks_judgement(byte, line_break) {
            clean = false;
        }
        index += 1;
    }
    Span {
        end: sql.len(),
        clean,
    }
}

/// `'...'`, `"..."` and `` `...` `` end at a lone closing quote; a doubled quote is an
/// escaped one. There are no backslash escapes. Unterminated, they run to the end of the
/// input (SQLite then refuses the statement, so nothing after them runs).
const fn quoted_end(sql: &[u8], start: usize, quote: u8, by_line: bool) -> Span {
    let mut index = start + 1;
    let line_break = line_break(by_line);
    let mut clean = true;
    while index < sql.len() {
        let byte = sql[index];
        if byte == quote {
            if byte_at(sql, index + 1) != quote {
                return Span {
                    end: index + 1,
                    clean,
                };
            }
            index += 1;
        } else if breaks_judgement(byte, line_break) {
            clean = false;
        }
        index += 1;
    }
    Span {
        end: sql.len(),
        clean,
    }
}

/// `[name]` has no escape: it ends at the first `]`.
const fn bracket_end(sql: &[u8], start: usize, by_line: bool) -> Span {
    let mut index = start + 1;
    let line_break = line_break(by_line);
    let mut clean = true;
    while index < sql.len() {
        let byte = sql[index];
        if byte == b']' {
            return Span {
                end: index + 1,
                clean,
            };
        }
        if breaks_judgement(byte, line_break) {
            clean = false;
        }
        index += 1;
    }
    Span {
        end: sql.len(),
        clean,
    }
}

/// Parameters. `?` takes the digits after it, as SQLite does (so `?1$a(` is `?1`, then a Tcl
/// parameter). Named ones are `:name`, `@name`, `$name`, `#name`; SQLite also joins `::`
/// into the name (`$a::b`), and reads `$name(...)` Tcl-style (see [`next_token`]): then
/// nothing after it is judged either.
const fn parameter(sql: &[u8], start: usize) -> Token {
    let mut index = start + 1;
    if byte_at(sql, start) == b'?' {
        while index < sql.len() && sql[index].is_ascii_digit() {
            index += 1;
        }
        return Token {
            kind: Kind::Parameter,
            end: index,
        };
    }
    let mut named = false;
    while index < sql.len() {
        let byte = sql[index];
        if is_identifier_byte(byte) {
            named = true;
            index += 1;
        } else if byte == b'(' && named {
            return Token {
                kind: Kind::Unjudged,
                end: sql.len(),
            };
        } else if byte == b':' && byte_at(sql, index + 1) == b':' {
            index += 2;
        } else {
            break;
        }
    }
    Token {
        kind: if named { Kind::Parameter } else { Kind::Other },
        end: index,
    }
}

// ---------------------------------------------------------------------------------------
// The one-pass skip over a statement's body.

/// Bytes that need no look: letters, digits, spaces other than `\n`, operators, and, outside
/// a `WITH`'s parentheses, `(` and `)`.
const PLAIN: u8 = 0;
const NEW_LINE: u8 = 1;
const QUOTE: u8 = 2;
const BRACKET: u8 = 3;
const DASH: u8 = 4;
const SLASH: u8 = 5;
const SEMICOLON: u8 = 6;
const PARAMETER: u8 = 7;
const NUL: u8 = 8;
const OPEN: u8 = 9;
const CLOSE: u8 = 10;

/// The class of every byte, for [`skip`]; `parens` makes `(` and `)` count.
const fn classes(parens: bool) -> [u8; 256] {
    let mut table = [PLAIN; 256];
    table[0] = NUL;
    table[b'\n' as usize] = NEW_LINE;
    table[b'\'' as usize] = QUOTE;
    table[b'"' as usize] = QUOTE;
    table[b'`' as usize] = QUOTE;
    table[b'[' as usize] = BRACKET;
    table[b'-' as usize] = DASH;
    table[b'/' as usize] = SLASH;
    table[b';' as usize] = SEMICOLON;
    table[b'$' as usize] = PARAMETER;
    table[b'@' as usize] = PARAMETER;
    table[b':' as usize] = PARAMETER;
    table[b'#' as usize] = PARAMETER;
    if parens {
        table[b'(' as usize] = OPEN;
        table[b')' as usize] = CLOSE;
    }
    table
}

/// Byte classes in the body of a `SELECT` or `VALUES`.
const BODY: [u8; 256] = classes(false);
/// Byte classes inside the parentheses of a `WITH`, before its main statement.
const NESTED: [u8; 256] = classes(true);

/// Why [`skip`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// The end of the input.
    End,
    /// A new line begins, and its first word may matter: [`Stop::at`] is just past the
    /// `\n`, or, past spaces, at a word that may be a keyword, at a `/*` or at a
    /// byte-order mark (anything after which the line's first word may still come). With
    /// `every_line`, just past every `\n` that is not inside a token.
    NewLine,
    /// Just past a `;`.
    Semicolon,
    /// Just past the `)` that brought the depth back to 0.
    Closed,
    /// A NUL byte, a Tcl-style parameter, or a string, quoted name or block comment over
    /// several lines: no verdict but "write".
    Unjudged,
}

/// Where [`skip`] stopped, why, and the parenthesis depth there.
#[derive(Clone, Copy)]
pub(super) struct Stop {
    pub(super) at: usize,
    pub(super) event: Event,
    pub(super) depth: usize,
}

/// The index of the first byte at or after `at` that needs a look, or the length of `sql`.
/// Eight bytes at a time: their classes are 0 where a byte needs no look, so one OR of the
/// eight says whether any does, and only then are they read again one by one, up to the
/// first that does. Most bytes of SQL go through the OR alone: placing each class in a word
/// of its own, to find the first by its trailing zeros, cost them a shift each.
///
/// Always inlined into [`skip`], its one caller, whose loop comes back here after each
/// byte that needed a look.
#[inline(always)]
const fn next_special(sql: &[u8], mut at: usize, table: &[u8; 256]) -> usize {
    // Checked: a start past the text ends the skip there, with no panic path in the wasm.
    while let Some((_, rest)) = sql.split_at_checked(at) {
        let Some(chunk) = rest.first_chunk::<8>() else {
            break;
        };
        let any = table[chunk[0] as usize]
            | table[chunk[1] as usize]
            | table[chunk[2] as usize]
            | table[chunk[3] as usize]
            | table[chunk[4] as usize]
            | table[chunk[5] as usize]
            | table[chunk[6] as usize]
            | table[chunk[7] as usize];
        if any != 0 {
            break;
        }
        at += 8;
    }
    while at < sql.len() && table[sql[at] as usize] == PLAIN {
        at += 1;
    }
    at
}

/// Skips from `start`, a token boundary, over text where no word can change the verdict, up
/// to the next place where something can: a line whose first word may matter, a `;`, the
/// end, or, when `depth` is above 0 (inside a `WITH`'s parentheses), the `)` that closes
/// the outermost one.
///
/// Strings, quoted names, comments and parameters are skipped whole, as [`next_token`]
/// would, but words and operators are not cut into tokens: each byte is looked up once in
/// a table. A `$` is always taken for the start of a parameter, even inside a name
/// (`a$b(`), which can only make the verdict more conservative.
///
/// At a line's start, the first word is read here when spaces alone come before it, and
/// skipped unless `matters` says it may change the verdict; then, and whenever something
/// else than spaces, a word or a token that cannot hide a word comes first (`/*`, a
/// byte-order mark), the caller reads the line's start itself ([`Event::NewLine`]). With
/// `every_line`, every line break stops the skip. Without `by_line` (text sent whole),
/// none does: a line break is a space.
pub(super) const fn skip(
    sql: &[u8],
    start: usize,
    depth: usize,
    every_line: bool,
    by_line: bool,
) -> Stop {
    let table = if depth == 0 { &BODY } else { &NESTED };
    let mut depth = depth;
    let mut at = start;
    let len = sql.len();
    loop {
        // The hot loop: most bytes of SQL need no look.
        at = next_special(sql, at, table);
        if at >= len {
            return Stop {
                at,
                event: Event::End,
                depth,
            };
        }
        let byte = sql[at];
        let span = match table[byte as usize] {
            // Sent whole, the text is one input to SQLite, for which `\n` is a space.
            NEW_LINE if !by_line => Span {
                end: at + 1,
                clean: true,
            },
            NEW_LINE if every_line => {
                return Stop {
                    at: at + 1,
                    event: Event::NewLine,
                    depth,
                };
            }
            NEW_LINE => {
                let line = at + 1;
                let first = line_start(sql, line);
                match byte_at(sql, first) {
                    // A comment that may end on this line, or a byte-order mark: the line's
                    // first word may come after it.
                    b'/' | 0xEF => {
                        return Stop {
                            at: line,
                            event: Event::NewLine,
                            depth,
                        };
                    }
                    byte if byte.is_ascii_alphabetic() => {
                        let end = word_end(sql, first);
                        if keyword::keyword(sql, first, end).matters_at_line_start() {
                            return Stop {
                                at: line,
                                event: Event::NewLine,
                                depth,
                            };
                        }
                        Span { end, clean: true }
                    }
                    // Anything else is judged as in the middle of a line.
                    _ => Span {
                        end: first,
                        clean: true,
                    },
                }
            }
            SEMICOLON => {
                return Stop {
                    at: at + 1,
                    event: Event::Semicolon,
                    depth,
                };
            }
            QUOTE => quoted_end(sql, at, byte, by_line),
            BRACKET => bracket_end(sql, at, by_line),
            DASH if byte_at(sql, at + 1) == b'-' => line_comment_end(sql, at),
            SLASH if byte_at(sql, at + 1) == b'*' => block_comment_end(sql, at, by_line),
            DASH | SLASH => Span {
                end: at + 1,
                clean: true,
            },
            PARAMETER => {
                let token = parameter(sql, at);
                Span {
                    end: token.end,
                    clean: !matches!(token.kind, Kind::Unjudged),
                }
            }
            OPEN => {
                depth += 1;
                Span {
                    end: at + 1,
                    clean: true,
                }
            }
            CLOSE => {
                // `depth` is above 0 here: only `NESTED` has this class.
                depth -= 1;
                if depth == 0 {
                    return Stop {
                        at: at + 1,
                        event: Event::Closed,
                        depth,
                    };
                }
                Span {
                    end: at + 1,
                    clean: true,
                }
            }
            _ => Span {
                end: at,
                clean: false,
            },
        };
        if !span.clean {
            return Stop {
                at: span.end,
                event: Event::Unjudged,
                depth,
            };
        }
        at = span.end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every token of `sql` with its kind, as text that may be run line by line.
    fn tokens(sql: &str) -> Vec<(Kind, &str)> {
        tokens_of(sql, true)
    }

    fn tokens_of(sql: &str, by_line: bool) -> Vec<(Kind, &str)> {
        let bytes = sql.as_bytes();
        let mut tokens = Vec::new();
        let mut start = 0;
        while start < bytes.len() {
            let token = next_token(bytes, start, by_line);
            assert!(token.end > start, "no progress at {start} in {sql:?}");
            let end = token.end.min(bytes.len());
            tokens.push((token.kind, &sql[start..end]));
            start = token.end;
        }
        tokens
    }

    use Kind::{
        CloseParen, Comment, Dot, LineBreak, OpenParen, Other, Parameter, Quoted, Semicolon, Space,
        Unjudged, Word,
    };

    /// Where SQLite's `sqlite3GetToken` ends each token (or, for numbers and operators,
    /// where it ends no earlier).
    #[test]
    fn tokens_end_where_sqlite_ends_them() {
        let cases: &[(&str, &[(Kind, &str)])] = &[
            (
                "SELECT  a.b;()",
                &[
                    (Word, "SELECT"),
                    (Space, "  "),
                    (Word, "a"),
                    (Dot, "."),
                    (Word, "b"),
                    (Semicolon, ";"),
                    (OpenParen, "("),
                    (CloseParen, ")"),
                ],
            ),
            (
                " \t\u{b}\u{c}\r\n x",
                &[(LineBreak, " \t\u{b}\u{c}\r\n "), (Word, "x")],
            ),
            (" \t\r x", &[(Space, " \t\r "), (Word, "x")]),
            ("'it''s'x", &[(Quoted, "'it''s'"), (Word, "x")]),
            (
                "'a\"'\"b'\"`",
                &[(Quoted, "'a\"'"), (Quoted, "\"b'\""), (Quoted, "`")],
            ),
            ("\"a\"\"b\"c", &[(Quoted, "\"a\"\"b\""), (Word, "c")]),
            ("`a``b`c", &[(Quoted, "`a``b`"), (Word, "c")]),
            ("''", &[(Quoted, "''")]),
            ("'a", &[(Quoted, "'a")]),
            ("[a]]x", &[(Quoted, "[a]"), (Other, "]"), (Word, "x")]),
            ("[a''b]c", &[(Quoted, "[a''b]"), (Word, "c")]),
            ("[a", &[(Quoted, "[a")]),
            (
                "-- c;\nx",
                &[(Comment, "-- c;"), (LineBreak, "\n"), (Word, "x")],
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
            (
                "$a::b c",
                &[(Parameter, "$a::b"), (Space, " "), (Word, "c")],
            ),
            (":a:b", &[(Parameter, ":a"), (Parameter, ":b")]),
            ("@1x#y", &[(Parameter, "@1x"), (Parameter, "#y")]),
            ("$(", &[(Other, "$"), (OpenParen, "(")]),
            ("$::x", &[(Parameter, "$::x")]),
            ("$a:", &[(Parameter, "$a"), (Other, ":")]),
            ("?1", &[(Parameter, "?1")]),
            ("?", &[(Parameter, "?")]),
            ("?12a", &[(Parameter, "?12"), (Word, "a")]),
            ("?1$a", &[(Parameter, "?1"), (Parameter, "$a")]),
            ("\u{FEFF}a", &[(Space, "\u{FEFF}"), (Word, "a")]),
            ("a\u{FEFF}b", &[(Word, "a\u{FEFF}b")]),
            ("\u{FF38}DELETE", &[(Word, "\u{FF38}DELETE")]),
            ("\u{FF3F}x", &[(Word, "\u{FF3F}x")]),
            ("\u{FEE0}x", &[(Word, "\u{FEE0}x")]),
            ("\u{EF}x", &[(Word, "\u{EF}x")]),
            ("é1_$x+", &[(Word, "é1_$x"), (Other, "+")]),
            ("1.5e3", &[(Word, "1"), (Dot, "."), (Word, "5e3")]),
            ("x'00'", &[(Word, "x"), (Quoted, "'00'")]),
        ];
        for (sql, expected) in cases {
            assert_eq!(&tokens(sql), expected, "tokens of {sql:?}");
        }
    }

    /// A skip that starts past the text ends there, as one that reaches the end does: no
    /// panic (in a Worker a panic kills the request), and none of the bounds checks'
    /// panic paths in the wasm.
    #[test]
    fn a_skip_past_the_text_ends_at_once() {
        for (sql, start) in [("", 1), ("SELECT 1", 9), ("SELECT 1", 40)] {
            let stop = skip(sql.as_bytes(), start, 0, false, true);
            assert_eq!(
                (stop.at, stop.event),
                (start, Event::End),
                "{sql:?} {start}"
            );
        }
    }

    #[test]
    fn tcl_parameters_and_nul_bytes_are_unjudged() {
        for sql in ["$a(x)", "$a::b(x)", ":a(", "@a(')", "#a()"] {
            assert_eq!(tokens(sql), [(Unjudged, sql)], "{sql:?}");
        }
        assert_eq!(tokens("?1$a(x)")[1], (Unjudged, "$a(x)"));
        for by_line in [true, false] {
            assert_eq!(
                next_token(b"ab", 2, by_line).kind,
                Unjudged,
                "the end reads as NUL"
            );
        }
        assert_eq!(tokens("a\0b"), [(Word, "a"), (Unjudged, "\0"), (Word, "b")]);
        for sql in ["'a\0'", "\"\0\"", "[\0]", "-- \0", "/* \0 */", "`\0`"] {
            assert_eq!(tokens(sql)[0].0, Unjudged, "{sql:?}");
        }
    }

    #[test]
    fn tokens_over_several_lines_are_unjudged() {
        assert_eq!(
            tokens("a \n'b\nc'-- d\n/*\n*/[e\n]`f\n`\"g\n\""),
            [
                (Word, "a"),
                (LineBreak, " \n"),
                (Unjudged, "'b\nc'"),
                (Comment, "-- d"),
                (LineBreak, "\n"),
                (Unjudged, "/*\n*/"),
                (Unjudged, "[e\n]"),
                (Unjudged, "`f\n`"),
                (Unjudged, "\"g\n\""),
            ]
        );
        assert_eq!(tokens("'a'\n"), [(Quoted, "'a'"), (LineBreak, "\n")]);
        assert_eq!(tokens("'a\rb'"), [(Quoted, "'a\rb'")]);
    }

    /// Sent to SQLite whole, the same tokens are judged: a line break inside them is part
    /// of the string, name or comment, as it is to SQLite. A NUL byte still is not.
    #[test]
    fn tokens_over_several_lines_are_judged_when_sent_whole() {
        assert_eq!(
            tokens_of("a \n'b\nc'-- d\n/*\n*/[e\n]`f\n`\"g\n\"", false),
            [
                (Word, "a"),
                (LineBreak, " \n"),
                (Quoted, "'b\nc'"),
                (Comment, "-- d"),
                (LineBreak, "\n"),
                (Comment, "/*\n*/"),
                (Quoted, "[e\n]"),
                (Quoted, "`f\n`"),
                (Quoted, "\"g\n\""),
            ]
        );
        for sql in ["'a\n\0'", "\"\n\0\"", "[\n\0]", "/*\n\0*/", "`\n\0`"] {
            assert_eq!(tokens_of(sql, false)[0].0, Unjudged, "{sql:?}");
        }
    }

    /// Every stop of `skip` over `sql`, from depth `depth`, with the text skipped, stopping
    /// at every line break.
    fn stops(sql: &str, depth: usize) -> Vec<(Event, &str, usize)> {
        stops_at(sql, depth, true)
    }

    fn stops_at(sql: &str, depth: usize, every_line: bool) -> Vec<(Event, &str, usize)> {
        stops_of(sql, depth, every_line, true)
    }

    fn stops_of(
        sql: &str,
        depth: usize,
        every_line: bool,
        by_line: bool,
    ) -> Vec<(Event, &str, usize)> {
        let bytes = sql.as_bytes();
        let mut stops = Vec::new();
        let mut at = 0;
        let mut depth = depth;
        loop {
            let stop = skip(bytes, at, depth, every_line, by_line);
            assert!(stop.at >= at, "skip went back in {sql:?}");
            stops.push((stop.event, &sql[at..stop.at.min(bytes.len())], stop.depth));
            if matches!(stop.event, Event::End | Event::Unjudged | Event::Closed) {
                return stops;
            }
            at = stop.at;
            depth = stop.depth;
        }
    }

    #[test]
    fn skip_stops_where_a_word_can_matter() {
        use Event::{Closed, End, NewLine, Semicolon};
        assert_eq!(
            stops(
                "a 'x;\r' \"y;\" `z;` [w;] -- c;\n/* ; */ $a::b :c @d #e ?1 - / x;y",
                0
            ),
            [
                (NewLine, "a 'x;\r' \"y;\" `z;` [w;] -- c;\n", 0),
                (Semicolon, "/* ; */ $a::b :c @d #e ?1 - / x;", 0),
                (End, "y", 0),
            ]
        );
        assert_eq!(
            stops("a (b) c", 0),
            [(End, "a (b) c", 0)],
            "parens do not count at depth 0"
        );
        assert_eq!(
            stops("(a ')' (b)) c) d", 1),
            [(Closed, "(a ')' (b)) c)", 0)]
        );
        assert_eq!(stops("(a\n)", 1), [(NewLine, "(a\n", 2), (End, ")", 1)]);
        assert_eq!(stops("a)", 1), [(Closed, "a)", 0)]);
        assert_eq!(stops("a ';' 'b", 0), [(End, "a ';' 'b", 0)]);
        assert_eq!(stops("a /* b", 0), [(End, "a /* b", 0)]);
    }

    /// Without `every_line`, a line's start stops the skip only where its first word may
    /// matter.
    #[test]
    fn skip_reads_the_first_word_of_a_line() {
        use Event::{End, NewLine, Semicolon};
        for sql in [
            "a\nFROM t",
            "a\n  FROM t\r\n\tWHERE b",
            "a\n(b)\n)\n'c'\n1\n$d\n?\n-e\n\n",
            "a\n-- DELETE\n  -- DROP\nb",
            "a\nselect\nvalues\nend\nas\nplan\nto\ndeleted\nreplaced\nx",
            "a\n\u{e9}DELETE",
        ] {
            assert_eq!(stops_at(sql, 0, false), [(End, sql, 0)], "{sql:?}");
        }
        for (sql, skipped) in [
            ("a\nDELETE", "a\n"),
            ("a\n  insert", "a\n"),
            ("a\n\treplace(", "a\n"),
            ("a\nWITH", "a\n"),
            ("a\nexplain", "a\n"),
            ("a\nReturning", "a\n"),
            ("a\nb\n vacuum", "a\nb\n"),
            ("a\n/* c */ b", "a\n"),
            ("a\n\u{FEFF}b", "a\n"),
            ("a\n\u{FEE0}b", "a\n"),
        ] {
            assert_eq!(stops_at(sql, 0, false)[0], (NewLine, skipped, 0), "{sql:?}");
        }
        assert_eq!(
            stops_at("a\n  b\n) c\nDROP", 1, false),
            [(Event::Closed, "a\n  b\n)", 0)]
        );
        assert_eq!(
            stops_at("(a\n  b;\n", 1, false),
            [(Semicolon, "(a\n  b;", 2), (End, "\n", 2)]
        );
    }

    #[test]
    fn skip_stops_at_what_it_cannot_judge() {
        for (sql, skipped) in [
            ("a\0b", "a"),
            ("a '\n'", "a '\n'"),
            ("a \"\n\"", "a \"\n\""),
            ("a `\n`", "a `\n`"),
            ("a [\n]", "a [\n]"),
            ("a /*\n*/", "a /*\n*/"),
            ("a -- \0", "a -- \0"),
            ("a '\0'", "a '\0'"),
            ("a $b(c) d", "a $b(c) d"),
            ("a$b(c)", "a$b(c)"),
            ("a :b::c(d)", "a :b::c(d)"),
        ] {
            assert_eq!(stops(sql, 0), [(Event::Unjudged, skipped, 0)], "{sql:?}");
        }
        assert_eq!(stops("(\0", 1), [(Event::Unjudged, "(", 2)]);
    }

    /// Sent whole, a line break is a space: no line stops the skip, and tokens over several
    /// lines are skipped like any other. A NUL byte, a Tcl-style parameter, a `;` and the
    /// closing `)` still stop it.
    #[test]
    fn skip_sent_whole_does_not_stop_at_lines() {
        use Event::{Closed, End, Semicolon, Unjudged};
        let sql = "a '\n' \"\n\" `\n` [\n] /*\n*/ -- c\nDELETE\n WITH\nexplain\n/* */ b\n";
        assert_eq!(stops_of(sql, 0, false, false), [(End, sql, 0)]);
        assert_eq!(
            stops_of("a\nb;\nDROP", 0, false, false),
            [(Semicolon, "a\nb;", 0), (End, "\nDROP", 0)]
        );
        assert_eq!(
            stops_of("(a\n)\n) DROP", 1, false, false),
            [(Closed, "(a\n)\n)", 0)]
        );
        for (sql, skipped) in [("a\n'\0'", "a\n'\0'"), ("a\n$b(c)", "a\n$b(c)")] {
            assert_eq!(
                stops_of(sql, 0, false, false),
                [(Unjudged, skipped, 0)],
                "{sql:?}"
            );
        }
    }

    #[test]
    fn the_first_byte_to_look_at_is_found_wherever_it_is_in_a_chunk() {
        // Every position across two whole chunks and a tail, for every byte of each table:
        // the search must neither skip a byte that needs a look nor stop at one that does
        // not.
        for (table, name) in [(&BODY, "BODY"), (&NESTED, "NESTED")] {
            for byte in 0..=255_u8 {
                for position in 0..40 {
                    let mut sql = vec![b'a'; 40];
                    sql[position] = byte;
                    let expected = if table[byte as usize] == PLAIN {
                        40
                    } else {
                        position
                    };
                    assert_eq!(
                        next_special(&sql, 0, table),
                        expected,
                        "{name}: byte {byte:#04x} at {position}"
                    );
                    let from = position.min(3);
                    assert_eq!(next_special(&sql, from, table), expected.max(from));
                }
            }
        }
    }
}
