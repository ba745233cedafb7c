//! What a bare word means to the read-only verdict.
//!
//! SQLite keywords are ASCII and case-insensitive, and a keyword is always a whole word:
//! `deleted_at`, `DELETE1` or `délete` are names (see `lexer::is_identifier_byte`).
//!
//! The scanner only asks at the few places where a word can matter (a statement's start, a
//! line's start, the top level of a `WITH`, the statement after `EXPLAIN`), so the look-up
//! is simple: the word, upper-cased, packed into one integer and matched against the
//! keywords packed the same way.

/// The keywords the verdict depends on; every other word is [`Keyword::None`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Keyword {
    /// `SELECT`: begins a read.
    Select,
    /// `VALUES`: begins a read.
    Values,
    /// `WITH`: begins a read or, after its common table expressions, a write.
    With,
    /// `EXPLAIN`: followed by the statement it explains, with the same verdict in SQLite.
    Explain,
    /// `QUERY`, in `EXPLAIN QUERY PLAN`.
    Query,
    /// `PLAN`, in `EXPLAIN QUERY PLAN`.
    Plan,
    /// `REPLACE`: the `replace()` string function, or a write (`REPLACE INTO`).
    Replace,
    /// `INSERT`.
    Insert,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// `CREATE`.
    Create,
    /// `DROP`.
    Drop,
    /// `ALTER`.
    Alter,
    /// `VACUUM`.
    Vacuum,
    /// `ANALYZE`.
    Analyze,
    /// `REINDEX`.
    Reindex,
    /// `PRAGMA`.
    Pragma,
    /// `ATTACH`.
    Attach,
    /// `DETACH`.
    Detach,
    /// `BEGIN`.
    Begin,
    /// `COMMIT`.
    Commit,
    /// `ROLLBACK`.
    Rollback,
    /// `SAVEPOINT`.
    Savepoint,
    /// `RELEASE`.
    Release,
    /// `RETURNING`.
    Returning,
    /// `END`, which is also `COMMIT`.
    End,
    /// `DEFERRED`, in `BEGIN DEFERRED`.
    Deferred,
    /// `TRANSACTION`, in `BEGIN`, `COMMIT`, `END` and `ROLLBACK`.
    Transaction,
    /// `TO`, in `ROLLBACK TO`.
    To,
    /// `DATABASE`, in `ATTACH` and `DETACH`.
    Database,
    /// `AS`, in `ATTACH`.
    As,
    /// Any other word: a name, or a keyword the verdict does not depend on.
    None,
}

impl Keyword {
    /// Whether the word, first on a line, may change the verdict: D1's `exec()` runs the
    /// line on its own, so there it starts a statement.
    pub(super) const fn matters_at_line_start(self) -> bool {
        self.writes() || matches!(self, Keyword::Replace | Keyword::With | Keyword::Explain)
    }

    /// Whether the word begins a statement that can write (`WITH` and `EXPLAIN` aside: the
    /// statement they lead to starts with one of these), or is `RETURNING`, which only a
    /// write can have. The transaction statements and `ATTACH` / `DETACH` are here although
    /// SQLite calls most of them read-only: D1 refuses them, D1's own rule does not retry
    /// them, and `BEGIN IMMEDIATE` does write. `REPLACE` is not: it is also a function.
    pub(super) const fn writes(self) -> bool {
        matches!(
            self,
            Keyword::Insert
                | Keyword::Update
                | Keyword::Delete
                | Keyword::Create
                | Keyword::Drop
                | Keyword::Alter
                | Keyword::Vacuum
                | Keyword::Analyze
                | Keyword::Reindex
                | Keyword::Pragma
                | Keyword::Attach
                | Keyword::Detach
                | Keyword::Begin
                | Keyword::Commit
                | Keyword::Rollback
                | Keyword::Savepoint
                | Keyword::Release
                | Keyword::Returning
        )
    }
}

