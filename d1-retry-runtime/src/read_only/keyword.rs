//! What a bare word means to the read-only verdict.
//!
//! SQLite keywords are ASCII and case-insensitive, and a keyword is always a whole word:
//! `deleted_at`, `DELETE1` or `délete` are names (see `lexer::is_identifier_byte`).

use super::lexer::byte_at;

/// The meaning of one word.
#[derive(Clone, Copy)]
pub(super) enum Role {
    /// `SELECT`, `VALUES`, `WITH`: a statement that begins with one of these may be a read.
    ReadStart,
    /// `EXPLAIN`: followed by the statement it explains, with the same verdict.
    Explain,
    /// `QUERY`, in `EXPLAIN QUERY PLAN`.
    Query,
    /// `PLAN`, in `EXPLAIN QUERY PLAN`.
    Plan,
    /// `AS`: the word after it is an alias, never a keyword.
    As,
    /// `REPLACE`: the `replace()` string function, or a write (`REPLACE INTO`, `OR REPLACE`).
    Replace,
    /// A keyword that writes, or that begins a statement that can write.
    Write,
    /// Anything else: a name, or a keyword that cannot write.
    Other,
}

/// Keywords that begin every kind of SQLite statement that can write (`WITH` and `EXPLAIN`
/// aside: the statement they lead to starts with one of these), plus `RETURNING`, which
/// only a write can have. The transaction statements and `ATTACH`/`DETACH` are here although
/// SQLite calls most of them read-only: D1 refuses them, D1's own rule does not retry them,
/// and `BEGIN IMMEDIATE` does write.
const WRITES: [&[u8]; 18] = [
    b"INSERT",
    b"UPDATE",
    b"DELETE",
    b"CREATE",
    b"DROP",
    b"ALTER",
    b"VACUUM",
    b"ANALYZE",
    b"REINDEX",
    b"PRAGMA",
    b"ATTACH",
    b"DETACH",
    b"BEGIN",
    b"COMMIT",
    b"ROLLBACK",
    b"SAVEPOINT",
    b"RELEASE",
    b"RETURNING",
];

/// The role of the word `sql[start..end]`.
pub(super) const fn role(sql: &[u8], start: usize, end: usize) -> Role {
    let word = Word { sql, start, end };
    if word.is(b"SELECT") || word.is(b"VALUES") || word.is(b"WITH") {
        Role::ReadStart
    } else if word.is(b"EXPLAIN") {
        Role::Explain
    } else if word.is(b"QUERY") {
        Role::Query
    } else if word.is(b"PLAN") {
        Role::Plan
    } else if word.is(b"AS") {
        Role::As
    } else if word.is(b"REPLACE") {
        Role::Replace
    } else if word.is_any(&WRITES) {
        Role::Write
    } else {
        Role::Other
    }
}

#[derive(Clone, Copy)]
struct Word<'a> {
    sql: &'a [u8],
    start: usize,
    end: usize,
}

impl Word<'_> {
    /// Whether the word is `keyword` (given in upper case), ignoring ASCII case.
    const fn is(self, keyword: &[u8]) -> bool {
        if self.start + keyword.len() != self.end {
            return false;
        }
        let mut index = 0;
        while index < keyword.len() {
            let byte = byte_at(self.sql, self.start + index);
            if byte.to_ascii_uppercase() != keyword[index] {
                return false;
            }
            index += 1;
        }
        true
    }

    const fn is_any(self, keywords: &[&[u8]]) -> bool {
        let mut index = 0;
        while index < keywords.len() {
            if self.is(keywords[index]) {
                return true;
            }
            index += 1;
        }
        false
    }
}
