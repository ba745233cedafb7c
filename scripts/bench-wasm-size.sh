#!/usr/bin/env bash
# What d1-retry adds to a Worker's release wasm.
#
# Copies examples/worker into a work folder eight times and builds each with
# `worker-build --release` (wasm-bindgen, then wasm-opt):
#   with         the example as it is;
#   plain        the same routes with plain D1 calls: the #[d1_retry] attributes, the
#                D1Retry wrapper, the retry policy and the `classify` call removed, and the
#                d1-retry dependency dropped; the tracing console layer stays;
#   plain-bare   `plain` without the tracing console layer and the tracing dependencies,
#                for a Worker that had no tracing before adopting d1-retry.
#   with+K       `with` and K more `#[d1_retry(policy = POLICY)]` methods (a read through
#                `first`, a read through `all`, a write through `run`, in turn), each behind
#                a route of its own so that none is dead code; like 14 of the example's 17,
#                they take the loop without time limits, which the compiler picks from
#                POLICY's value (RetryPolicy::DEFAULT);
#   with+K-timed the same with `attempt_timeout_ms = 2000` added, which takes the
#                time-limited loop, as the example's two methods with that option do;
#   plain+K      `plain` and the same K methods without the attribute;
#   with+K-typed and plain+K-typed: K `policy = POLICY` reads, each into a row type of its
#                own (`first::<RowN>`), with and without the attribute. The K methods above
#                read into the example's `User` and `Order`, so each retried call's future
#                is one the example already compiles; a call with a new result type is a
#                new future, and this prices it.
# Prints the size of each build/index_bg.wasm, raw and gzipped (Cloudflare's limit is on
# the compressed size), the bytes d1-retry adds, and how they split: the bytes each
# annotated method adds, ((with+K - with) - (plain+K - plain)) / K (and the same for
# with+K-timed and for the typed pair), and the rest, the fixed cost (with - plain, less the
# example's annotated methods at the first price).
#
# The builds use a snapshot of the repository's working tree, taken when the script starts
# (its time and `git diff --stat` are printed), so that edits made while it runs do not
# land in some builds and not others.
#
# Needs: the wasm32-unknown-unknown target, worker-build 0.8.7 and wasm-bindgen-cli
# 0.2.130 on PATH or in ~/.cargo/bin, and e2e/node_modules (npm ci in e2e/) for esbuild
# and wasm-opt. scripts/e2e.sh installs all of them.
#
# Usage: scripts/bench-wasm-size.sh        (KEEP=1 keeps the work folder,
#        $TMPDIR/d1-retry-wasm-size, until the next run; K=12 sets the number of generated
#        methods; CARGO_TARGET_DIR, if set, is the target folder of every build, which then
#        survives the run and makes the next one faster)
#        BREAKDOWN=1 scripts/bench-wasm-size.sh   also splits what d1-retry adds by the
#        example's parts, with three more builds: with and plain without the routes under
#        /wrapped (the D1Retry wrapper), and with its `idempotent` function retried per call
#        instead of as a whole body. What is left is the #[d1_retry] methods, the
#        classifier, the decisions, the logs and the sleeper, which every part shares.
#        A fourth build, with its logs compiled out by tracing's `release_max_level_off`
#        feature (what a Worker without a subscriber can do, README "Logs"), prices the
#        logs across every part: their call sites and the failure texts they render.
#        Two more, with and plain with a log line of the Worker's own (a `tracing::warn!`
#        when a request fails), price d1-retry for a Worker that already logs through
#        tracing: such a Worker has tracing's event machinery (call-site registration,
#        dispatch, its layer's `on_event`) before it adopts d1-retry, which the example,
#        whose only events are d1-retry's, does not.
#        PEERS=1 scripts/bench-wasm-size.sh   also prices adopting d1-retry against adopting
#        backon, the peer, on the same K methods of a Worker that has neither, with three more
#        builds: adopt+K, plain+K with d1-retry back and the K methods annotated, and
#        backon+K, plain+K with the K methods' calls retried by backon (the schedule of the
#        happy-path bench, a worker::Delay sleeper) and d1-retry's classifier deciding, as
#        the happy-path bench's peers do (`should_retry(classify(e), read_only)`). Each minus
#        plain+K is what that Worker pays to retry its K methods: the same calls, the same
#        decisions, without the logs, the time limits, the budget or the retry of each call
#        on its own (backon retries its closure) on backon's side. A third build, adopt+K
#        with its logs compiled out (tracing's release_max_level_off), prices d1-retry's logs
#        there, which backon has none of.
#        SIZE_PROFILE=1 scripts/bench-wasm-size.sh   builds every Worker with the release
#        profile a size-minded Worker uses (lto = true, codegen-units = 1, strip = true,
#        which also drops the function-names section) instead of the example's; the same
#        profile on every side. TOP=20 also lists the 20 items of the wasm that changed
#        most from plain to with (needs twiggy, cargo install twiggy, and python3); with
#        SIZE_PROFILE=1, from two more builds of with and plain that keep the names
#        section (strip = false), which the stripped builds have none of to list by.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
example="$repo/examples/worker"
# A fixed folder, not a random one: where d1-retry's sources lie goes into its symbols'
# hashes, and those can tip what the optimiser inlines. With the example's profile, the
# same tree built from two folders of the same name length came out 386 bytes apart
# (BENCHMARKS.md, ninth round), so that a random folder made two runs of one tree
# disagree. One run at a time, then.
work="${TMPDIR:-/tmp}/d1-retry-wasm-size"
rm -rf "$work"
mkdir -p "$work"
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
# One target folder for every copy: the dependencies (worker, serde, ...) build once.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$work/target}"
cp "$repo/rust-toolchain.toml" "$work/"
k="${K:-12}"
[[ "$k" =~ ^[1-9][0-9]*$ ]] || fail "K must be a positive number of methods, not '$k'"

