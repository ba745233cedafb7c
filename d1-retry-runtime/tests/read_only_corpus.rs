//! The read-only scanner measured against the project's own corpus, labelled by SQLite.
//!
//! The corpus is hand-written traps (`corpus/traps.rs`) plus thousands of statements
//! expanded from a grammar of every statement kind and lexical trap the scanner handles
//! (`corpus/grammar.rs`), from a fixed seed. Each text is labelled by SQLite itself when the
//! test runs (`corpus/oracle.rs`). The scanner must call no write read-only; the confusion
//! matrix is printed:
//!
//! ```text
//! cargo test -p d1-retry-runtime --test read_only_corpus -- --nocapture
//! ```
//!
//! `D1_RETRY_CORPUS_SEED=<n>` draws another corpus (the assertions hold for any seed).
//!
//! The same matrix over the external public corpus is a separate command, since that data
//! is not part of the repository: `bash scripts/public-corpus.sh` runs the ignored test
//! `public_corpus` of this file with `D1_RETRY_PUBLIC_CORPUS` pointing at the file, and fails
//! when it is missing.

mod corpus;

use std::collections::HashSet;

use corpus::grammar::{self, GRAMMAR, Generator, KINDS};
use corpus::matrix::{Matrix, Reason};
use corpus::oracle::{Label, Oracle};
use corpus::{jsonl, traps};
use d1_retry_runtime::is_read_only;

const SEED: u64 = 0x00D1_C0DE_5EED;

fn seed() -> u64 {
    match std::env::var("D1_RETRY_CORPUS_SEED") {
        Ok(text) => {
            let parsed = match text.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => text.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("D1_RETRY_CORPUS_SEED={text:?} is not a number"))
        }
        Err(_) => SEED,
    }
}

/// The corpus: every text with its kind, distinct.
struct Corpus {
    texts: Vec<(String, String)>,
    traps: usize,
    generator: Generator,
}

/// Hand-written traps first, then for each kind of [`KINDS`] its number of distinct texts.
fn corpus(seed: u64) -> Corpus {
    let mut seen = HashSet::new();
    let mut texts = Vec::new();
    for (_, sql) in traps::all() {
        assert!(seen.insert(sql.to_owned()), "trap written twice: {sql:?}");
        texts.push(("hand-written trap".to_owned(), sql.to_owned()));
    }
    let traps = texts.len();
    let mut generator = Generator::new(seed);
    for &(kind, count) in KINDS {
        let mut drawn = 0;
        let mut attempts = 0;
        while drawn < count {
            attempts += 1;
            assert!(
                attempts <= count * 20,
                "the grammar of `{kind}` cannot give {count} distinct texts"
            );
            let sql = generator.text(kind);
            if seen.insert(sql.clone()) {
                texts.push((kind.to_owned(), sql));
                drawn += 1;
            }
        }
    }
    Corpus {
        texts,
        traps,
        generator,
    }
}

