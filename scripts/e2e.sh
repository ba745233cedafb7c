#!/usr/bin/env bash
# End to end: d1-retry inside a real Worker against a real local D1.
#
# Installs what is missing (the wasm32 target, worker-build and wasm-bindgen-cli at pinned
# versions, the pinned npm packages of e2e/package-lock.json), builds examples/worker with
# worker-build, serves it with `wrangler dev` on 127.0.0.1 behind e2e/worker/inject.mjs with
# a throwaway database, runs e2e/test, and stops the server by its process group whatever
# happens. Needs only the package registries: nothing else is downloaded.
#
#   E2E_REPORT=path   where the table of injected cases goes (default target/e2e-report.md)
#   E2E_KEEP_STATE=1  keep the throwaway folder (database, wrangler's output) for a look
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

WORKER_BUILD_VERSION=0.8.7
WASM_BINDGEN_VERSION=0.2.130
CARGO_BIN=${CARGO_HOME:-$HOME/.cargo}/bin
export PATH="$CARGO_BIN:$PATH"

step() { printf '\n==> %s\n' "$*"; }
elapsed() { printf '    (%s s)\n' "$(($(date +%s) - $1))"; }

# --- tools ------------------------------------------------------------------------------

# install_tool CRATE VERSION BINARY VERSION_LINE [cargo install options]: skipped when
# BINARY --version already prints VERSION_LINE.
install_tool() {
    local crate=$1 version=$2 binary=$3 version_line=$4
    shift 4
    if [ -x "$CARGO_BIN/$binary" ] && [ "$("$CARGO_BIN/$binary" --version 2>/dev/null)" = "$version_line" ]; then
        echo "$binary $version: already installed"
        return
    fi
    cargo install "$crate" --version "=$version" "$@"
}

started=$(date +%s)
step "tools"
rustup target add wasm32-unknown-unknown
install_tool worker-build "$WORKER_BUILD_VERSION" worker-build "$WORKER_BUILD_VERSION" --locked
# Not --locked: its lockfile asks for a webpki-roots version the registry here lacks.
install_tool wasm-bindgen-cli "$WASM_BINDGEN_VERSION" wasm-bindgen "wasm-bindgen $WASM_BINDGEN_VERSION"
(cd e2e && npm ci --no-audit --no-fund)
elapsed "$started"

# --- build ------------------------------------------------------------------------------

started=$(date +%s)
step "build examples/worker (worker-build --release, fast-retries)"
NODE_BIN="$ROOT/e2e/node_modules/.bin"
(
    cd examples/worker
    # worker-build downloads these unless told where they are.
    WASM_BINDGEN_BIN="$CARGO_BIN/wasm-bindgen" \
        ESBUILD_BIN="$NODE_BIN/esbuild" \
        WASM_OPT_BIN="$NODE_BIN/wasm-opt" \
        worker-build --release --features fast-retries
)
elapsed "$started"

# --- serve ------------------------------------------------------------------------------

export WRANGLER_SEND_METRICS=false
export WRANGLER_SEND_ERROR_REPORTS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false
export NO_COLOR=1

STATE=$(mktemp -d "${TMPDIR:-/tmp}/d1-retry-e2e.XXXXXX")
WORKER_LOG="$STATE/wrangler.log"
SERVER_PGID=""
TEST_PID=""

stop_server() {
    if [ -n "$SERVER_PGID" ]; then
        kill -TERM -- "-$SERVER_PGID" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 -- "-$SERVER_PGID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$SERVER_PGID" 2>/dev/null || true
        SERVER_PGID=""
    fi
}

cleanup() {
    local status=$?
    if [ -n "$TEST_PID" ]; then
        kill -TERM "$TEST_PID" 2>/dev/null || true
        wait "$TEST_PID" 2>/dev/null || true
    fi
    stop_server
    if [ "$status" -ne 0 ] && [ -f "$WORKER_LOG" ]; then
        echo "--- last lines of wrangler's output ($WORKER_LOG)"
        tail -n 40 "$WORKER_LOG" || true
    fi
    if [ "${E2E_KEEP_STATE:-}" = 1 ]; then
        echo "kept $STATE"
    else
        rm -rf "$STATE"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
    node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

started=$(date +%s)
step "serve: wrangler dev on a throwaway local D1 ($STATE)"
PORT=$(free_port)
INSPECTOR_PORT=$(free_port)
cd e2e
"$NODE_BIN/wrangler" d1 migrations apply DB --local --persist-to "$STATE/d1" >"$STATE/migrations.log" 2>&1 ||
    { cat "$STATE/migrations.log"; exit 1; }
# setsid: the server and everything it starts (workerd, esbuild) share one process group,
# which stop_server ends as a whole.
setsid "$NODE_BIN/wrangler" dev \
    --ip 127.0.0.1 --port "$PORT" --inspector-port "$INSPECTOR_PORT" \
    --persist-to "$STATE/d1" --show-interactive-dev-session=false \
    </dev/null >"$WORKER_LOG" 2>&1 &
SERVER_PGID=$!
SERVER_SID=$SERVER_PGID

BASE_URL="http://127.0.0.1:$PORT"
ready=""
for _ in $(seq 120); do
    if ! kill -0 "$SERVER_PGID" 2>/dev/null; then
        echo "wrangler dev exited early"
        exit 1
    fi
    if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' \
        "$BASE_URL/__control/ready"; then
        ready=1
        break
    fi
    sleep 0.5
done
[ -n "$ready" ] || { echo "wrangler dev was not ready within 60 s"; exit 1; }
elapsed "$started"

# --- test -------------------------------------------------------------------------------

started=$(date +%s)
step "test: node --test e2e/test"
REPORT=${E2E_REPORT:-$ROOT/target/e2e-report.md}
mkdir -p "$(dirname "$REPORT")"
# In the background and waited for, so that a signal runs the trap at once instead of after
# the tests (bash defers traps while a foreground command runs).
E2E_BASE_URL="$BASE_URL" E2E_WORKER_LOG="$WORKER_LOG" E2E_REPORT="$REPORT" \
    node --test --test-reporter=spec test/worker.test.mjs &
TEST_PID=$!
wait "$TEST_PID"
TEST_PID=""
elapsed "$started"
echo "table of injected cases: $REPORT"

stop_server
if pgrep -s "$SERVER_SID" >/dev/null; then
    echo "processes outlived the server:"
    pgrep -a -s "$SERVER_SID"
    pkill -KILL -s "$SERVER_SID" || true
    exit 1
fi