/// Every keyword of [`Keyword`] but [`Keyword::None`], spelled in upper case, shortest
/// first.
const KEYWORDS: [(&[u8], Keyword); 31] = [
    (b"AS", Keyword::As),
    (b"TO", Keyword::To),
    (b"END", Keyword::End),
    (b"WITH", Keyword::With),
    (b"PLAN", Keyword::Plan),
    (b"DROP", Keyword::Drop),
    (b"QUERY", Keyword::Query),
    (b"ALTER", Keyword::Alter),
    (b"BEGIN", Keyword::Begin),
    (b"SELECT", Keyword::Select),
    (b"VALUES", Keyword::Values),
    (b"INSERT", Keyword::Insert),
    (b"UPDATE", Keyword::Update),
    (b"DELETE", Keyword::Delete),
    (b"CREATE", Keyword::Create),
    (b"VACUUM", Keyword::Vacuum),
    (b"PRAGMA", Keyword::Pragma),
    (b"ATTACH", Keyword::Attach),
    (b"DETACH", Keyword::Detach),
    (b"COMMIT", Keyword::Commit),
    (b"EXPLAIN", Keyword::Explain),
    (b"REPLACE", Keyword::Replace),
    (b"ANALYZE", Keyword::Analyze),
    (b"REINDEX", Keyword::Reindex),
    (b"RELEASE", Keyword::Release),
    (b"ROLLBACK", Keyword::Rollback),
    (b"DEFERRED", Keyword::Deferred),
    (b"DATABASE", Keyword::Database),
    (b"SAVEPOINT", Keyword::Savepoint),
    (b"RETURNING", Keyword::Returning),
    (b"TRANSACTION", Keyword::Transaction),
];

/// The longest keyword: `TRANSACTION`.
const LONGEST: usize = 11;

/// For each letter (`byte & 31`), the lengths of the keywords that begin with it, as bits:
/// most words are told apart from every keyword by this alone.
const LENGTHS: [u16; 32] = {
    let mut lengths = [0; 32];
    let mut index = 0;
    while index < KEYWORDS.len() {
        let keyword = KEYWORDS[index].0;
        lengths[(keyword[0] & 31) as usize] |= 1 << keyword.len();
        index += 1;
    }
    lengths
};

/// Clears the bit that makes an ASCII letter lower case. Applied to any identifier byte, it
/// gives an upper-case letter only for a letter: digits, `_`, `$` and non-ASCII bytes never
/// become one.
const UPPER: u64 = 0xDFDF_DFDF_DFDF_DFDF;

/// Up to the first 8 bytes of `word`, one byte per 8 bits from the lowest.
const fn head(word: &[u8], start: usize, len: usize) -> u64 {
    let len = if len < 8 { len } else { 8 };
    // Checked, as every index here: a range past the text reads as no byte, not a panic.
    let Some((_, rest)) = word.split_at_checked(start) else {
        return 0;
    };
    if let Some(chunk) = rest.first_chunk::<8>() {
        let all = u64::from_le_bytes(*chunk);
        return if len == 8 {
            all
        } else {
            all & ((1 << (8 * len)) - 1)
        };
    }
    let mut packed = 0;
    let mut index = 0;
    while index < len && index < rest.len() {
        packed |= (rest[index] as u64) << (8 * index);
        index += 1;
    }
    packed
}

/// What [`keyword`] reads at run time is made from [`KEYWORDS`] at compile time, in the
/// same order: the heads, the tails and the keywords below. Only these reach the binary,
/// not `KEYWORDS`, whose words and slices would add 560 bytes to a Worker's wasm for a
/// look-up that needs neither.
///
/// Each keyword's first 8 bytes, packed as [`head`] packs them.
const HEADS: [u64; KEYWORDS.len()] = {
    let mut heads = [0; KEYWORDS.len()];
    let mut index = 0;
    while index < KEYWORDS.len() {
        let keyword = KEYWORDS[index].0;
        heads[index] = head(keyword, 0, keyword.len());
        index += 1;
    }
    heads
};

/// Each keyword's bytes after the first 8, packed the same way: at most `LONGEST - 8`
/// of them, so a `u32` holds them.
const TAILS: [u32; KEYWORDS.len()] = {
    assert!(LONGEST - 8 <= 4, "a keyword's tail must fit in a u32");
    let mut tails = [0; KEYWORDS.len()];
    let mut index = 0;
    while index < KEYWORDS.len() {
        let keyword = KEYWORDS[index].0;
        if keyword.len() > 8 {
            tails[index] = head(keyword, 8, keyword.len() - 8) as u32;
        }
        index += 1;
    }
    tails
};

