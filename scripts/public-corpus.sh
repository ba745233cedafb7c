#!/usr/bin/env bash
# The read-only scanner measured over the public corpus: about 3,400 statements from public
# SQLite test suites, sqllogictest, ORM migrations and D1 templates, each labelled with
# SQLite's `sqlite3_stmt_readonly()`. It is data from other repositories, so it stays
# outside this one: by default `../shared/sql-corpus/public.jsonl` beside the checkout.
#
# Usage: bash scripts/public-corpus.sh [path/to/public.jsonl]
#        (or D1_RETRY_PUBLIC_CORPUS=path/to/public.jsonl bash scripts/public-corpus.sh)
#
# Prints the confusion matrix the README shows, and fails when the file is missing, when
# the measurement did not run, or when the scanner calls any write read-only. It runs the
# ignored test `public_corpus` of d1-retry-runtime/tests/read_only_corpus.rs.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
corpus="${1:-${D1_RETRY_PUBLIC_CORPUS:-$repo/../shared/sql-corpus/public.jsonl}}"
if [ ! -f "$corpus" ]; then
    echo "error: no public corpus at $corpus" >&2
    echo "       give its path: bash scripts/public-corpus.sh path/to/public.jsonl" >&2
    exit 1
fi
corpus="$(cd "$(dirname "$corpus")" && pwd)/$(basename "$corpus")"

log="$(mktemp "${TMPDIR:-/tmp}/d1-retry-public-corpus.XXXXXX")"
trap 'rm -f "$log"' EXIT
cd "$repo"
D1_RETRY_PUBLIC_CORPUS="$corpus" cargo test -p d1-retry-runtime --test read_only_corpus -- \
    --ignored --exact public_corpus --nocapture 2>&1 | tee "$log"
# `cargo test` succeeds when its filter matches nothing: make sure the measurement ran.
if ! grep -q '^test public_corpus \.\.\. ok$' "$log"; then
    echo "error: the public corpus measurement did not run" >&2
    exit 1
fi
