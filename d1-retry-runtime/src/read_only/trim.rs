//! The text a verdict judges: without the white space JavaScript's `String.prototype.trim`
//! takes off its ends.
//!
//! D1's `exec()` trims its text this way before it cuts it into lines
//! (`query.trim().split('\n')` in workerd's D1 API), and JavaScript's white space is not
//! SQLite's: SQLite reads U+00A0, U+3000 and the other Unicode spaces as letters of a name,
//! so to it `VACUUM\u{a0}` is one unknown word, a line it refuses, where `exec()` trims it
//! to `VACUUM` and runs it. So [`is_read_only`](super::is_read_only) judges the text
//! trimmed; only its two ends, as `exec()` trims them: a line in the middle keeps its
//! spaces, and SQLite sees them.
//!
//! [`is_read_only_prepared`](super::is_read_only_prepared) judges the same trimmed text, so
//! that it keeps every read `is_read_only` keeps (`EXPLAIN BEGIN\u{a0}`). A prepared
//! statement reaches SQLite untrimmed, and the trim never hides a write from it: a text
//! that starts with such a space is one SQLite refuses (no statement starts with a name),
//! save a byte-order mark, which SQLite skips there as the scanner does; and one at the end
//! only shortens the last word, which can only make it a keyword.

/// `sql` without the JavaScript white space at its start and its end: the text `exec()`
/// cuts into lines. The rest is never cut inside a character: only whole characters are
/// trimmed.
pub(super) const fn trimmed(mut sql: &[u8]) -> &[u8] {
    // Nearly every text starts and ends with an ASCII byte that is not a space: nothing to
    // trim, and no character to decode.
    if let ([first, ..], [.., last]) = (sql, sql)
        && is_plain(*first)
        && is_plain(*last)
    {
        return sql;
    }
    while let Some((_, rest)) = sql.split_at_checked(space_at_start(sql)) {
        if rest.len() == sql.len() {
            break;
        }
        sql = rest;
    }
    while let Some((head, _)) = sql.split_at_checked(sql.len().saturating_sub(space_at_end(sql))) {
        if head.len() == sql.len() {
            break;
        }
        sql = head;
    }
    sql
}

/// The length of the white space character `sql` starts with, or 0. Its length is read
/// from its first byte (UTF-8), and only that many bytes are looked up.
const fn space_at_start(sql: &[u8]) -> usize {
    let len = match sql {
        [0xC2, ..] => 2,
        [0xE0..=0xEF, ..] => 3,
        _ => 1,
    };
    match sql.split_at_checked(len) {
        Some((char, _)) if is_space(char) => len,
        _ => 0,
    }
}

/// The length of the white space character `sql` ends with, or 0. Its length is read from
/// where its first byte would be (UTF-8: the bytes after a lead byte are not ASCII).
const fn space_at_end(sql: &[u8]) -> usize {
    let len = match sql {
        [.., 0xC2, _] => 2,
        [.., 0xE0..=0xEF, _, _] => 3,
        _ => 1,
    };
    match sql.split_at_checked(sql.len().saturating_sub(len)) {
        Some((_, char)) if is_space(char) => len,
        _ => 0,
    }
}

/// Whether `byte` is a character of its own (ASCII) that is not white space.
const fn is_plain(byte: u8) -> bool {
    byte.is_ascii() && !is_ascii_space(byte)
}

/// JavaScript's white space among ASCII characters: tab, `\n`, vertical tab, form feed,
/// `\r`, space.
const fn is_ascii_space(byte: u8) -> bool {
    matches!(byte, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

/// Whether `char`, the UTF-8 of one character, is white space to JavaScript's `trim`: the
/// ECMAScript `WhiteSpace` (tab, vertical tab, form feed, space, U+FEFF and every space
/// separator of Unicode, category Zs) and `LineTerminator` (`\n`, `\r`, U+2028, U+2029).
/// U+0085, which Rust's `char::is_whitespace` includes, is neither.
const fn is_space(char: &[u8]) -> bool {
    // The character's bytes as one number: a few comparisons, where a match on the byte
    // slices compiles to a tree of them per length.
    let bytes = match *char {
        [byte] => return is_ascii_space(byte),
        [a, b] => u32::from_be_bytes([0, 0, a, b]),
        [a, b, c] => u32::from_be_bytes([0, a, b, c]),
        _ => return false,
    };
    matches!(
        bytes,
        // U+00A0
        0xC2A0
        // U+1680
        | 0xE19A80
        // U+2000 to U+200A
        | 0xE28080
            ..=0xE2808A
        // U+2028, U+2029, U+202F
        | 0xE280A8 | 0xE280A9 | 0xE280AF
        // U+205F
        | 0xE2819F
        // U+3000
        | 0xE38080
        // U+FEFF
        | 0xEFBBBF
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JavaScript's white space, from the ECMAScript definition: `WhiteSpace` and
    /// `LineTerminator`, with every Zs character of the Unicode version Rust carries.
    fn is_js_space(c: char) -> bool {
        matches!(
            c,
            '\t' | '\u{B}' | '\u{C}' | '\u{FEFF}' | '\n' | '\r' | '\u{2028}' | '\u{2029}'
        ) || (c.is_whitespace() && !c.is_control() && !matches!(c, '\u{2028}' | '\u{2029}'))
    }

    #[test]
    fn trims_what_javascript_trims_at_both_ends() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            let text = format!("{c}{c}SELECT 1{c}\n{c}VACUUM{c}{c}");
            let expected = text.trim_matches(is_js_space);
            let got = core::str::from_utf8(trimmed(text.as_bytes())).unwrap();
            assert_eq!(got, expected, "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn the_set_is_javascripts() {
        let spaces: Vec<u32> = (0..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|&c| is_js_space(c))
            .map(u32::from)
            .collect();
        assert_eq!(
            spaces,
            [
                0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
                0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F,
                0x205F, 0x3000, 0xFEFF,
            ]
        );
    }

    #[test]
    fn keeps_the_middle_and_whole_characters() {
        assert_eq!(trimmed(b""), b"");
        assert_eq!(trimmed(" \u{a0}\u{3000} ".as_bytes()), b"");
        assert_eq!(
            trimmed("\u{a0}a\u{a0}\nb\u{a0}".as_bytes()),
            "a\u{a0}\nb".as_bytes()
        );
        // The last bytes of U+00A1 and U+3001 are not spaces on their own.
        assert_eq!(trimmed("a\u{a1}".as_bytes()), "a\u{a1}".as_bytes());
        assert_eq!(trimmed("a\u{3001}".as_bytes()), "a\u{3001}".as_bytes());
        // Bytes that are not UTF-8 are left as they are.
        assert_eq!(trimmed(&[b'a', 0xA0]), &[b'a', 0xA0]);
        assert_eq!(trimmed(&[0x80, 0x80, b'a']), &[0x80, 0x80, b'a']);
    }
}