# The snapshot the copies depend on: the working tree, edits included, without build output.
src="$work/src"
mkdir -p "$src"
echo "snapshot of $repo at $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo 'no git') +"
git -C "$repo" diff --stat HEAD 2>/dev/null | sed 's/^/    /' || true
(cd "$repo" && tar cf - --exclude=./target --exclude=./.git --exclude='./mutants.out*' \
    --exclude=./e2e --exclude=./examples/worker/target --exclude=./examples/worker/build \
    --exclude=./examples/worker/node_modules --exclude=./examples/worker/.wrangler .) |
    (cd "$src" && tar xf -)
# tar keeps the files' old times, and cargo would take d1-retry as fresh if an earlier run
# (or another tree's, in the same target folder) built it after they were last changed:
# made newer than any earlier build, the snapshot is what the first build compiles (see
# build() for the copies).
find "$src" -type f -exec touch {} +

at_snapshot() { # at_snapshot DIR: the copy's path dependencies (`../..`) on the snapshot
    sed -i "s#path = \"\.\./\.\.\"#path = \"$src\"#" "$1/Cargo.toml"
}

copy() { # copy NAME -> a copy of the example whose path dependencies still resolve
    local dir="$work/$1"
    mkdir -p "$dir"
    (cd "$example" && tar cf - --exclude=./target --exclude=./build --exclude=./node_modules \
        --exclude=./.wrangler .) | (cd "$dir" && tar xf -)
    at_snapshot "$dir"
    if [ "${SIZE_PROFILE:-0}" = 1 ]; then
        sed -i -e 's/^codegen-units = .*/codegen-units = 1\nlto = true\nstrip = true/' "$dir/Cargo.toml"
        grep -q '^lto = true$' "$dir/Cargo.toml" ||
            fail "no codegen-units line in examples/worker/Cargo.toml: update SIZE_PROFILE"
    fi
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

logs_off() { # logs_off DIR: the copy's logs compiled out (tracing's release_max_level_off)
    grep -q '^tracing = { .*features = \["std"\] }$' "$1/Cargo.toml" ||
        fail "no tracing dependency with features = [\"std\"] in examples/worker/Cargo.toml: update logs_off"
    sed -i '/^tracing = /s/features = \["std"\]/features = ["std", "release_max_level_off"]/' \
        "$1/Cargo.toml"
}

own_log() { # own_log DIR: the copy logs a failed request itself, through tracing
    sed -i '/^        Err(error) => {$/a\            tracing::warn!(error = %error_text(\&error), "request failed");' \
        "$1/src/lib.rs"
    grep -q 'tracing::warn!(error = %error_text(&error), "request failed");' "$1/src/lib.rs" ||
        fail "no Err(error) arm in reply() of examples/worker/src/lib.rs: update own_log"
}

readopt() { # readopt DIR [LINE...]: a stripped copy with examples/worker's d1-retry
    # dependency back, the given dependency LINEs added, and the example's policy module
    local dir="$1" line
    shift
    for line in "$(grep '^d1-retry = ' "$example/Cargo.toml")" "$@"; do
        sed -i "s#^\[dependencies\]\$#[dependencies]\n$line#" "$dir/Cargo.toml"
    done
    at_snapshot "$dir"
    cp "$example/src/policy.rs" "$dir/src/"
    sed -i 's/^mod shop;$/mod policy;\nmod shop;/' "$dir/src/lib.rs"
    grep -q '^d1-retry = ' "$dir/Cargo.toml" && grep -q '^mod policy;$' "$dir/src/lib.rs" ||
        fail "could not add d1-retry back to $dir: examples/worker changed; update readopt"
}

add_methods() { # add_methods DIR [SHAPE]: K more methods, each behind a route, with
    # #[d1_retry(policy = POLICY)]; SHAPE=timed: with an attempt timeout as well;
    # SHAPE=typed: each a read into a row type of its own (`first::<RowN>`); SHAPE=backon:
    # each retried by backon instead (PEERS=1)
    local dir="$1" attribute='#[d1_retry(policy = POLICY)]' i kind sql body ret call write
    [ "${2:-}" = timed ] && attribute='#[d1_retry(policy = POLICY, attempt_timeout_ms = 2000)]'
    {
        echo '//! Generated by scripts/bench-wasm-size.sh: methods that only add to the size.'
        if [ "${2:-}" = backon ]; then
            echo 'use backon::{ExponentialBuilder, Retryable};'
            echo 'use core::time::Duration;'
            echo 'use d1_retry::{classify, should_retry};'
            echo 'const SCHEDULE: ExponentialBuilder = ExponentialBuilder::new()'
            echo '    .with_min_delay(Duration::from_millis(200)).with_factor(2.0)'
            echo '    .with_max_delay(Duration::from_secs(2)).with_jitter().with_max_times(4);'
            echo 'struct DelaySleeper;'
            echo 'impl backon::Sleeper for DelaySleeper {'
            echo '    type Sleep = worker::Delay;'
            echo '    fn sleep(&self, delay: Duration) -> worker::Delay { worker::Delay::from(delay) }'
            echo '}'
        else
            echo 'use d1_retry::d1_retry;'
            echo 'use crate::policy::POLICY;'
        fi
        echo 'use worker::{D1Database, Result};'
        # The typed methods read into row types of their own, not the example's.
        if [ "${2:-}" = typed ]; then
            echo 'use crate::shop::number;'
        else
            echo 'use crate::shop::{number, Order, User};'
        fi
        echo 'pub struct Extra { db: D1Database }'
        if [ "${2:-}" = typed ]; then
            for ((i = 0; i < k; i++)); do
                echo "#[derive(serde::Deserialize, serde::Serialize)]"
                echo "pub struct Row$i { pub id: i64, pub name: String }"
            done
        fi
        echo 'impl Extra {'
        echo '    pub fn new(db: D1Database) -> Self { Extra { db } }'
        for ((i = 0; i < k; i++)); do
            kind=$((i % 3))
            [ "${2:-}" = typed ] && kind=3
            # Each statement differs, so that no two methods fold into one.
            case $kind in
            0) ret='Option<User>'
               sql="SELECT id, email, name FROM users WHERE id = ?1 AND $i = $i"
               body='.first(None).await' call='.first::<User>(None).await' write=false ;;
            1) ret='Vec<Order>'
               sql="SELECT id, user_id, item, quantity FROM orders WHERE user_id = ?1 AND $i = $i"
               body='.all().await?.results()' call='.all().await?.results::<Order>()' write=false ;;
            2) ret='()'
               sql="UPDATE users SET name = name || '$i' WHERE id = ?1"
               body='.run().await?; Ok(())' call='.run().await?; Ok(())' write=true ;;
            3) ret="Option<Row$i>"
               sql="SELECT id, name FROM users WHERE id = ?1 AND $i = $i"
               body='.first(None).await' ;;
            esac
            if [ "${2:-}" = backon ]; then
                # The attribute's decisions: d1-retry's classifier, a write retried only
                # when it did not run.
                echo "    pub async fn extra_$i(&self, id: i64) -> Result<$ret> {"
                echo "        let statement = &self.db.prepare(\"$sql\").bind(&[number(id)])?;"
                echo "        (move || async move { statement$call })"
                echo "            .retry(SCHEDULE).sleep(DelaySleeper)"
                echo "            .when(|error: &worker::Error| should_retry(classify(error), !$write))"
                echo '            .await'
                echo '    }'
                continue
            fi
            echo "    $attribute"
            echo "    pub async fn extra_$i(&self, id: i64) -> Result<$ret> {"
            echo "        self.db.prepare(\"$sql\").bind(&[number(id)])?$body"
            echo '    }'
        done
        echo '}'
    } >"$dir/src/extra.rs"
    sed -i 's/^mod wrapped;$/mod wrapped;\nmod extra;/' "$dir/src/lib.rs"
    for ((i = 0; i < k; i++)); do
        echo "        .get_async(\"/extra/$i/:id\", |_, ctx| async move { reply(crate::extra::Extra::new(ctx.env.d1(\"DB\")?).extra_$i(id(&ctx, \"id\")?).await) })"
    done >"$dir/routes.txt"
    awk -v routes="$dir/routes.txt" '/^        \.run\(req, env\)$/ {
        while ((getline line < routes) > 0) print line
    } { print }' "$dir/src/lib.rs" >"$dir/lib.rs.new"
    mv "$dir/lib.rs.new" "$dir/src/lib.rs"
    grep -q '^mod extra;$' "$dir/src/lib.rs" && grep -q "extra_$((k - 1))(" "$dir/src/lib.rs" ||
        fail "could not add the methods' module and routes: examples/worker/src/lib.rs changed"
}

