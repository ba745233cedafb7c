//! Compile-time behaviour of `#[d1_retry]`: every misuse is one error at the user's own
//! token (`tests/ui/*.rs` with their `.stderr`), and every supported shape compiles
//! (`tests/ui/pass/*.rs`, warning-free, run through the stand-in D1 of
//! `tests/ui/support/db.rs`, whose types are `D1Receiver`s so that the retrying path is the
//! one compiled). Snapshots are for the pinned toolchain; regenerate them with
//! `TRYBUILD=overwrite cargo test -p d1-retry --test ui` and read every one.
//!
//! `tests/ui/macro_bugs/*.rs` is not run: shapes that should pass but do not yet, each
//! saying what goes wrong; move one to `pass/` once the macro is fixed.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