/// Each keyword's [`Keyword`].
const KINDS: [Keyword; KEYWORDS.len()] = {
    let mut kinds = [Keyword::None; KEYWORDS.len()];
    let mut index = 0;
    while index < KEYWORDS.len() {
        kinds[index] = KEYWORDS[index].1;
        index += 1;
    }
    kinds
};

/// For each length, the range of [`KEYWORDS`] of that length.
const BY_LENGTH: [(u8, u8); LONGEST + 1] = {
    assert!(
        KEYWORDS.len() <= u8::MAX as usize,
        "a keyword's index must fit in a u8"
    );
    let mut ranges = [(0, 0); LONGEST + 1];
    let mut index = 0;
    while index < KEYWORDS.len() {
        let len = KEYWORDS[index].0.len();
        if ranges[len].1 == 0 {
            ranges[len].0 = index as u8;
        }
        ranges[len].1 = index as u8 + 1;
        index += 1;
    }
    ranges
};

/// The keyword `sql[start..end]` is, ignoring ASCII case; the range is one word.
pub(super) const fn keyword(sql: &[u8], start: usize, end: usize) -> Keyword {
    let len = end - start;
    let Some((_, [first, ..])) = sql.split_at_checked(start) else {
        return Keyword::None;
    };
    let first = *first;
    if len > LONGEST
        || !first.is_ascii_alphabetic()
        || LENGTHS[(first & 31) as usize] & (1 << len) == 0
    {
        return Keyword::None;
    }
    let word = head(sql, start, len) & UPPER;
    let tail = if len > 8 {
        (head(sql, start + 8, len - 8) & UPPER) as u32
    } else {
        0
    };
    let (index, end) = BY_LENGTH[len];
    let mut index = index as usize;
    while index < end as usize && index < HEADS.len() {
        if HEADS[index] == word && TAILS[index] == tail {
            return KINDS[index];
        }
        index += 1;
    }
    Keyword::None
}

/// Pragmas that SQLite calls read-only when they are only read (no `=` and no argument),
/// so that `EXPLAIN PRAGMA name` is read-only too. `read_only_sqlite.rs` checks each against
/// SQLite, and checks that no other pragma SQLite knows is taken for one of these.
/// `journal_mode`, `wal_checkpoint`, `incremental_vacuum` and `optimize` are not here: they
/// write, even when only read, or may.
pub(super) const READ_PRAGMAS: [&[u8]; 24] = [
    b"application_id",
    b"auto_vacuum",
    b"busy_timeout",
    b"cache_size",
    b"collation_list",
    b"compile_options",
    b"data_version",
    b"database_list",
    b"defer_foreign_keys",
    b"encoding",
    b"foreign_key_check",
    b"foreign_keys",
    b"freelist_count",
    b"function_list",
    b"integrity_check",
    b"page_count",
    b"page_size",
    b"pragma_list",
    b"quick_check",
    b"recursive_triggers",
    b"schema_version",
    b"table_list",
    b"temp_store",
    b"user_version",
];

