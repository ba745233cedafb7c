// End-to-end: the example Worker (examples/worker, built with `--features fast-retries`)
// under `wrangler dev`, against a real local D1, behind the failure-injecting binding of
// worker/inject.mjs. Started by scripts/e2e.sh, which passes:
//   E2E_BASE_URL    where the Worker listens
//   E2E_WORKER_LOG  the file wrangler's output (the Worker's console) goes to
//   E2E_REPORT      optional: a Markdown table of every injected case is written there
//
// Each case resets the database, sends one request with a failure plan, and checks what
// the caller got, how many times the statement was called, the waits between calls, the
// log lines with their fields, and what the database holds afterwards.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { openSync, readSync, fstatSync, closeSync, writeFileSync } from "node:fs";

const BASE = process.env.E2E_BASE_URL ?? "http://127.0.0.1:8787";
const LOG = process.env.E2E_WORKER_LOG;
const REPORT = process.env.E2E_REPORT;

// The example's `fast-retries` policy: 5 attempts, 5 ms doubling to a 20 ms cap, 80-120 %.
const MAX_ATTEMPTS = 5;
const BASE_DELAY_MS = 5;
const MAX_DELAY_MS = 20;

/** The smallest and largest `d1.delay_ms` before retry `retry` (1-based). */
function delayBounds(retry, base = BASE_DELAY_MS, cap = MAX_DELAY_MS) {
  const capped = Math.min(base * 2 ** (retry - 1), cap);
  // delay_ms is the delay truncated to whole milliseconds.
  return [Math.floor(capped * 0.8), Math.floor(capped * 1.2)];
}

// Every message of shared/notes/d1-errors.md, and the class the Worker must see.
const DOCUMENTED = [
  ["Cannot resolve D1 DB due to transient issue on remote node.", "not_executed"],
  ["Internal error while starting up D1 DB storage caused object to be reset.", "not_executed"],
  ["D1 DB is overloaded. Too many requests queued.", "not_executed"],
  ["Network connection lost.", "maybe_executed"],
  ["Internal error in D1 DB storage caused object to be reset.", "maybe_executed"],
  ["D1 DB reset because its code was updated.", "maybe_executed"],
  ["Can't read from request stream because client disconnected.", "maybe_executed"],
  ["D1 DB is overloaded. Requests queued for too long.", "maybe_executed"],
  ["internal error; reference = 6cs6dbfq4tb5lmtrbc3t0lis", "maybe_executed"],
  ["Replica disconnected from primary", "maybe_executed"],
  ["D1 DB storage operation exceeded timeout which caused object to be reset.", "permanent"],
  ["D1 DB's isolate exceeded its memory limit and was reset.", "permanent"],
  ["D1 DB exceeded its CPU time limit and was reset.", "permanent"],
].map(([message, cls]) => ({ message, cls, shape: "d1" }));

// A transient phrase quoted inside a permanent error (D1 echoes the SQL) must not retry.
const QUOTED = {
  message:
    "D1_EXEC_ERROR: Error in line 1: INSERT INTO t VALUES ('Network connection lost.'): no such table: t: SQLITE_ERROR",
  cls: "permanent",
  shape: "bare",
};

const MESSAGES = [...DOCUMENTED, QUOTED];

const USER_1 = { id: 1, email: "ada@example.com", name: "Ada" };

// Each kind of function: the route, the statement call that fails, whether a failure after
// which it may have run can be retried, and how to read back its effect.
const TEA = { item: "e2e-tea", quantity: 2 };
const PAIR = [
  { item: "e2e-a", quantity: 1 },
  { item: "e2e-b", quantity: 3 },
];
const teaRows = "SELECT COUNT(*) AS n FROM orders WHERE item = 'e2e-tea'";
const pairRows = "SELECT COUNT(*) AS n FROM orders WHERE item IN ('e2e-a', 'e2e-b')";
const stats = { users: 1, orders: 1 };