strip_routes() { # strip_routes DIR PREFIX: the example without its routes under PREFIX
    local lib="$1/src/lib.rs"
    # A route is `.get_async(` (or post, ...) up to the `)` that closes it, over one line or
    # several: kept or dropped whole, by whether its text names the prefix.
    awk -v prefix="\"$2" '
        !open && /^[[:space:]]*\.(get|post|put|patch|delete)_async\(/ { open = 1; text = ""; depth = 0 }
        open {
            text = text $0 "\n"
            line = $0
            depth += gsub(/\(/, "", line)
            depth -= gsub(/\)/, "", line)
            if (depth == 0) {
                if (index(text, prefix) == 0) printf "%s", text
                open = 0
            }
            next
        }
        { print }
    ' "$lib" >"$lib.new"
    mv "$lib.new" "$lib"
    ! grep -q "\"$2" "$lib" && grep -q '_async(' "$lib" ||
        fail "could not remove the routes under $2: examples/worker/src/lib.rs changed"
}

build() { # build DIR -> the wasm's size in bytes, raw and gzipped
    local dir="$1" wasm
    # Every copy is the same crate at the same place in its own workspace, so cargo gives
    # them one fingerprint in the shared target folder, and tar keeps the files' old
    # times: a copy whose files are older than the last build of another is taken as
    # fresh, and that other build's wasm would be measured in its place (a with+K-bare
    # once came out byte for byte as with+K). Files newer than every earlier build make
    # each copy compile its own.
    find "$dir" -path "$dir/target" -prune -o -type f -exec touch {} +
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
with_k="$(copy "with+$k")"
add_methods "$with_k"
with_kl="$(copy "with+$k-timed")"
add_methods "$with_kl" timed
plain_k="$(copy "plain+$k")"
add_methods "$plain_k"
strip_d1_retry "$plain_k"
with_kt="$(copy "with+$k-typed")"
add_methods "$with_kt" typed
plain_kt="$(copy "plain+$k-typed")"
add_methods "$plain_kt" typed
strip_d1_retry "$plain_kt"
if [ "${BREAKDOWN:-0}" = 1 ]; then
    with_nowrap="$(copy with-no-wrapped)"
    strip_routes "$with_nowrap" /wrapped/
    plain_nowrap="$(copy plain-no-wrapped)"
    strip_d1_retry "$plain_nowrap"
    strip_routes "$plain_nowrap" /wrapped/
    with_percall="$(copy with-per-call)"
    grep -q '#\[d1_retry(idempotent, ' "$with_percall/src/shop.rs" ||
        fail "no #[d1_retry(idempotent, ...)] in examples/worker/src/shop.rs: update BREAKDOWN"
    sed -i 's/#\[d1_retry(idempotent, /#[d1_retry(/' "$with_percall/src/shop.rs"
    wrapped_routes="$(grep -c '"/wrapped/' "$with/src/lib.rs")"
    with_nolog="$(copy with-logs-off)"
    logs_off "$with_nolog"
    with_ownlog="$(copy with-own-log)"
    own_log "$with_ownlog"
    plain_ownlog="$(copy plain-own-log)"
    strip_d1_retry "$plain_ownlog"
    own_log "$plain_ownlog"
fi
if [ "${PEERS:-0}" = 1 ]; then
    adopt_k="$(copy "adopt+$k")"
    strip_d1_retry "$adopt_k"
    readopt "$adopt_k"
    add_methods "$adopt_k"
    adopt_kn="$(copy "adopt+$k-logs-off")"
    strip_d1_retry "$adopt_kn"
    readopt "$adopt_kn"
    add_methods "$adopt_kn"
    logs_off "$adopt_kn"
    backon_k="$(copy "backon+$k")"
    strip_d1_retry "$backon_k"
    readopt "$backon_k" 'backon = { version = "=1.6.0", default-features = false, features = ["std"] }'
    add_methods "$backon_k" backon
    # grep -c reads to the end: -q would stop early and fail the pipe (pipefail).
    code_lines "$adopt_k" | grep -c '#\[d1_retry(policy = POLICY)\]' >/dev/null &&
        ! code_lines "$backon_k" | grep -c '#\[d1_retry' >/dev/null ||
        fail "adopt+$k or backon+$k is not what PEERS=1 describes: update it"
fi
# The example's own annotated methods, priced at the per-method cost below.
methods="$(code_lines "$with" | grep -c '#\[d1_retry\b')"

builds=$((8 + ${BREAKDOWN:-0} * 6 + ${PEERS:-0} * 3))
echo "building $builds release Workers (a few minutes the first time)..."
if [ "${SIZE_PROFILE:-0}" = 1 ]; then
    echo "release profile: the example's, with lto = true, codegen-units = 1, strip = true"
fi
read -r with_raw with_gz <<<"$(build "$with")"
read -r plain_raw plain_gz <<<"$(build "$plain")"
read -r bare_raw bare_gz <<<"$(build "$bare")"
read -r with_k_raw with_k_gz <<<"$(build "$with_k")"
read -r with_kl_raw with_kl_gz <<<"$(build "$with_kl")"
read -r plain_k_raw plain_k_gz <<<"$(build "$plain_k")"
read -r with_kt_raw with_kt_gz <<<"$(build "$with_kt")"
read -r plain_kt_raw plain_kt_gz <<<"$(build "$plain_kt")"
if [ "${BREAKDOWN:-0}" = 1 ]; then
    read -r with_nowrap_raw with_nowrap_gz <<<"$(build "$with_nowrap")"
    read -r plain_nowrap_raw plain_nowrap_gz <<<"$(build "$plain_nowrap")"
    read -r with_percall_raw with_percall_gz <<<"$(build "$with_percall")"
    read -r with_nolog_raw with_nolog_gz <<<"$(build "$with_nolog")"
    read -r with_ownlog_raw with_ownlog_gz <<<"$(build "$with_ownlog")"
    read -r plain_ownlog_raw plain_ownlog_gz <<<"$(build "$plain_ownlog")"
fi
if [ "${PEERS:-0}" = 1 ]; then
    read -r adopt_k_raw adopt_k_gz <<<"$(build "$adopt_k")"
    read -r adopt_kn_raw adopt_kn_gz <<<"$(build "$adopt_kn")"
    read -r backon_k_raw backon_k_gz <<<"$(build "$backon_k")"
fi

kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }
printf '%-12s %10s %10s\n' build wasm gzip
printf '%-12s %10s %10s\n' with "$with_raw" "$with_gz"
printf '%-12s %10s %10s\n' plain "$plain_raw" "$plain_gz"
printf '%-12s %10s %10s\n' plain-bare "$bare_raw" "$bare_gz"
echo "d1-retry adds $((with_raw - plain_raw)) bytes ($(kib $((with_raw - plain_raw)))), " \
    "$((with_gz - plain_gz)) gzipped ($(kib $((with_gz - plain_gz))))"
echo "d1-retry with tracing and the console layer adds $((with_raw - bare_raw)) bytes" \
    "($(kib $((with_raw - bare_raw)))), $((with_gz - bare_gz)) gzipped ($(kib $((with_gz - bare_gz))))"

# What is paid per annotated method, and what once.
per() { # per WITH_K WITH PLAIN_K PLAIN -> bytes per method, rounded
    awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" -v k="$k" \
        'BEGIN { printf "%.0f", ((a - b) - (c - d)) / k }'
}
per_raw="$(per "$with_k_raw" "$with_raw" "$plain_k_raw" "$plain_raw")"
per_gz="$(per "$with_k_gz" "$with_gz" "$plain_k_gz" "$plain_gz")"
per_timed_raw="$(per "$with_kl_raw" "$with_raw" "$plain_k_raw" "$plain_raw")"
per_timed_gz="$(per "$with_kl_gz" "$with_gz" "$plain_k_gz" "$plain_gz")"
per_typed_raw="$(per "$with_kt_raw" "$with_raw" "$plain_kt_raw" "$plain_raw")"
per_typed_gz="$(per "$with_kt_gz" "$with_gz" "$plain_kt_gz" "$plain_gz")"
fixed_raw=$((with_raw - plain_raw - methods * per_raw))
fixed_gz=$((with_gz - plain_gz - methods * per_gz))
echo
echo "per annotated method (K = $k generated methods; the example has $methods):"
printf '%-44s %10s %10s\n' "" wasm gzip
printf '%-44s %10s %10s\n' "with+$k" "$with_k_raw" "$with_k_gz"
printf '%-44s %10s %10s\n' "with+$k-timed" "$with_kl_raw" "$with_kl_gz"
printf '%-44s %10s %10s\n' "with+$k-typed" "$with_kt_raw" "$with_kt_gz"
printf '%-44s %10s %10s\n' "plain+$k" "$plain_k_raw" "$plain_k_gz"
printf '%-44s %10s %10s\n' "plain+$k-typed" "$plain_kt_raw" "$plain_kt_gz"
printf '%-44s %10s %10s\n' "with+$k - with" "$((with_k_raw - with_raw))" "$((with_k_gz - with_gz))"
printf '%-44s %10s %10s\n' "with+$k-timed - with" "$((with_kl_raw - with_raw))" "$((with_kl_gz - with_gz))"
printf '%-44s %10s %10s\n' "plain+$k - plain" "$((plain_k_raw - plain_raw))" "$((plain_k_gz - plain_gz))"
printf '%-44s %10s %10s\n' "with+$k-typed - with" "$((with_kt_raw - with_raw))" "$((with_kt_gz - with_gz))"
printf '%-44s %10s %10s\n' "plain+$k-typed - plain" "$((plain_kt_raw - plain_raw))" "$((plain_kt_gz - plain_gz))"
printf '%-44s %10s %10s\n' "d1-retry per annotated method" "$per_raw" "$per_gz"
printf '%-44s %10s %10s\n' "the same, with an attempt timeout" "$per_timed_raw" "$per_timed_gz"
printf '%-44s %10s %10s\n' "the same, a read into a row type of its own" "$per_typed_raw" "$per_typed_gz"
printf '%-44s %10s %10s\n' "d1-retry fixed (with - plain - $methods methods)" "$fixed_raw" "$fixed_gz"

# BREAKDOWN=1: what d1-retry adds, split by the example's parts. Each share is the
# difference its removal makes to what d1-retry adds: the D1Retry routes come out of both
# with and plain; the whole-body retry has no counterpart in plain.
if [ "${BREAKDOWN:-0}" = 1 ]; then
    added=$((with_raw - plain_raw))
    added_gz=$((with_gz - plain_gz))
    nowrap=$((with_nowrap_raw - plain_nowrap_raw))
    nowrap_gz=$((with_nowrap_gz - plain_nowrap_gz))
    whole=$((with_raw - with_percall_raw))
    whole_gz=$((with_gz - with_percall_gz))
    echo
    echo "what d1-retry adds, by part of the example:"
    printf '%-60s %10s %10s\n' "" wasm gzip
    printf '%-60s %10s %10s\n' "with without /wrapped routes" "$with_nowrap_raw" "$with_nowrap_gz"
    printf '%-60s %10s %10s\n' "plain without /wrapped routes" "$plain_nowrap_raw" "$plain_nowrap_gz"
    printf '%-60s %10s %10s\n' "with, idempotent function retried per call" "$with_percall_raw" "$with_percall_gz"
    printf '%-60s %10s %10s\n' "the D1Retry wrapper ($wrapped_routes routes, with the run-time scanner)" \
        "$((added - nowrap))" "$((added_gz - nowrap_gz))"
    printf '%-60s %10s %10s\n' "the whole-body retry (idempotent), over retrying per call" "$whole" "$whole_gz"
    printf '%-60s %10s %10s\n' "the rest: #[d1_retry] per call, classifier, logs, sleeper" \
        "$((nowrap - whole))" "$((nowrap_gz - whole_gz))"
    echo "across the parts:"
    printf '%-60s %10s %10s\n' "with, logs compiled out (release_max_level_off)" \
        "$with_nolog_raw" "$with_nolog_gz"
    printf '%-60s %10s %10s\n' "the logs: call sites and the failure texts they render" \
        "$((with_raw - with_nolog_raw))" "$((with_gz - with_nolog_gz))"
    printf '%-60s %10s %10s\n' "d1-retry with its logs compiled out adds" \
        "$((with_nolog_raw - plain_raw))" "$((with_nolog_gz - plain_gz))"
    printf '%-60s %10s %10s\n' "with, logging a failed request itself" \
        "$with_ownlog_raw" "$with_ownlog_gz"
    printf '%-60s %10s %10s\n' "plain, logging a failed request itself" \
        "$plain_ownlog_raw" "$plain_ownlog_gz"
    printf '%-60s %10s %10s\n' "d1-retry adds to a Worker that logs itself" \
        "$((with_ownlog_raw - plain_ownlog_raw))" "$((with_ownlog_gz - plain_ownlog_gz))"
fi

# PEERS=1: what a Worker without either pays to retry K methods with each.
if [ "${PEERS:-0}" = 1 ]; then
    echo
    echo "adopting a retry for $k methods of a Worker that has none (plain+$k, $plain_k_raw B):"
    printf '%-60s %10s %10s\n' "" wasm gzip
    printf '%-60s %10s %10s\n' "adopt+$k" "$adopt_k_raw" "$adopt_k_gz"
    printf '%-60s %10s %10s\n' "adopt+$k-logs-off" "$adopt_kn_raw" "$adopt_kn_gz"
    printf '%-60s %10s %10s\n' "backon+$k" "$backon_k_raw" "$backon_k_gz"
    printf '%-60s %10s %10s\n' "#[d1_retry] on the $k methods (adopt+$k - plain+$k)" \
        "$((adopt_k_raw - plain_k_raw))" "$((adopt_k_gz - plain_k_gz))"
    printf '%-60s %10s %10s\n' "the same, logs compiled out (adopt+$k-logs-off - plain+$k)" \
        "$((adopt_kn_raw - plain_k_raw))" "$((adopt_kn_gz - plain_k_gz))"
    printf '%-60s %10s %10s\n' "backon on the $k methods, d1-retry's classifier (backon+$k - plain+$k)" \
        "$((backon_k_raw - plain_k_raw))" "$((backon_k_gz - plain_k_gz))"
fi

# TOP=N: the N items of the wasm that grew or shrank most from plain to with (twiggy, which
# `cargo install twiggy` provides): where the added bytes are. Functions are summed by name
# without the symbol hash, so that a function the two builds both have (a route handler)
# is compared with itself rather than listed twice under two hashes, and the copies of one
# function (one per codegen unit) count together; data segments count as one item.
if [ -n "${TOP:-}" ]; then
    [[ "$TOP" =~ ^[1-9][0-9]*$ ]] || fail "TOP must be a positive number of items, not '$TOP'"
    twiggy="$(tool twiggy twiggy)"
    command -v python3 >/dev/null || fail "TOP needs python3"
    named_with="$with" named_plain="$plain"
    if [ "${SIZE_PROFILE:-0}" = 1 ]; then
        # Stripped, the wasm has no names to list its items by: the same two Workers again
        # with the names section kept. Its own bytes are left out of the listing below, so
        # every other item is the size it has in the stripped builds above.
        named_with="$(copy with-named)"
        named_plain="$(copy plain-named)"
        strip_d1_retry "$named_plain"
        sed -i 's/^strip = true$/strip = false/' "$named_with/Cargo.toml" "$named_plain/Cargo.toml"
        build "$named_with" >/dev/null
        build "$named_plain" >/dev/null
    fi
    "$twiggy" top -n 1000000 -f csv "$named_plain/build/index_bg.wasm" >"$work/plain.csv"
    "$twiggy" top -n 1000000 -f csv "$named_with/build/index_bg.wasm" >"$work/with.csv"
    echo
    echo "the $TOP items that changed most, plain -> with (twiggy top, by name without hash):"
    python3 - "$work/plain.csv" "$work/with.csv" "$TOP" "${SIZE_PROFILE:-0}" <<'PY'
import collections, csv, re, sys

def sizes(path):
    total = collections.Counter()
    for row in csv.DictReader(open(path)):
        name = re.sub(r"::h[0-9a-f]{16}(\[[0-9]+\])?$", "", row["Name"])
        # A local copy of a standard library function is numbered (`write_char.550`), and
        # the numbers differ from one build to the next.
        name = re.sub(r"\.[0-9]+$", "", name)
        if sys.argv[4] == "1" and name.endswith('names" subsection'):
            continue  # the names themselves, which the stripped builds do not have
        if name.startswith("data segment"):
            name = "data segments"
        total[name] += int(row["ShallowSize"])
    return total

plain, with_ = sizes(sys.argv[1]), sizes(sys.argv[2])
rows = sorted(set(plain) | set(with_), key=lambda n: -abs(with_[n] - plain[n]))
print(f"{'delta':>8} {'plain':>8} {'with':>8}  item")
for name in rows[: int(sys.argv[3])]:
    print(f"{with_[name] - plain[name]:+8d} {plain[name]:8d} {with_[name]:8d}  {name[:110]}")
print(f"all items: {sum(with_.values()) - sum(plain.values()):+d} bytes")
runtime = sum(v for n, v in with_.items() if "d1_retry_runtime" in n)
print(f"functions of d1_retry_runtime in with: {runtime} bytes")
PY
fi
