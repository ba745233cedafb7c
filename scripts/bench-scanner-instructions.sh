#!/usr/bin/env bash
# The read-only scanner's work in instructions: a figure this machine's noise does not move
# (wall time moves by a third from one hour to the next here), for comparing two trees.
#
# Builds, in a temporary folder, a program that scans the sets of benches/read_only (the
# full scan of 2,000 single-statement reads, the mix of 2,000 D1-style calls, the 104-byte
# read) with this checkout's `is_read_only` and `is_read_only_prepared`, and runs it under
# valgrind's cachegrind twice per set and verdict: without passes, then with N passes; the
# difference over N is the instructions of one pass over the set, generation left out.
#
# Usage: scripts/bench-scanner-instructions.sh                (this checkout)
#        OLD=../old scripts/bench-scanner-instructions.sh     (also a worktree of another
#                                                              tree, `is_read_only` only if
#                                                              it has no `is_read_only_prepared`)
# Needs valgrind. About a minute.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
command -v valgrind >/dev/null || {
    echo "bench-scanner-instructions: valgrind not found" >&2
    exit 1
}
work="$(mktemp -d "${TMPDIR:-/tmp}/d1-retry-scanner-instructions.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# build NAME TREE: a release build of the program against TREE's runtime, in $work/NAME.
build() {
    local name="$1" tree="$2" prepared=""
    mkdir -p "$work/$name/src"
    cp "$repo/rust-toolchain.toml" "$repo/Cargo.lock" "$work/$name/"
    cat >"$work/$name/Cargo.toml" <<EOF
[package]
name = "scanner-instructions"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
d1-retry-runtime = { path = "$tree/d1-retry-runtime", default-features = false }
rand = { version = "0.9", default-features = false, features = ["small_rng"] }

[workspace]
EOF
    if grep -q "pub const fn is_read_only_prepared" "$tree/d1-retry-runtime/src/read_only/mod.rs"; then
        prepared="Some(d1_retry_runtime::is_read_only_prepared)"
    else
        prepared="None::<fn(&str) -> bool>"
    fi
    cat >"$work/$name/src/main.rs" <<EOF
#[path = "$repo/benches/read_only/statements.rs"]
#[allow(dead_code)]
mod statements;

use std::hint::black_box;

/// \`passes\` passes over \`calls\`, each call judged read-only when all its statements are.
fn run(calls: &[Vec<String>], passes: usize, verdict: impl Fn(&str) -> bool) -> usize {
    let mut kept = 0;
    for _ in 0..passes {
        kept += black_box(calls)
            .iter()
            .filter(|call| call.iter().all(|sql| verdict(black_box(sql))))
            .count();
    }
    kept
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (set, verdict) = (args.next().unwrap(), args.next().unwrap());
    let passes: usize = args.next().unwrap().parse().unwrap();
    let calls: Vec<Vec<String>> = match set.as_str() {
        "full_scan" => statements::reads(0xD1_5EED, 2_000).into_iter().map(|s| vec![s]).collect(),
        "mix" => statements::generate(0xD1_5EED, 2_000),
        _ => vec![vec![statements::hundred_byte_read(42)]],
    };
    let kept = match (verdict.as_str(), $prepared) {
        ("prepared", Some(prepared)) => run(&calls, passes, prepared),
        ("prepared", None) => return,
        _ => run(&calls, passes, d1_retry_runtime::is_read_only),
    };
    println!("{kept}");
}
EOF
    (cd "$work/$name" && CARGO_TARGET_DIR="$work/target-$name" cargo build --release --quiet)
}

instructions() { # instructions BINARY ARGS...: what cachegrind counts
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$@" 2>&1 |
        awk '/I *refs/ { gsub(",", "", $NF); print $NF }'
}

report() { # report NAME: instructions per pass, each set and verdict
    local binary="$work/target-$1/release/scanner-instructions" set verdict passes none some
    for set in full_scan mix 100_bytes; do
        passes=20
        [ "$set" = 100_bytes ] && passes=100000
        for verdict in is_read_only prepared; do
            [ -z "$("$binary" "$set" "$verdict" 1)" ] && continue
            none=$(instructions "$binary" "$set" "$verdict" 0)
            some=$(instructions "$binary" "$set" "$verdict" "$passes")
            printf '%-8s %-10s %-22s %12d instructions per pass\n' "$1" "$set" \
                "$([ "$verdict" = prepared ] && echo is_read_only_prepared || echo is_read_only)" \
                $(((some - none) / passes))
        done
    done
}

build this "$repo"
report this
if [ -n "${OLD:-}" ]; then
    build old "$(cd "$OLD" && pwd)"
    report old
fi
