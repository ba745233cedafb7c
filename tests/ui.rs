//! Compile-time behaviour of `#[d1_retry]`: every misuse is one error at the user's own
//! token (`tests/ui/*.rs` with their `.stderr`), and every supported shape compiles
//! (`tests/ui/pass/*.rs`). Snapshots are for the pinned toolchain; regenerate them with
//! `TRYBUILD=overwrite cargo test -p d1-retry --test ui` and read every one.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
