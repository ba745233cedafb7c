#!/usr/bin/env bash
# What d1-retry adds to a Worker's release wasm.
#
# Copies examples/worker into a temporary folder three times and builds each with
# `worker-build --release` (wasm-bindgen, then wasm-opt):
#   with         the example as it is;
#   plain        the same routes with plain D1 calls: the #[d1_retry] attributes, the
#                D1Retry wrapper, the retry policy and the `classify` call removed, and the
#                d1-retry dependency dropped; the tracing console layer stays;
#   plain-bare   `plain` without the tracing console layer and the tracing dependencies,
#                for a Worker that had no tracing before adopting d1-retry.
# Prints the size of each build/index_bg.wasm, raw and gzipped (Cloudflare's limit is on
# the compressed size), and the bytes d1-retry adds.
#
# Needs: the wasm32-unknown-unknown target, worker-build 0.8.7 and wasm-bindgen-cli
# 0.2.130 on PATH or in ~/.cargo/bin, and e2e/node_modules (npm ci in e2e/) for esbuild
# and wasm-opt. scripts/e2e.sh installs all of them.
#
# Usage: scripts/bench-wasm-size.sh        (KEEP=1 keeps the temporary folder)
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
example="$repo/examples/worker"
work="$(mktemp -d "${TMPDIR:-/tmp}/d1-retry-wasm-size.XXXXXX")"
if [ "${KEEP:-0}" = 1 ]; then
    echo "keeping $work"
else
    trap 'rm -rf "$work"' EXIT
fi

fail() {
    echo "bench-wasm-size: $*" >&2
    exit 1
}

tool() { # tool NAME -> path, from PATH or ~/.cargo/bin
    command -v "$1" 2>/dev/null || { [ -x "$HOME/.cargo/bin/$1" ] && echo "$HOME/.cargo/bin/$1"; } ||
        fail "$1 not found: cargo install $2"
}

[ -f "$example/Cargo.toml" ] || fail "examples/worker is missing"
worker_build="$(tool worker-build "worker-build --version 0.8.7 --locked")"
export WASM_BINDGEN_BIN
WASM_BINDGEN_BIN="$(tool wasm-bindgen "wasm-bindgen-cli --version 0.2.130")"
export ESBUILD_BIN="$repo/e2e/node_modules/.bin/esbuild"
export WASM_OPT_BIN="$repo/e2e/node_modules/.bin/wasm-opt"
for bin in "$ESBUILD_BIN" "$WASM_OPT_BIN"; do
    [ -x "$bin" ] || fail "$bin not found: run npm ci in e2e/"
done
# One target folder for the three copies: the dependencies (worker, serde, ...) build once.
export CARGO_TARGET_DIR="$work/target"
cp "$repo/rust-toolchain.toml" "$work/"

copy() { # copy NAME -> a copy of the example whose path dependencies still resolve
    local dir="$work/$1"
    mkdir -p "$dir"
    (cd "$example" && tar cf - --exclude=./target --exclude=./build --exclude=./node_modules \
        --exclude=./.wrangler .) | (cd "$dir" && tar xf -)
    sed -i "s#path = \"\.\./\.\.\"#path = \"$repo\"#" "$dir/Cargo.toml"
    echo "$dir"
}

code_lines() { # code_lines DIR: the sources and manifest without comment lines
    grep -rn '' "$1/src" "$1/Cargo.toml" | grep -v -E '^[^:]+:[0-9]+:[[:space:]]*(//|# |#$|description = )'
}

strip_d1_retry() { # strip_d1_retry DIR: the same routes, plain D1 calls
    local dir="$1"
    sed -i '/^d1-retry = /d' "$dir/Cargo.toml"
    rm "$dir/src/policy.rs"
    # The native-only `use` of the testing kit goes with its `cfg` line, so that the `cfg`
    # does not fall onto the next item (the wasm32 `use worker::..`).
    sed -i -e '/^[[:space:]]*#\[d1_retry\b.*\][[:space:]]*$/d' \
        -e '/^#\[cfg(not(target_arch = "wasm32"))\]$/{N;/\nuse d1_retry::/d;}' \
        -e '/^use d1_retry::/d' -e '/^use crate::policy::POLICY;$/d' -e '/^mod policy;$/d' \
        "$dir"/src/*.rs
    # D1Retry wraps the binding once; without it the binding is used as it is.
    sed -i -e 's/Result<D1Retry>/Result<worker::D1Database>/' \
        -e 's/D1Retry::new(\(.*\))\.with_policy(POLICY)/\1/' "$dir/src/wrapped.rs"
    # The error body names d1-retry's class; a plain Worker has none to name.
    sed -i 's/d1_retry::classify(&error)\.as_str()/"unclassified"/' "$dir/src/lib.rs"
    if code_lines "$dir" | grep -e 'd1_retry' -e 'D1Retry' -e 'POLICY' -e '^[^:]*Cargo.toml:[0-9]*:d1-retry'; then
        fail "the lines above still use d1-retry: examples/worker changed; update strip_d1_retry"
    fi
}

strip_tracing() { # strip_tracing DIR: no tracing console layer, no tracing dependencies
    local dir="$1"
    sed -i -e '/^tracing = /d' -e '/^tracing-subscriber = /d' "$dir/Cargo.toml"
    rm "$dir/src/console.rs"
    sed -i -e '/^mod console;$/d' -e '/^#\[event(start)\]$/,/^}$/d' "$dir/src/lib.rs"
    if code_lines "$dir" | grep -e 'tracing' -e 'console::'; then
        fail "the lines above still use tracing: examples/worker changed; update strip_tracing"
    fi
}

build() { # build DIR -> the wasm's size in bytes, raw and gzipped
    local dir="$1" wasm
    (cd "$dir" && "$worker_build" --release >"$dir/build.log" 2>&1) || {
        tail -40 "$dir/build.log" >&2
        fail "worker-build failed in $dir"
    }
    wasm="$dir/build/index_bg.wasm"
    [ -f "$wasm" ] || fail "worker-build wrote no $wasm"
    echo "$(wc -c <"$wasm") $(gzip -9 -c "$wasm" | wc -c)"
}

with="$(copy with)"
plain="$(copy plain)"
strip_d1_retry "$plain"
bare="$(copy plain-bare)"
strip_d1_retry "$bare"
strip_tracing "$bare"

echo "building three release Workers (a few minutes the first time)..."
read -r with_raw with_gz <<<"$(build "$with")"
read -r plain_raw plain_gz <<<"$(build "$plain")"
read -r bare_raw bare_gz <<<"$(build "$bare")"

kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }
printf '%-12s %10s %10s\n' build wasm gzip
printf '%-12s %10s %10s\n' with "$with_raw" "$with_gz"
printf '%-12s %10s %10s\n' plain "$plain_raw" "$plain_gz"
printf '%-12s %10s %10s\n' plain-bare "$bare_raw" "$bare_gz"
echo "d1-retry adds $((with_raw - plain_raw)) bytes ($(kib $((with_raw - plain_raw)))), " \
    "$((with_gz - plain_gz)) gzipped ($(kib $((with_gz - plain_gz))))"
echo "d1-retry with tracing and the console layer adds $((with_raw - bare_raw)) bytes" \
    "($(kib $((with_raw - bare_raw)))), $((with_gz - bare_gz)) gzipped ($(kib $((with_gz - bare_gz))))"