const KINDS = [
  {
    name: "read, first() (#[d1_retry])",
    send: () => call("GET", "/users/1"),
    op: "first",
    access: "read_only",
    operation: "Shop::find_user",
    value: USER_1,
  },
  {
    name: "read, all() (#[d1_retry])",
    send: () => call("GET", "/users/1/orders"),
    op: "all",
    access: "read_only",
    operation: "Shop::user_orders",
    value: [{ id: 1, user_id: 1, item: "seed", quantity: 1 }],
  },
  {
    // The other arm of the `match` that chooses `user_orders`'s statement.
    name: "read chosen by match, all() (#[d1_retry])",
    send: () => call("GET", "/users/1/orders?item=seed"),
    op: "all",
    access: "read_only",
    operation: "Shop::user_orders",
    value: [{ id: 1, user_id: 1, item: "seed", quantity: 1 }],
  },
  {
    // A statement made by a helper: the attribute reads its SQL off workerd's statement.
    name: "read made by a helper, first() (#[d1_retry])",
    send: () => call("GET", "/users/1/orders/count"),
    op: "first",
    access: "read_only",
    operation: "Shop::order_count",
    value: 1,
  },
  {
    // The same statement in a body declared read_only that is one D1 call: that call is
    // retried as order_count's is.
    name: "read made by a helper, in a read_only body of one call (#[d1_retry(read_only)])",
    send: () => call("GET", "/users/1/orders/report"),
    op: "first",
    access: "read_only",
    operation: "Shop::order_report",
    value: 1,
  },
  {
    // The same statement after another read, in a read_only body retried whole: each
    // attempt runs the all() again, then the first() the plan strikes.
    name: "read made by a helper after another read, in a read_only body retried whole (#[d1_retry(read_only)])",
    send: () => call("GET", "/users/1/orders/summary"),
    op: "first",
    access: "read_only",
    operation: "Shop::order_summary",
    value: 1,
  },
  {
    name: "write made by a helper, run() (#[d1_retry])",
    send: () => call("POST", "/users/1/orders/prepared", TEA),
    op: "run",
    access: "write",
    operation: "Shop::place_prepared_order",
    effect: { sql: teaRows, once: 1 },
  },
  {
    name: "single write (#[d1_retry])",
    send: () => call("POST", "/users/1/orders", TEA),
    op: "run",
    access: "write",
    operation: "Shop::place_order",
    effect: { sql: teaRows, once: 1 },
  },
  {
    name: "idempotent upsert (#[d1_retry(idempotent)])",
    send: () => call("PUT", "/users/2", { email: "grace@example.com", name: "Grace" }),
    op: "run",
    access: "idempotent",
    operation: "Shop::save_user",
    effect: {
      sql: "SELECT COUNT(*) AS n FROM users WHERE id = 2 AND email = 'grace@example.com'",
      once: 1,
    },
  },
  {
    name: "batch of writes (#[d1_retry])",
    send: () => call("POST", "/users/1/orders/batch", PAIR),
    op: "batch",
    access: "write",
    operation: "Shop::place_orders",
    effect: { sql: pairRows, once: 2 },
  },
  {
    name: "batch of reads (#[d1_retry])",
    send: () => call("GET", "/stats"),
    op: "batch",
    access: "read_only",
    operation: "Shop::stats",
    value: stats,
  },
  {
    name: "D1Retry read, first()",
    send: () => call("GET", "/wrapped/users/1"),
    op: "first",
    access: "read_only",
    operation: "SELECT id, email, name FROM users WHERE id = ?1",
    value: USER_1,
  },
  {
    name: "D1Retry read, all()",
    send: () => call("GET", "/wrapped/users/1/orders"),
    op: "all",
    access: "read_only",
    operation: "SELECT id, user_id, item, quantity FROM orders WHERE user_id = ?1 ORDER BY id",
    value: [{ id: 1, user_id: 1, item: "seed", quantity: 1 }],
  },
  {
    name: "D1Retry read, raw()",
    send: () => call("GET", "/wrapped/users/1/order-items"),
    op: "raw",
    access: "read_only",
    operation: "SELECT item, quantity FROM orders /* oldest first,",
    value: [["seed", 1]],
  },
  {
    name: "D1Retry session read, first()",
    send: () => call("GET", "/wrapped/session/users/1"),
    op: "first",
    access: "read_only",
    operation: "SELECT id, email, name FROM users WHERE id = ?1",
    value: USER_1,
  },
  {
    name: "D1Retry read, exec()",
    send: () => call("GET", "/wrapped/exec"),
    op: "exec",
    access: "read_only",
    operation: "SELECT COUNT(*) FROM users",
    value: 1,
  },
  {
    name: "D1Retry write, run()",
    send: () => call("POST", "/wrapped/users/1/orders", TEA),
    op: "run",
    access: "write",
    operation: "INSERT INTO orders (user_id, item, quantity) VALUES (?1, ?2, ?3)",
    effect: { sql: teaRows, once: 1 },
  },
  {
    name: "D1Retry batch of writes",
    send: () => call("POST", "/wrapped/users/1/orders/batch", PAIR),
    op: "batch",
    access: "write",
    operation: "D1Retry::batch",
    effect: { sql: pairRows, once: 2 },
  },
  {
    name: "D1Retry batch of reads",
    send: () => call("GET", "/wrapped/stats"),
    op: "batch",
    access: "read_only",
    operation: "D1Retry::batch",
    value: stats,
  },
];

function retriable(cls, access) {
  if (cls === "not_executed") return true;
  if (cls === "maybe_executed") return access !== "write";
  return false;
}

// ---------------------------------------------------------------------------------------
// Talking to the Worker, its console, and the real database.

let injection; // the plan sent with the next request
let requests = 0;

async function call(method, path, body) {
  const headers = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  if (injection) headers["x-inject"] = JSON.stringify(injection);
  const requestId = String(++requests);
  headers["x-e2e-request"] = requestId;
  const logFrom = logSize();
  const sent = performance.now();
  const response = await fetch(BASE + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  // The response time on the test's clock: from sending to the whole answer.
  const ms = performance.now() - sent;
  const trace = JSON.parse(response.headers.get("x-d1-trace") ?? "[]");
  const logs = await logLinesOf(logFrom, requestId);
  return { status: response.status, json, trace, logs, ms, sent };
}

async function control(path, body) {
  const response = await fetch(BASE + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body ?? {}),
  });
  const json = await response.json();
  assert.equal(response.status, 200, `${path}: ${JSON.stringify(json)}`);
  return json;
}

async function sql(text, params = []) {
  return (await control("/__control/sql", { sql: text, params })).results;
}

async function resetDatabase() {
  await control("/__control/reset");
  await sql("INSERT INTO users (id, email, name) VALUES (?1, ?2, ?3)", [1, USER_1.email, USER_1.name]);
  await sql("INSERT INTO orders (id, user_id, item, quantity) VALUES (1, 1, 'seed', 1)");
}