/// Whether `sql[start..end]` names one of [`READ_PRAGMAS`], ignoring ASCII case.
pub(super) const fn is_read_pragma(sql: &[u8], start: usize, end: usize) -> bool {
    let Some((_, word)) = sql.split_at_checked(start) else {
        return false;
    };
    let mut pragma = 0;
    while pragma < READ_PRAGMAS.len() {
        let name = READ_PRAGMAS[pragma];
        if name.len() == end - start {
            let mut index = 0;
            while index < name.len()
                && index < word.len()
                && word[index].to_ascii_lowercase() == name[index]
            {
                index += 1;
            }
            if index == name.len() {
                return true;
            }
        }
        pragma += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(word: &str) -> Keyword {
        keyword(word.as_bytes(), 0, word.len())
    }

    #[test]
    fn keywords_ignore_ascii_case_only() {
        assert_eq!(of("select"), Keyword::Select);
        assert_eq!(of("SeLeCt"), Keyword::Select);
        assert_eq!(of("TRANSACTION"), Keyword::Transaction);
        assert_eq!(of("transactions"), Keyword::None);
        assert_eq!(of("SELECTS"), Keyword::None);
        assert_eq!(of("SELEC"), Keyword::None);
        assert_eq!(of("ＳＥＬＥＣＴ"), Keyword::None);
        assert_eq!(of("délete"), Keyword::None);
        assert_eq!(of("t"), Keyword::None);
        assert_eq!(of("a_very_long_name_indeed"), Keyword::None);
        assert_eq!(of("ENDS"), Keyword::None);
        assert_eq!(of("to"), Keyword::To);
        // Words that pass the first-letter-and-length filter but are no keyword.
        assert_eq!(of("transactioz"), Keyword::None);
        assert_eq!(of("Tx"), Keyword::None);
        assert_eq!(of("withs"), Keyword::None);
        assert_eq!(of("SAVEPOINTS"), Keyword::None);
        assert_eq!(of("RETURNINH"), Keyword::None);
    }

    /// A range past the text reads as no byte: no keyword, no pragma, no panic (in a
    /// Worker a panic kills the request). The lexer never asks this, which is why the
    /// checks cost nothing at run time; they took the bounds checks' panic paths out of
    /// the wasm.
    #[test]
    fn a_range_past_the_text_is_no_word() {
        assert_eq!(keyword(b"SELECT", 6, 12), Keyword::None);
        assert_eq!(keyword(b"SELECT", 9, 15), Keyword::None);
        // Inside the text but running past it: the bytes that are there, and no more.
        assert_eq!(keyword(b"EXPLAI", 0, 7), Keyword::None);
        assert_eq!(head(b"SELECT", 7, 3), 0);
        assert_eq!(head(b"SEL", 1, 5), u64::from(b'E') | u64::from(b'L') << 8);
        assert!(!is_read_pragma(b"user_version", 13, 25));
        assert!(!is_read_pragma(b"user_versio", 0, 12));
        assert!(is_read_pragma(b"user_version", 0, 12));
    }

    #[test]
    fn every_keyword_is_found() {
        let all = [
            ("SELECT", Keyword::Select, false),
            ("VALUES", Keyword::Values, false),
            ("WITH", Keyword::With, false),
            ("EXPLAIN", Keyword::Explain, false),
            ("QUERY", Keyword::Query, false),
            ("PLAN", Keyword::Plan, false),
            ("REPLACE", Keyword::Replace, false),
            ("INSERT", Keyword::Insert, true),
            ("UPDATE", Keyword::Update, true),
            ("DELETE", Keyword::Delete, true),
            ("CREATE", Keyword::Create, true),
            ("DROP", Keyword::Drop, true),
            ("ALTER", Keyword::Alter, true),
            ("VACUUM", Keyword::Vacuum, true),
            ("ANALYZE", Keyword::Analyze, true),
            ("REINDEX", Keyword::Reindex, true),
            ("PRAGMA", Keyword::Pragma, true),
            ("ATTACH", Keyword::Attach, true),
            ("DETACH", Keyword::Detach, true),
            ("BEGIN", Keyword::Begin, true),
            ("COMMIT", Keyword::Commit, true),
            ("ROLLBACK", Keyword::Rollback, true),
            ("SAVEPOINT", Keyword::Savepoint, true),
            ("RELEASE", Keyword::Release, true),
            ("RETURNING", Keyword::Returning, true),
            ("END", Keyword::End, false),
            ("DEFERRED", Keyword::Deferred, false),
            ("TRANSACTION", Keyword::Transaction, false),
            ("TO", Keyword::To, false),
            ("DATABASE", Keyword::Database, false),
            ("AS", Keyword::As, false),
        ];
        for (word, expected, writes) in all {
            assert_eq!(of(word), expected, "{word}");
            assert_eq!(of(&word.to_ascii_lowercase()), expected, "{word}");
            assert_eq!(expected.writes(), writes, "{word}");
        }
        assert!(!Keyword::None.writes());
    }

    #[test]
    fn read_pragmas_are_found() {
        for name in READ_PRAGMAS {
            let name = std::str::from_utf8(name).unwrap();
            let upper = name.to_ascii_uppercase();
            assert!(is_read_pragma(name.as_bytes(), 0, name.len()), "{name}");
            assert!(is_read_pragma(upper.as_bytes(), 0, upper.len()), "{name}");
        }
        for name in [
            "journal_mode",
            "user_versions",
            "user_versio",
            "optimize",
            "",
        ] {
            assert!(!is_read_pragma(name.as_bytes(), 0, name.len()), "{name}");
        }
        // Only the range counts.
        assert!(is_read_pragma(b"xuser_version", 1, 13));
        assert!(!is_read_pragma(b"user_version2", 0, 13));
    }
}