#[test]
fn no_write_in_the_corpus_is_called_read_only() {
    let seed = seed();
    let corpus = corpus(seed);
    let oracle = Oracle::new();
    let mut matrix = Matrix::default();
    let mut unprepared = Vec::new();
    for (kind, sql) in &corpus.texts {
        match oracle.label(sql) {
            Ok(label) => matrix.record(
                kind,
                sql,
                label.writes(),
                !label.whole_writes && label.a_line_writes,
            ),
            Err(error) => unprepared.push(format!("  {kind}: {sql:?}: {error}")),
        }
    }
    println!(
        "corpus: {} statements ({} hand-written traps, {} generated from seed {seed:#x} over \
         {} statement kinds), each labelled by SQLite {} when the test runs\n",
        matrix.total(),
        corpus.traps,
        corpus.texts.len() - corpus.traps,
        KINDS.len(),
        Oracle::version(),
    );
    println!("{}", matrix.markdown());
    println!("{}", matrix.kinds_markdown());
    if std::env::var_os("SHOW_LOST_READS").is_some() {
        for (reason, texts) in &matrix.reads_called_writes {
            for sql in texts {
                println!("{reason:?}: {sql:?}");
            }
        }
    }

    // The grammar and the traps are SQL that SQLite prepares: a text that does not would
    // be measuring nothing.
    assert!(
        unprepared.is_empty(),
        "{} texts do not prepare:\n{}",
        unprepared.len(),
        unprepared.join("\n")
    );
    assert!(
        matrix.total() > 3_000,
        "{} statements: too few",
        matrix.total()
    );
    // The unforgivable error: a write called read-only could be retried and run twice.
    assert!(
        matrix.writes_called_reads.is_empty(),
        "SQLite says these write, the scanner says read-only:\n{}",
        matrix
            .writes_called_reads
            .iter()
            .map(|sql| format!("  {sql:?}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Every alternative of every rule is in the corpus: no statement kind or lexical trap
    // of the grammar went unmeasured.
    let unused: Vec<String> = GRAMMAR
        .iter()
        .zip(&corpus.generator.uses)
        .flat_map(|(rule, uses)| {
            uses.iter()
                .zip(rule.alternatives)
                .filter(|(n, _)| **n == 0)
                .map(move |(_, (_, template))| format!("  {}: {template:?}", rule.name))
        })
        .collect();
    assert!(unused.is_empty(), "never drawn:\n{}", unused.join("\n"));
    // Both verdicts are well represented, and the scanner keeps reads: calling everything a
    // write would pass the assertion above and retry nothing.
    assert!(
        matrix.reads() >= 1_000 && matrix.writes() >= 1_000,
        "{}",
        matrix.markdown()
    );
    assert!(
        matrix.reads_kept * 2 > matrix.reads(),
        "the scanner kept too few reads:\n{}",
        matrix.markdown()
    );
    assert_prepared(&matrix);
}

/// As prepared statements: no write called read-only, and every read `is_read_only` keeps
/// is kept (it is also a whole-text read), and more.
fn assert_prepared(matrix: &Matrix) {
    assert!(
        matrix.prepared_writes_called_reads.is_empty(),
        "SQLite says these write, the scanner says read-only as prepared statements:\n{}",
        matrix.prepared_writes_called_reads.join("\n")
    );
    assert!(
        matrix.prepared_reads_kept >= matrix.reads_kept,
        "prepared statements kept fewer reads than exec text:\n{}",
        matrix.markdown()
    );
}

/// The same seed gives the same corpus; another seed, another one.
#[test]
fn the_corpus_is_deterministic() {
    let first = corpus(SEED).texts;
    assert_eq!(first, corpus(SEED).texts);
    assert_ne!(first, corpus(SEED + 1).texts);
    assert_eq!(
        first.len(),
        traps::all().count() + KINDS.iter().map(|(_, n)| n).sum::<usize>()
    );
}

/// Every rule a template names exists, every rule can be reached, and a rule's first
/// alternative does not lead back to itself (the expansion falls back on it when too deep).
#[test]
fn the_grammar_is_well_formed() {
    let mut reached: HashSet<&str> = HashSet::from(["_", "_lead", "_trail"]);
    reached.extend(KINDS.iter().map(|(kind, _)| *kind));
    for rule in GRAMMAR {
        assert_eq!(
            grammar::rule_index(rule.name),
            GRAMMAR.iter().position(|r| r.name == rule.name).unwrap(),
            "rule `{}` defined twice",
            rule.name
        );
        for (_, template) in rule.alternatives {
            for name in grammar::references(template) {
                grammar::rule_index(name);
                reached.insert(name);
            }
        }
        assert!(
            !grammar::references(rule.alternatives[0].1).any(|name| name == rule.name),
            "the first alternative of `{}` is recursive",
            rule.name
        );
    }
    for rule in GRAMMAR {
        assert!(
            reached.contains(rule.name),
            "rule `{}` is never used",
            rule.name
        );
    }
}

/// The labels follow SQLite, and D1's ways of reading text on top of it.
#[test]
fn the_oracle_labels_the_way_d1_runs_text() {
    let oracle = Oracle::new();
    let label = |sql| oracle.label(sql).expect("prepares");
    let read = Label {
        whole_writes: false,
        a_line_writes: false,
    };
    assert_eq!(label("SELECT * FROM users"), read);
    assert_eq!(label("PRAGMA user_version"), read);
    assert_eq!(label("BEGIN"), read);
    assert_eq!(label("-- nothing"), read);
    assert!(label("DELETE FROM users").whole_writes);
    assert!(label("SELECT 1; DELETE FROM users").whole_writes);
    assert!(label("SELECT 1\0; DELETE FROM users").whole_writes);
    let by_lines = label("SELECT 1 /* x\n; DELETE FROM users; */");
    assert!(!by_lines.whole_writes && by_lines.a_line_writes);
    assert!(oracle.label("SELECT nothing FROM nowhere").is_err());
}

/// The report's reasons for reads called writes.
#[test]
fn lost_reads_are_explained() {
    let cases = [
        ("-- nothing", Reason::NoStatement),
        ("SELECT 1\0", Reason::Unjudged),
        ("SELECT $a(1)", Reason::Unjudged),
        ("PRAGMA user_version", Reason::Pragma),
        ("EXPLAIN PRAGMA table_info(users)", Reason::Pragma),
        ("SELECT 1; BEGIN", Reason::Transaction),
        ("/* c */ ATTACH ':memory:' AS aux", Reason::AttachDetach),
        ("REINDEX NOCASE", Reason::NoOpDdl),
        ("SELECT 1 AS\nreindex", Reason::LineBreak),
        ("SELECT 1 /* a\nb */", Reason::LineBreak),
        ("-- c\nSELECT 'a\nb'", Reason::LineBreak),
        ("SELECT id,\nreplace FROM users", Reason::LineBreak),
        (
            "WITH analyze AS (SELECT 1 AS x) SELECT x FROM analyze",
            Reason::KeywordName,
        ),
    ];
    for (sql, reason) in cases {
        assert!(!is_read_only(sql), "{sql:?}");
        assert_eq!(Reason::of(sql), reason, "{sql:?}");
    }
}

/// The scanner over the external public corpus (`../shared/sql-corpus/public.jsonl`, data
/// from public repositories that is not part of this one), with the labels stored in it.
/// Run by `bash scripts/public-corpus.sh`; fails when the file is missing.
#[test]
#[ignore = "needs the external public corpus: run `bash scripts/public-corpus.sh`"]
fn public_corpus() {
    let path = std::env::var_os("D1_RETRY_PUBLIC_CORPUS")
        .expect("D1_RETRY_PUBLIC_CORPUS must name the public corpus (public.jsonl)");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read the public corpus {path:?}: {error}"));
    let mut matrix = Matrix::default();
    for (number, line) in text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
    {
        let entry = jsonl::parse_entry(line)
            .unwrap_or_else(|error| panic!("{path:?} line {}: {error}", number + 1));
        matrix.record(&entry.category, &entry.sql, !entry.sqlite_readonly, false);
    }
    println!(
        "public corpus: {} statements from {}, each labelled by SQLite's \
         `sqlite3_stmt_readonly()` when it was collected\n",
        matrix.total(),
        path.to_string_lossy()
    );
    println!("{}", matrix.markdown());
    println!("{}", matrix.kinds_markdown());
    assert!(
        matrix.total() > 1_000,
        "the public corpus looks truncated: {} statements",
        matrix.total()
    );
    assert!(
        matrix.writes_called_reads.is_empty(),
        "SQLite says these write, the scanner says read-only:\n{}",
        matrix.writes_called_reads.join("\n")
    );
    assert!(
        matrix.reads_kept * 2 > matrix.reads(),
        "the scanner kept too few reads:\n{}",
        matrix.markdown()
    );
    assert_prepared(&matrix);
}

#[test]
fn json_reader_handles_escapes() {
    let line = r#"{"sql": "SELECT \"a\\b\"\n\t'\u00e9' -- \ud83d\ude00 \/", "sqlite_readonly": true, "n": -1.5e3, "x": null, "category": "select"}"#;
    assert_eq!(
        jsonl::parse_entry(line),
        Ok(jsonl::Entry {
            sql: "SELECT \"a\\b\"\n\t'é' -- 😀 /".to_owned(),
            sqlite_readonly: true,
            category: "select".to_owned(),
        })
    );
    assert_eq!(
        jsonl::parse_entry(r#"{"sqlite_readonly": false, "sql": "DELETE FROM t"}"#)
            .map(|e| (e.sqlite_readonly, e.category)),
        Ok((false, "uncategorised".to_owned()))
    );
    assert!(jsonl::parse_entry(r#"{"sql": "\ud83d", "sqlite_readonly": true}"#).is_err());
    assert!(jsonl::parse_entry(r#"{"sql": "SELECT 1", "sqlite_readonly": "yes"}"#).is_err());
    assert!(jsonl::parse_entry(r#"{"sql": "SELECT 1"#).is_err());
}
