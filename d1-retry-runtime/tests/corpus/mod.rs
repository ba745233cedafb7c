//! The read-only scanner's own corpus and its measurement, shared by `read_only_corpus.rs`.
//!
//! - [`grammar`]: a seeded generator that expands a grammar of every statement kind and
//!   lexical trap the scanner handles;
//! - [`traps`]: hand-written statements aimed at the scanner's edges;
//! - [`oracle`]: SQLite's verdict on each text, asked through rusqlite when the test runs;
//! - [`matrix`]: the confusion matrix, and why reads were called writes;
//! - [`jsonl`]: a reader for the external public corpus, measured by a separate command.

pub mod grammar;
pub mod jsonl;
pub mod matrix;
pub mod oracle;
pub mod traps;