function logSize() {
  if (!LOG) return 0;
  const fd = openSync(LOG, "r");
  try {
    return fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
}

function readLogFrom(offset) {
  const fd = openSync(LOG, "r");
  try {
    const size = fstatSync(fd).size;
    const buffer = Buffer.alloc(Math.max(0, size - offset));
    readSync(fd, buffer, 0, buffer.length, offset);
    return buffer.toString("utf8");
  } finally {
    closeSync(fd);
  }
}

// The `[tracing] {...}` lines the Worker printed for one request: those between the
// `[e2e] begin <id>` and `[e2e] end <id>` lines that worker/inject.mjs prints around it.
async function logLinesOf(offset, requestId) {
  assert.ok(LOG, "E2E_WORKER_LOG must name wrangler's output file");
  const deadline = Date.now() + 10_000;
  for (;;) {
    const text = readLogFrom(offset);
    const lines = text.split("\n");
    const begin = lines.indexOf(`[e2e] begin ${requestId}`);
    const end = lines.indexOf(`[e2e] end ${requestId}`);
    // The end line counts once its newline is there: the last piece may still be written.
    if (begin >= 0 && end > begin && end < lines.length - 1) {
      return lines
        .slice(begin + 1, end)
        .filter((line) => line.startsWith("[tracing] "))
        .map((line) => JSON.parse(line.slice("[tracing] ".length)));
    }
    if (Date.now() > deadline) {
      assert.fail(`no "[e2e] end ${requestId}" line in the Worker's output:\n${text}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function d1Lines(logs) {
  return logs.filter((line) => line.target === "d1_retry_runtime::log");
}

// ---------------------------------------------------------------------------------------
// The report of every injected case, for the closing note.

const report = [];

after(() => {
  if (!REPORT) return;
  const header =
    "| message | shape | when | function | class seen | attempts | status | database afterwards |\n" +
    "|---|---|---|---|---|---|---|---|\n";
  const rows = report.map(
    (r) =>
      `| ${r.message} | ${r.shape} | ${r.when} | ${r.kind} | ${r.seen} | ${r.attempts} | ${r.status} | ${r.db} |`,
  );
  writeFileSync(REPORT, header + rows.join("\n") + "\n");
});

before(async () => {
  await resetDatabase();
});

// ---------------------------------------------------------------------------------------

describe("without failures", () => {
  test("reads and writes through #[d1_retry] reach the real database", async () => {
    injection = undefined;
    await resetDatabase();
    let r = await call("POST", "/users", { email: "grace@example.com", name: "Grace" });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const grace = r.json.value;
    assert.deepEqual(await sql("SELECT email, name FROM users WHERE id = ?1", [grace]), [
      { email: "grace@example.com", name: "Grace" },
    ]);

    r = await call("GET", `/users/${grace}`);
    assert.deepEqual(r.json.value, { id: grace, email: "grace@example.com", name: "Grace" });
    assert.equal(r.trace.length, 1);
    assert.deepEqual(d1Lines(r.logs), [], "a call that succeeds logs nothing");

    r = await call("PUT", `/users/${grace}`, { email: "grace@example.org", name: "Grace H." });
    assert.equal(r.status, 200);
    r = await call("PUT", `/users/${grace}`, { email: "grace@example.org", name: "Grace H." });
    assert.equal(r.status, 200);
    assert.deepEqual(await sql("SELECT email, name FROM users WHERE id = ?1", [grace]), [
      { email: "grace@example.org", name: "Grace H." },
    ]);

    r = await call("POST", `/users/${grace}/orders`, { item: "pen", quantity: 3 });
    assert.equal(r.status, 200);
    r = await call("POST", `/users/${grace}/orders/batch`, [
      { item: "ink", quantity: 1 },
      { item: "paper", quantity: 5 },
    ]);
    assert.deepEqual(r.json.value, 2);
    r = await call("GET", `/users/${grace}/orders`);
    assert.deepEqual(
      r.json.value.map((o) => [o.item, o.quantity]),
      [
        ["pen", 3],
        ["ink", 1],
        ["paper", 5],
      ],
    );
    r = await call("GET", "/stats");
    assert.deepEqual(r.json.value, { users: 2, orders: 4 });
    r = await call("GET", "/users/count");
    assert.deepEqual(r.json.value, 2);
  });

  test("reads and writes through D1Retry reach the real database", async () => {
    injection = undefined;
    await resetDatabase();
    let r = await call("POST", "/wrapped/users/1/orders", { item: "cup", quantity: 2 });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    r = await call("POST", "/wrapped/users/1/orders/batch", [{ item: "lid", quantity: 4 }]);
    assert.equal(r.json.value, 1);
    r = await call("GET", "/wrapped/users/1/order-items");
    assert.deepEqual(r.json.value, [
      ["seed", 1],
      ["cup", 2],
      ["lid", 4],
    ]);
    r = await call("GET", "/wrapped/users/1/orders");
    assert.equal(r.json.value.length, 3);
    r = await call("GET", "/wrapped/users/1");
    assert.deepEqual(r.json.value, USER_1);
    r = await call("GET", "/wrapped/session/users/1");
    assert.deepEqual(r.json.value, USER_1);
    r = await call("GET", "/wrapped/stats");
    assert.deepEqual(r.json.value, { users: 1, orders: 3 });
    r = await call("GET", "/wrapped/exec");
    assert.equal(r.json.value, 1);
    assert.deepEqual(await sql("SELECT item FROM orders ORDER BY id"), [
      { item: "seed" },
      { item: "cup" },
      { item: "lid" },
    ]);
  });
});

// d1-retry judges SQL handed to `prepare` as SQLite reads it whole (`is_read_only_prepared`)
// and SQL handed to `exec` line by line (`is_read_only`). This is the premise, on the real
// binding: D1 does not cut a prepared statement at its line breaks.
describe("a prepared statement reaches SQLite whole", () => {
  test("a DELETE on the inner line of a comment or a string runs nothing", async () => {
    await resetDatabase();
    assert.deepEqual(
      await sql("SELECT COUNT(*) AS n FROM users /* every user,\nDELETE FROM users;\n*/"),
      [{ n: 1 }],
    );
    assert.deepEqual(await sql("SELECT 'a;\nDELETE FROM users;' AS t"), [
      { t: "a;\nDELETE FROM users;" },
    ]);
    assert.deepEqual(await sql("SELECT COUNT(*) AS n FROM users"), [{ n: 1 }]);
  });
});

describe("real permanent errors reach the caller after exactly one attempt", () => {
  test("UNIQUE violation", async () => {
    injection = undefined;
    await resetDatabase();
    const r = await call("POST", "/users", { email: USER_1.email, name: "Impostor" });
    assert.equal(r.status, 500);
    assert.equal(r.json.class, "permanent");
    assert.match(r.json.error, /UNIQUE constraint failed: users\.email/);
    assert.equal(r.trace.length, 1);
    assert.deepEqual(await sql("SELECT COUNT(*) AS n FROM users"), [{ n: 1 }]);
    const [line, ...rest] = d1Lines(r.logs);
    assert.deepEqual(rest, []);
    assert.equal(line.message, "D1 failure, not retried");
    assert.equal(line["d1.withheld"], "permanent");
    assert.equal(line["d1.attempt"], 1);
    assert.equal(line["d1.operation"], "Shop::create_user");
    assert.match(line["d1.failure"], /^D1_ERROR: UNIQUE constraint failed: users\.email/);
    record({ message: "(real) UNIQUE constraint failed", shape: "real", when: "-" }, "single write, create_user", r, "users: 1 row (unchanged)");
  });

  test("syntax error", async () => {
    injection = undefined;
    const r = await call("GET", "/broken/syntax");
    assert.equal(r.status, 500);
    assert.equal(r.json.class, "permanent");
    assert.match(r.json.error, /syntax error/);
    assert.equal(r.trace.length, 1);
    assert.equal(d1Lines(r.logs).length, 1);
    record({ message: "(real) near \"SELEC\": syntax error", shape: "real", when: "-" }, "first(), broken_syntax", r, "-");
  });

  test("missing table", async () => {
    injection = undefined;
    const r = await call("GET", "/broken/missing-table");
    assert.equal(r.status, 500);
    assert.equal(r.json.class, "permanent");
    assert.match(r.json.error, /no such table: no_such_table/);
    assert.equal(r.trace.length, 1);
    assert.equal(d1Lines(r.logs).length, 1);
    record({ message: "(real) no such table", shape: "real", when: "-" }, "all(), missing_table", r, "-");
  });
});

// `seen` is the class the Worker gave the failure: in its first log line, or in the
// error it answered with.
function record(failure, kind, r, db) {
  const seen = d1Lines(r.logs)[0]?.["d1.failure_class"] ?? r.json.class;
  const message = failure.cause ? `${failure.message} (cause: ${failure.cause})` : failure.message;
  report.push({
    message: message.replaceAll("|", "\\|"),
    shape: failure.shape,
    when: failure.when,
    kind,
    seen,
    attempts: r.trace.length,
    status: r.status,
    db,
  });
}

/**
 * Sends the kind's request with `count` failures injected into its statement call, and
 * checks the outcome against the retry table.
 */
async function injectedCase(kind, failure, when, count) {
  await resetDatabase();
  injection = {
    ops: [kind.op],
    count,
    when,
    shape: failure.shape,
    message: failure.message,
    cause: failure.cause,
  };
  let r;
  try {
    r = await kind.send();
  } finally {
    injection = undefined;
  }
  const retry = retriable(failure.cls, kind.access);
  const calls = r.trace.filter((c) => c.op === kind.op);
  const expectedAttempts = retry ? Math.min(count + 1, MAX_ATTEMPTS) : 1;
  const succeeded = retry && count < MAX_ATTEMPTS;
  const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace });

  // What the caller got.
  if (succeeded) {
    assert.equal(r.status, 200, detail);
    if (kind.value !== undefined) assert.deepEqual(r.json.value, kind.value);
  } else {
    assert.equal(r.status, 500, detail);
    assert.equal(r.json.class, failure.cls, detail);
    assert.ok(r.json.error.includes(failure.message), detail);
  }

  // How many times the statement was called, and which calls failed.
  assert.equal(calls.length, expectedAttempts, detail);
  assert.deepEqual(
    calls.map((c) => c.failed),
    calls.map((_, i) => i < count),
    detail,
  );

  // The log lines and their fields.
  const lines = d1Lines(r.logs);
  const retries = lines.filter((l) => l.message === "D1 transient failure, retrying");
  assert.equal(retries.length, expectedAttempts - 1, JSON.stringify(lines));
  retries.forEach((line, i) => {
    assert.equal(line.level, "WARN");
    assert.equal(line["d1.operation"], kind.operation);
    assert.equal(line["d1.read_only"], kind.access === "read_only");
    assert.equal(line["d1.attempt"], i + 1);
    assert.equal(line["d1.max_attempts"], MAX_ATTEMPTS);
    assert.equal(line["d1.failure_class"], failure.cls);
    assert.equal(line["d1.budget_exhausted"], false);
    assert.ok(line["d1.failure"].includes(failure.message), line["d1.failure"]);
    const [min, max] = delayBounds(i + 1);
    const delay = line["d1.delay_ms"];
    assert.ok(delay >= min && delay <= max, `retry ${i + 1} waited ${delay} ms, not ${min}-${max}`);
    // The Worker really waited: the next call came at least that much later.
    const gap = calls[i + 1].at - calls[i].at;
    assert.ok(gap >= delay - 1, `retry ${i + 1}: calls ${gap} ms apart, delay ${delay} ms`);
  });
  const last = lines.at(-1);
  if (!succeeded) {
    // One line says why the failure reached the caller, in `d1.withheld`.
    const withheld =
      retry
        ? ["exhausted"]
        : failure.cls === "permanent"
          ? ["permanent"]
          : ["maybe_executed_write", "unseen_sql"];
    assert.equal(last?.message, "D1 failure, not retried", JSON.stringify(lines));
    assert.ok(withheld.includes(last["d1.withheld"]), JSON.stringify(lines));
    assert.equal(last["d1.attempt"], expectedAttempts);
    assert.equal(last["d1.failure_class"], failure.cls);
    assert.equal(lines.length, expectedAttempts, JSON.stringify(lines));
  } else {
    assert.equal(lines.length, expectedAttempts - 1, JSON.stringify(lines));
  }

  // What the database holds: a write ran exactly once when any attempt ran it (every
  // attempt runs it when the failure comes after the statement; only the last, successful
  // one when it comes before), and not at all otherwise.
  let db = "-";
  if (kind.effect) {
    const ran = succeeded || when === "after";
    const [{ n }] = await sql(kind.effect.sql);
    assert.equal(n, ran ? kind.effect.once : 0, `rows after the call; ${detail}`);
    db = `${n} row${n === 1 ? "" : "s"} written`;
  }
  record({ ...failure, when }, kind.name, r, db);
}

describe("injected failures, every documented message, every kind of function", () => {
  for (const failure of MESSAGES) {
    // Not executed means D1 was never reached, so it is only ever injected before.
    const whens = failure.cls === "not_executed" ? ["before"] : ["before", "after"];
    for (const when of whens) {
      for (const kind of KINDS) {
        test(`${failure.message} | ${when} | ${kind.name}`, () => injectedCase(kind, failure, when, 2));
      }
    }
  }
});

describe("injected failures in the other shapes a JavaScript failure takes", () => {
  const read = KINDS[0];
  const all = KINDS[1];
  for (const { message, cls } of DOCUMENTED) {
    // new Error(message, { cause }): `Error::D1` when the message starts with "D1",
    // `Error::UnknownJsError` otherwise; and a thrown string, `Error::JsError`.
    for (const shape of ["bare", "string"]) {
      const when = cls === "not_executed" ? "before" : "after";
      for (const kind of [read, all]) {
        test(`${message} | ${shape} | ${kind.name}`, () =>
          injectedCase(kind, { message, cls, shape }, when, 2));
      }
    }
  }
});

describe("a D1 message that says nothing leaves the decision to its JavaScript cause", () => {
  // A bare `D1_ERROR`, the detail in the cause only (wrangler before 3.1.1). `first()` gives
  // `Error::D1`, whose causes d1-retry reads through JavaScript (code that exists only in
  // the wasm build); `all()` gives `Error::UnknownJsError`, whose cause is the next link.
  // D1's words there decide, unless the cause carries a SQLite code: then the query reached
  // SQLite, and the failure is permanent whatever the words around the code say.
  const read = KINDS[0];
  const all = KINDS[1];
  for (const { cause, cls } of [
    { cause: "Network connection lost.", cls: "maybe_executed" },
    { cause: "Network connection lost.: SQLITE_IOERR", cls: "permanent" },
  ]) {
    for (const kind of [read, all]) {
      test(`D1_ERROR caused by ${cause} | ${kind.name}`, () =>
        injectedCase(kind, { message: "D1_ERROR", cause, cls, shape: "bare" }, "after", 2));
    }
  }
});

describe("retries stop after the policy's attempts", () => {
  const lost = DOCUMENTED.find((f) => f.message === "Network connection lost.");
  const overloaded = DOCUMENTED.find((f) => f.cls === "not_executed");
  for (const kind of KINDS) {
    test(`not executed, every attempt | ${kind.name}`, () => injectedCase(kind, overloaded, "before", 9));
  }
  for (const kind of KINDS.filter((k) => k.access !== "write")) {
    test(`maybe executed after it ran, every attempt | ${kind.name}`, () =>
      injectedCase(kind, lost, "after", 9));
  }
});

test("the default schedule waits 160-240 ms before the first retry", async () => {
  await resetDatabase();
  injection = {
    ops: ["first"],
    count: 1,
    when: "before",
    shape: "d1",
    message: "D1 DB is overloaded. Too many requests queued.",
  };
  const r = await call("GET", "/users/count");
  injection = undefined;
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(r.json.value, 1);
  assert.equal(r.trace.length, 2);
  const [line, ...rest] = d1Lines(r.logs);
  assert.deepEqual(rest, []);
  assert.equal(line["d1.operation"], "Shop::count_users");
  const [min, max] = delayBounds(1, 200, 2000);
  assert.ok(line["d1.delay_ms"] >= min && line["d1.delay_ms"] <= max, `${line["d1.delay_ms"]} ms`);
  const gap = r.trace[1].at - r.trace[0].at;
  assert.ok(gap >= line["d1.delay_ms"] - 1, `calls ${gap} ms apart`);
  record(
    { message: "D1 DB is overloaded. Too many requests queued.", cls: "not_executed", shape: "d1", when: "before" },
    `default schedule, count_users (waited ${line["d1.delay_ms"]} ms)`,
    r,
    "-",
  );
});

// ---------------------------------------------------------------------------------------
// Several D1 calls in one #[d1_retry] function (`Shop::place_items`): it reads the user,
// inserts one order per item through one statement prepared once, then reads the count
// back. Each call is retried on its own: the failed call alone is made again, a completed
// one never, and the calls of one request share the policy's 4 retries.

const INSERT = "INSERT INTO orders";
const COUNT = "SELECT COUNT(*) AS n FROM orders";
const ITEMS = ["e2e-x", "e2e-y", "e2e-z"];

/** Each call `place_items` made, by name: "user", the item an insert bound, or "count". */
function steps(trace) {
  return trace.map((c) => {
    if (c.op === "run" && c.sql.startsWith(INSERT)) return c.params[1];
    if (c.op === "first" && c.sql.startsWith(COUNT)) return "count";
    if (c.op === "first" && c.sql.includes("FROM users WHERE id = ?1")) return "user";
    return `unexpected ${c.op} ${c.sql}`;
  });
}

/** Sends `items` to place_items for user 1 with `plan` injected. */
async function placeItems(items, plan) {
  await resetDatabase();
  injection = plan;
  try {
    return await call("POST", "/users/1/orders/each", items);
  } finally {
    injection = undefined;
  }
}

/** How many orders each item has, in the real database. */
async function rowsOf(items) {
  const rows = await sql(
    `SELECT item, COUNT(*) AS n FROM orders WHERE user_id = 1 AND item LIKE 'e2e-%' GROUP BY item`,
  );
  const seed = await sql("SELECT COUNT(*) AS n FROM orders WHERE item = 'seed'");
  assert.deepEqual(seed, [{ n: 1 }], "the seed order is untouched");
  return items.map((item) => rows.find((r) => r.item === item)?.n ?? 0);
}

/** The trace as [step, failed] pairs. */
function timeline(r) {
  return steps(r.trace).map((step, i) => [step, r.trace[i].failed]);
}

/** One "retrying" line of place_items: its fields, and that the Worker waited. */
function assertRetryLine(line, r, { retry, attempt, cls, readOnly, message }) {
  assert.equal(line.message, "D1 transient failure, retrying");
  assert.equal(line.level, "WARN");
  assert.equal(line["d1.operation"], "Shop::place_items");
  assert.equal(line["d1.read_only"], readOnly);
  assert.equal(line["d1.attempt"], attempt);
  assert.equal(line["d1.max_attempts"], MAX_ATTEMPTS);
  assert.equal(line["d1.failure_class"], cls);
  assert.ok(line["d1.failure"].includes(message), line["d1.failure"]);
  // The call's n-th retry waits the schedule's n-th delay, whichever call it retries.
  const [min, max] = delayBounds(retry);
  const delay = line["d1.delay_ms"];
  assert.ok(delay >= min && delay <= max, `retry ${retry} waited ${delay} ms, not ${min}-${max}`);
  const failed = r.trace.filter((c) => c.failed)[retry - 1];
  const next = r.trace[r.trace.indexOf(failed) + 1];
  assert.ok(next.at - failed.at >= delay - 1, `retry ${retry}: ${next.at - failed.at} ms, delay ${delay} ms`);
}

function rowsText(items, rows) {
  return items.map((item, i) => `${item}: ${rows[i]}`).join(", ");
}

describe("several D1 calls in one function, each retried on its own (place_items)", () => {
  const notExecuted = DOCUMENTED.filter((f) => f.cls === "not_executed");
  const maybeExecuted = DOCUMENTED.filter((f) => f.cls === "maybe_executed");

  test("without failures: a read, one insert per item, a read", async () => {
    const r = await placeItems(ITEMS, undefined);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.value, 4);
    assert.deepEqual(steps(r.trace), ["user", ...ITEMS, "count"]);
    assert.deepEqual(d1Lines(r.logs), []);
    assert.deepEqual(await rowsOf(ITEMS), [1, 1, 1]);
  });

  // (a) The 2nd insert fails before D1 runs it: it alone is made again.
  for (const failure of notExecuted) {
    test(`${failure.message} | before the 2nd insert | retried alone`, async () => {
      const r = await placeItems(ITEMS, {
        ops: ["run"], sql: INSERT, nth: 2, count: 1, when: "before", shape: "d1", message: failure.message,
      });
      const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace });
      assert.equal(r.status, 200, detail);
      assert.equal(r.json.value, 4);
      assert.deepEqual(timeline(r), [
        ["user", false],
        ["e2e-x", false],
        ["e2e-y", true],
        ["e2e-y", false],
        ["e2e-z", false],
        ["count", false],
      ], detail);
      const lines = d1Lines(r.logs);
      assert.equal(lines.length, 1, JSON.stringify(lines));
      assertRetryLine(lines[0], r, { retry: 1, attempt: 1, cls: "not_executed", readOnly: false, message: failure.message });
      const rows = await rowsOf(ITEMS);
      assert.deepEqual(rows, [1, 1, 1], "each item exactly once");
      record({ ...failure, when: "before" }, "several calls, 2nd insert (place_items)", r, rowsText(ITEMS, rows));
    });
  }

  // (b) The 2nd insert ran, then the call failed: handed back, nothing run again.
  for (const failure of maybeExecuted) {
    test(`${failure.message} | after the 2nd insert ran | handed back`, async () => {
      const r = await placeItems(ITEMS, {
        ops: ["run"], sql: INSERT, nth: 2, count: 1, when: "after", shape: "d1", message: failure.message,
      });
      const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace });
      assert.equal(r.status, 500, detail);
      assert.equal(r.json.class, "maybe_executed", detail);
      assert.ok(r.json.error.includes(failure.message), detail);
      assert.deepEqual(timeline(r), [
        ["user", false],
        ["e2e-x", false],
        ["e2e-y", true],
      ], detail);
      const lines = d1Lines(r.logs);
      assert.equal(lines.length, 1, JSON.stringify(lines));
      const [line] = lines;
      assert.equal(line.message, "D1 failure, not retried");
      assert.equal(line["d1.withheld"], "maybe_executed_write");
      assert.equal(line["d1.operation"], "Shop::place_items");
      assert.equal(line["d1.read_only"], false);
      assert.equal(line["d1.attempt"], 1);
      assert.equal(line["d1.failure_class"], "maybe_executed");
      const rows = await rowsOf(ITEMS);
      assert.deepEqual(rows, [1, 1, 0], "items 1 and 2 once, item 3 never");
      record({ ...failure, when: "after" }, "several calls, 2nd insert (place_items)", r, rowsText(ITEMS, rows));
    });
  }

  // (c) The final read ran, then failed: the read alone is made again.
  for (const failure of maybeExecuted) {
    test(`${failure.message} | after the final read | retried alone`, async () => {
      const r = await placeItems(ITEMS, {
        ops: ["first"], sql: COUNT, count: 1, when: "after", shape: "d1", message: failure.message,
      });
      const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace });
      assert.equal(r.status, 200, detail);
      assert.equal(r.json.value, 4);
      assert.deepEqual(timeline(r), [
        ["user", false],
        ["e2e-x", false],
        ["e2e-y", false],
        ["e2e-z", false],
        ["count", true],
        ["count", false],
      ], detail);
      const lines = d1Lines(r.logs);
      assert.equal(lines.length, 1, JSON.stringify(lines));
      assertRetryLine(lines[0], r, { retry: 1, attempt: 1, cls: "maybe_executed", readOnly: true, message: failure.message });
      const rows = await rowsOf(ITEMS);
      assert.deepEqual(rows, [1, 1, 1], "every insert once");
      record({ ...failure, when: "after" }, "several calls, final read (place_items)", r, rowsText(ITEMS, rows));
    });
  }

  // (d) Every insert fails before D1 runs it: the request's calls share 4 retries.
  const overloaded = notExecuted.find((f) => f.message.includes("Too many requests queued"));

  test("not executed, each insert's first attempt | 4 retries shared across the loop", async () => {
    const items = ["e2e-a", "e2e-b", "e2e-c", "e2e-d", "e2e-e", "e2e-f"];
    const r = await placeItems(items, {
      ops: ["run"], sql: INSERT, calls: [1, 3, 5, 7, 9, 11], when: "before", shape: "d1", message: overloaded.message,
    });
    const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace });
    assert.equal(r.status, 500, detail);
    assert.equal(r.json.class, "not_executed", detail);
    assert.ok(r.json.error.includes(overloaded.message), detail);
    // a-d are each retried once (4 retries in all); e's failure reaches the caller.
    assert.deepEqual(timeline(r), [
      ["user", false],
      ...["e2e-a", "e2e-b", "e2e-c", "e2e-d"].flatMap((item) => [[item, true], [item, false]]),
      ["e2e-e", true],
    ], detail);
    const lines = d1Lines(r.logs);
    assert.equal(lines.length, 5, JSON.stringify(lines));
    lines.slice(0, 4).forEach((line, i) =>
      assertRetryLine(line, r, { retry: i + 1, attempt: 1, cls: "not_executed", readOnly: false, message: overloaded.message }),
    );
    const last = lines[4];
    assert.equal(last.message, "D1 failure, not retried");
    assert.equal(last["d1.withheld"], "exhausted");
    assert.equal(last["d1.attempt"], 1);
    const rows = await rowsOf(items);
    assert.deepEqual(rows, [1, 1, 1, 1, 0, 0]);
    record({ ...overloaded, when: "before" }, "several calls, each insert once (place_items, 6 items)", r, rowsText(items, rows));
  });

  test("not executed, every insert every time | the first insert takes the 4 retries", async () => {
    const r = await placeItems(ITEMS, {
      ops: ["run"], sql: INSERT, count: 99, when: "before", shape: "d1", message: overloaded.message,
    });
    const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace });
    assert.equal(r.status, 500, detail);
    assert.equal(r.json.class, "not_executed", detail);
    assert.deepEqual(timeline(r), [["user", false], ...Array(MAX_ATTEMPTS).fill(["e2e-x", true])], detail);
    const lines = d1Lines(r.logs);
    assert.equal(lines.length, MAX_ATTEMPTS, JSON.stringify(lines));
    lines.slice(0, 4).forEach((line, i) =>
      assertRetryLine(line, r, { retry: i + 1, attempt: i + 1, cls: "not_executed", readOnly: false, message: overloaded.message }),
    );
    assert.equal(lines[4]["d1.withheld"], "exhausted");
    assert.equal(lines[4]["d1.attempt"], MAX_ATTEMPTS);
    const rows = await rowsOf(ITEMS);
    assert.deepEqual(rows, [0, 0, 0]);
    record({ ...overloaded, when: "before" }, "several calls, every insert always (place_items)", r, rowsText(ITEMS, rows));
  });
});

// ---------------------------------------------------------------------------------------
// Stalls (issue 12): D1 hangs for 30-80 s before its storage object resets. The bounded
// methods (`Shop::find_user_bounded`, `Shop::place_order_bounded`) carry
// `attempt_timeout_ms = 1000, deadline_ms = 4000`; worker/inject.mjs makes the real binding
// hang (`stall_ms`). A cut attempt is a maybe-executed failure: a read is retried, a write
// handed back. The JavaScript promise is not cancelled when Rust drops its future, so a
// stalled call runs on to its end, as a D1 call would.

const ATTEMPT_TIMEOUT_MS = 1000;
const DEADLINE_MS = 4000;
const FIND_USER = "FROM users WHERE id = ?1";
const TIMED_OUT_READ = `D1 call timed out: Shop::find_user_bounded passed its attempt timeout of ${ATTEMPT_TIMEOUT_MS} ms`;
const DEADLINE_READ = `D1 call timed out: Shop::find_user_bounded passed its deadline of ${DEADLINE_MS} ms`;
const TIMED_OUT_WRITE = `D1 call timed out: Shop::place_order_bounded passed its attempt timeout of ${ATTEMPT_TIMEOUT_MS} ms`;

async function bounded(send, plan) {
  await resetDatabase();
  injection = plan;
  try {
    return await send();
  } finally {
    injection = undefined;
  }
}

const boundedRead = () => call("GET", "/bounded/users/1");
const boundedWrite = () => call("POST", "/bounded/users/1/orders", TEA);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads `text`'s count every 100 ms until `until` (the test's clock), asserting it never
 * exceeds `atMost`; returns every count seen.
 */
async function watchRows(text, until, atMost) {
  const seen = [];
  for (;;) {
    const [{ n }] = await sql(text);
    seen.push(n);
    assert.ok(n <= atMost, `${n} rows, at most ${atMost} allowed; seen ${seen}`);
    if (performance.now() >= until) return seen;
    await sleep(100);
  }
}

/** The one "retrying" line of a read cut by its attempt timeout. */
function assertCutAndRetried(line, r) {
  assert.equal(line.message, "D1 transient failure, retrying", JSON.stringify(line));
  assert.equal(line.level, "WARN");
  assert.equal(line["d1.operation"], "Shop::find_user_bounded");
  assert.equal(line["d1.read_only"], true);
  assert.equal(line["d1.attempt"], 1);
  assert.equal(line["d1.failure_class"], "maybe_executed");
  assert.equal(line["d1.failure"], TIMED_OUT_READ);
  const [min, max] = delayBounds(1);
  assert.ok(line["d1.delay_ms"] >= min && line["d1.delay_ms"] <= max, `${line["d1.delay_ms"]} ms`);
  const gap = r.trace[1].at - r.trace[0].at;
  assert.ok(gap >= ATTEMPT_TIMEOUT_MS, `the retry came ${gap} ms after the stalled call`);
}

/** The one "not retried" line of a write cut by its attempt timeout. */
function assertWriteHandedBack(lines) {
  assert.equal(lines.length, 1, JSON.stringify(lines));
  const [line] = lines;
  assert.equal(line.message, "D1 failure, not retried");
  assert.equal(line["d1.operation"], "Shop::place_order_bounded");
  assert.equal(line["d1.read_only"], false);
  assert.equal(line["d1.attempt"], 1);
  assert.equal(line["d1.failure_class"], "maybe_executed");
  assert.equal(line["d1.withheld"], "maybe_executed_write");
  assert.equal(line["d1.failure"], TIMED_OUT_WRITE);
}

const stallTimes = [];

describe("stalls: time limits against the real D1 (attempt timeout 1 s, deadline 4 s)", () => {
  after(() => {
    if (stallTimes.length) console.log(`stall response times: ${stallTimes.join("; ")}`);
  });

  test("without a stall the bounded read and write answer at once", async () => {
    let r = await bounded(boundedRead, undefined);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(r.json.value, USER_1);
    assert.equal(r.trace.length, 1);
    assert.deepEqual(d1Lines(r.logs), []);
    r = await call("POST", "/bounded/users/1/orders", TEA);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(await sql(teaRows), [{ n: 1 }]);
  });

  test("a stall shorter than the attempt timeout is waited out", async () => {
    const r = await bounded(boundedRead, { ops: ["first"], sql: FIND_USER, calls: [1], stall_ms: 300 });
    const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace });
    assert.equal(r.status, 200, detail);
    assert.deepEqual(r.json.value, USER_1);
    assert.equal(r.trace.length, 1, detail);
    assert.equal(r.trace[0].stalled, 300);
    assert.ok(r.ms >= 300 && r.ms < ATTEMPT_TIMEOUT_MS, `${r.ms} ms`);
    assert.deepEqual(d1Lines(r.logs), []);
    stallTimes.push(`read, 300 ms stall: ${Math.round(r.ms)} ms`);
  });

  // (a) The first attempt of a read hangs; it is cut at 1 s and the retry answers.
  const readStalls = [
    { name: "stalled 30 s, then would answer", plan: { stall_ms: 30_000 } },
    { name: "stalled 3 s, then would fail", plan: { stall_ms: 3000, message: "Internal error in D1 DB storage caused object to be reset." } },
    { name: "ran, then its answer stalled 30 s", plan: { stall_ms: 30_000, when: "after" } },
  ];
  for (const { name, plan } of readStalls) {
    test(`read, first attempt ${name} | cut at the attempt timeout, retried, right answer`, async () => {
      const r = await bounded(boundedRead, { ops: ["first"], sql: FIND_USER, calls: [1], when: "before", ...plan });
      const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace, ms: r.ms });
      assert.equal(r.status, 200, detail);
      assert.deepEqual(r.json.value, USER_1);
      assert.equal(r.trace.length, 2, detail);
      assert.deepEqual(r.trace.map((c) => c.stalled), [plan.stall_ms, 0], detail);
      // At least the attempt timeout, well within the deadline, far from the stall.
      assert.ok(r.ms >= ATTEMPT_TIMEOUT_MS, `${r.ms} ms`);
      assert.ok(r.ms < ATTEMPT_TIMEOUT_MS + 1000 && r.ms < DEADLINE_MS, `${r.ms} ms`);
      const lines = d1Lines(r.logs);
      assert.equal(lines.length, 1, JSON.stringify(lines));
      assertCutAndRetried(lines[0], r);
      stallTimes.push(`read, ${name}: ${Math.round(r.ms)} ms`);
      record({ message: `(stall ${plan.stall_ms} ms${plan.message ? `, then ${plan.message}` : ""})`, shape: "stall", when: plan.when ?? "before" },
        "bounded read (find_user_bounded)", r, "-");
    });
  }

  // (b) A write hangs before D1 runs it: the caller gets the timeout at 1 s, not a retry.
  // The wrapper, like D1, does not hear that Rust gave up, so the insert runs when the
  // stall ends, after the caller has its error: the row is there at most once (here, once,
  // late).
  test("write stalled 3 s before it ran | timeout error, not retried, lands late at most once", async () => {
    const STALL = 3000;
    const r = await bounded(boundedWrite, { ops: ["run"], sql: INSERT, calls: [1], when: "before", stall_ms: STALL });
    const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace, ms: r.ms });
    assert.equal(r.status, 500, detail);
    assert.equal(r.json.class, "maybe_executed", detail);
    assert.equal(r.json.error, TIMED_OUT_WRITE, detail);
    assert.equal(r.trace.length, 1, detail);
    assert.ok(r.ms >= ATTEMPT_TIMEOUT_MS && r.ms < ATTEMPT_TIMEOUT_MS + 1000, `${r.ms} ms`);
    assertWriteHandedBack(d1Lines(r.logs));
    // When the caller has its error, the stalled insert has not run yet...
    assert.deepEqual(await sql(teaRows), [{ n: 0 }], "no row while the insert still hangs");
    // ...and past the stall it runs, once: never twice.
    const seen = await watchRows(teaRows, r.sent + STALL + 1500, 1);
    assert.equal(seen.at(-1), 1, `the stalled insert landed after the stall; seen ${seen}`);
    stallTimes.push(`write stalled before it ran: ${Math.round(r.ms)} ms`);
    record({ message: `(stall ${STALL} ms, then runs)`, shape: "stall", when: "before" }, "bounded write (place_order_bounded)", r, "1 row, landed after the timeout");
  });

  test("write stalled 3 s before failing | timeout error, not retried, never lands", async () => {
    const STALL = 3000;
    const message = "Internal error in D1 DB storage caused object to be reset.";
    const r = await bounded(boundedWrite, { ops: ["run"], sql: INSERT, calls: [1], when: "before", stall_ms: STALL, message });
    const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace, ms: r.ms });
    assert.equal(r.status, 500, detail);
    assert.equal(r.json.class, "maybe_executed", detail);
    assert.equal(r.json.error, TIMED_OUT_WRITE, detail);
    assert.equal(r.trace.length, 1, detail);
    assert.ok(r.ms >= ATTEMPT_TIMEOUT_MS && r.ms < ATTEMPT_TIMEOUT_MS + 1000, `${r.ms} ms`);
    assertWriteHandedBack(d1Lines(r.logs));
    const seen = await watchRows(teaRows, r.sent + STALL + 1000, 0);
    stallTimes.push(`write stalled before failing: ${Math.round(r.ms)} ms`);
    record({ message: `(stall ${STALL} ms, then ${message})`, shape: "stall", when: "before" }, "bounded write (place_order_bounded)", r, `0 rows (${seen.length} reads)`);
  });

  // (c) The insert ran, then the answer hung: the row is there once, and no retry adds one.
  test("write ran, then stalled 30 s | timeout error, not retried, row exactly once", async () => {
    const STALL = 30_000;
    const r = await bounded(boundedWrite, { ops: ["run"], sql: INSERT, calls: [1], when: "after", stall_ms: STALL });
    const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace, ms: r.ms });
    assert.equal(r.status, 500, detail);
    assert.equal(r.json.class, "maybe_executed", detail);
    assert.equal(r.json.error, TIMED_OUT_WRITE, detail);
    assert.equal(r.trace.length, 1, detail);
    assert.ok(r.ms >= ATTEMPT_TIMEOUT_MS && r.ms < ATTEMPT_TIMEOUT_MS + 1000, `${r.ms} ms`);
    assertWriteHandedBack(d1Lines(r.logs));
    const seen = await watchRows(teaRows, performance.now() + 1000, 1);
    assert.ok(seen.every((n) => n === 1), `exactly one row throughout; seen ${seen}`);
    stallTimes.push(`write ran, then stalled: ${Math.round(r.ms)} ms`);
    record({ message: `(ran, then stall ${STALL} ms)`, shape: "stall", when: "after" }, "bounded write (place_order_bounded)", r, "1 row");
  });

  // (d) Every attempt hangs: three are cut by the attempt timeout, the fourth by what is
  // left of the deadline. The caller has its error at 4 s, not when D1 answers.
  test("read, every attempt stalled 30 s | deadline timeout at 4 s", async () => {
    const r = await bounded(boundedRead, { ops: ["first"], sql: FIND_USER, count: 99, stall_ms: 30_000 });
    const detail = JSON.stringify({ status: r.status, json: r.json, trace: r.trace, ms: r.ms });
    assert.equal(r.status, 500, detail);
    assert.equal(r.json.class, "maybe_executed", detail);
    assert.equal(r.json.error, DEADLINE_READ, detail);
    assert.ok(r.ms >= DEADLINE_MS && r.ms < DEADLINE_MS + 750, `${r.ms} ms`);
    // Attempts at about 0, 1, 2 and 3 s: 5-20 ms waits between 1 s attempts.
    assert.equal(r.trace.length, 4, detail);
    assert.ok(r.trace.every((c) => c.stalled === 30_000), detail);
    const lines = d1Lines(r.logs);
    assert.equal(lines.length, 4, JSON.stringify(lines));
    lines.slice(0, 3).forEach((line, i) => {
      assert.equal(line.message, "D1 transient failure, retrying");
      assert.equal(line["d1.attempt"], i + 1);
      assert.equal(line["d1.failure_class"], "maybe_executed");
      assert.equal(line["d1.failure"], TIMED_OUT_READ);
    });
    const last = lines[3];
    assert.equal(last.message, "D1 failure, not retried");
    assert.equal(last["d1.attempt"], 4);
    assert.equal(last["d1.failure_class"], "maybe_executed");
    assert.equal(last["d1.withheld"], "deadline");
    assert.equal(last["d1.failure"], DEADLINE_READ);
    stallTimes.push(`read, every attempt stalled: ${Math.round(r.ms)} ms`);
    record({ message: "(stall 30000 ms, every attempt)", shape: "stall", when: "before" }, "bounded read (find_user_bounded)", r, "-");
  });
});
