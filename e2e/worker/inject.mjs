// The example Worker's entry point, wrapped: each request runs the Rust Worker with
// `env.DB` replaced by a D1 binding that fails on command, in the shape real D1 failures
// have, before or after the real statement runs. Routes under /__control/ reach the real
// binding directly, for the tests to set up and read back the database.
//
// The request header `x-inject` holds the plan (JSON):
//   { "ops": ["first", "run", "all", "raw", "batch", "exec", "dump"],  // default: all of them
//     "sql": "INSERT INTO",     // only calls whose SQL contains this (a batch: any statement's)
//     "nth": 2,                 // the first failing call is the 2nd matching one (default 1)
//     "count": 2,               // how many matching calls fail, from the nth on
//     "calls": [1, 3],          // instead of nth and count: which matching calls fail (from 1)
//     "when": "before"|"after", // fail (or stall) before the statement runs, or after it ran
//     "shape": "d1"|"bare"|"string",
//     "message": "Network connection lost.",
//     "cause": "UNIQUE constraint failed: ...", // the cause's message (default below)
//     "stall_ms": 30000 }        // the struck calls hang this long (see below)
// shape "d1" (default) is what D1 throws: new Error("D1_ERROR: " + message, { cause: new Error(message) });
// "bare" is new Error(message, { cause: new Error("injected detail") }); "string" throws the message itself.
// A plan's "cause" replaces the cause's message of "d1" and "bare" ("bare" with the message
// "D1_ERROR" is what wrangler before 3.1.1 threw, its detail in the cause alone).
// A stall (`stall_ms`) is D1 hanging, as it does for 30-80 s before its storage object
// resets. Without a `message` the stalled call then proceeds:
//   when "before": hang, then run the real statement and answer (D1 slow to start it);
//   when "after":  run the real statement (a write lands), then hang, then answer.
// With a `message`, it fails after the hang instead of answering: when "before" without
// running the statement, when "after" having run it first.
// Like D1, the wrapper does not notice that the Worker gave up: d1-retry's attempt timeout
// drops the call's future, but that does not cancel the promise, so a stalled call goes on
// to its end (registered with ctx.waitUntil, so workerd lets it finish after the response),
// and a write stalled before it ran lands late, after the caller got its timeout.
// The request header `x-e2e-request: <id>` brackets the Worker's log lines for the request
// between `[e2e] begin <id>` and `[e2e] end <id>` lines.
// The response header `x-d1-trace` lists every statement call: [{ op, sql, params, at, failed,
// stalled }], `sql` the statement's (a batch's joined with "; "), `params` its bound values,
// `at` in milliseconds from the first call, `stalled` the hang in ms (0 for none).

import { WorkerEntrypoint } from "cloudflare:workers";
import RustWorker from "../../examples/worker/build/index.js";

const OPERATIONS = ["first", "run", "all", "raw", "batch", "exec", "dump"];

export default class extends WorkerEntrypoint {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/__control/")) {
      return control(url.pathname, request, this.env.DB);
    }
    const injector = new Injector(request.headers.get("x-inject"), this.ctx);
    const env = { ...this.env, DB: new D1Database(this.env.DB, injector) };
    // The Worker's log lines reach wrangler's output through the same stream as these
    // markers, in order; wrangler's own request lines do not, so tests look for these.
    const id = request.headers.get("x-e2e-request");
    if (id) console.log(`[e2e] begin ${id}`);
    let response;
    try {
      response = await RustWorker.prototype.fetch.call({ env, ctx: this.ctx }, request);
    } finally {
      if (id) console.log(`[e2e] end ${id}`);
    }
    const headers = new Headers(response.headers);
    headers.set("x-d1-trace", JSON.stringify(injector.trace));
    return new Response(response.body, { status: response.status, headers });
  }
}

class Injector {
  constructor(header, ctx) {
    this.ctx = ctx;
    const plan = header ? JSON.parse(header) : { count: 0 };
    this.ops = new Set(plan.ops ?? OPERATIONS);
    this.sql = plan.sql;
    this.nth = plan.nth ?? 1;
    this.calls = plan.calls ? new Set(plan.calls) : undefined;
    this.matched = 0;
    this.remaining = plan.count ?? 0;
    this.when = plan.when ?? "before";
    this.shape = plan.shape ?? "d1";
    this.message = plan.message ?? "";
    this.cause = plan.cause;
    this.stall = plan.stall_ms ?? 0;
    // A stall fails only when the plan names a message; otherwise the call proceeds.
    this.stallFails = plan.message !== undefined;
    this.trace = [];
    this.start = undefined;
  }

  failure() {
    switch (this.shape) {
      case "d1":
        return new Error(`D1_ERROR: ${this.message}`, { cause: new Error(this.cause ?? this.message) });
      case "bare":
        return new Error(this.message, { cause: new Error(this.cause ?? "injected detail") });
      case "string":
        return this.message;
      default:
        throw new Error(`unknown shape ${this.shape}`);
    }
  }

  // Whether the plan fails this call; counts the calls it matches.
  strikes(op, sql) {
    if (!this.ops.has(op)) return false;
    if (this.sql !== undefined && !(sql ?? "").includes(this.sql)) return false;
    this.matched += 1;
    if (this.calls) return this.calls.has(this.matched);
    if (this.matched < this.nth || this.remaining <= 0) return false;
    this.remaining -= 1;
    return true;
  }

  // Runs one statement call, failing (or stalling) it if the plan says so.
  async call(op, real, sql, params) {
    const now = Date.now();
    this.start ??= now;
    const struck = this.strikes(op, sql);
    const stall = struck ? this.stall : 0;
    const fail = struck && (stall === 0 || this.stallFails);
    this.trace.push({
      op,
      sql,
      params: params?.map(plain),
      at: now - this.start,
      failed: fail,
      stalled: stall,
    });
    if (stall === 0) {
      if (fail && this.when === "before") throw this.failure();
      const result = await real();
      if (fail) throw this.failure();
      return result;
    }
    const stalled = this.stalled(real, stall, fail);
    // Carried to its end even when the Worker stops waiting: D1 does not hear of it.
    this.ctx?.waitUntil(stalled.catch(() => {}));
    return stalled;
  }

  // A stalled call: hangs `stall` ms before or after the real statement, per `when`.
  async stalled(real, stall, fail) {
    if (this.when === "before") {
      await sleep(stall);
      if (fail) throw this.failure();
      return real();
    }
    const result = await real();
    await sleep(stall);
    if (fail) throw this.failure();
    return result;
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// A bound value as JSON can hold it.
function plain(value) {
  return typeof value === "bigint" ? String(value) : value;
}

// What a database and a session share: statements and batches, both failing on command.
class Statements {
  constructor(real, injector) {
    this.real = real;
    this.injector = injector;
  }
  prepare(sql) {
    return new D1PreparedStatement(this.real.prepare(sql), this.injector, sql, []);
  }
  async batch(statements) {
    const sql = statements.map((s) => s.sql).join("; ");
    return this.injector.call("batch", () => this.real.batch(statements.map((s) => s.real)), sql);
  }
}

// The `worker` crate checks the binding's constructor name, so the classes it sees keep
// the names of the real ones (a subclass's `constructor.name` is its own).
class D1Database extends Statements {
  async exec(sql) {
    return this.injector.call("exec", () => this.real.exec(sql), sql);
  }
  async dump() {
    return this.injector.call("dump", () => this.real.dump());
  }
  withSession(constraintOrBookmark) {
    return new D1DatabaseSession(this.real.withSession(constraintOrBookmark), this.injector);
  }
}

class D1DatabaseSession extends Statements {
  getBookmark() {
    return this.real.getBookmark();
  }
}

class D1PreparedStatement {
  constructor(real, injector, sql, params) {
    this.real = real;
    this.injector = injector;
    this.sql = sql;
    this.params = params;
  }
  bind(...values) {
    return new D1PreparedStatement(this.real.bind(...values), this.injector, this.sql, values);
  }
  // workerd's statement keeps its SQL in `statement`, which d1-retry reads for a statement
  // out of its sight; the stand-in shows the real statement's own, not its copy.
  get statement() {
    return this.real.statement;
  }
  async first(column) {
    return this.injector.call("first", () => this.real.first(column), this.sql, this.params);
  }
  async run() {
    return this.injector.call("run", () => this.real.run(), this.sql, this.params);
  }
  async all() {
    return this.injector.call("all", () => this.real.all(), this.sql, this.params);
  }
  async raw(options) {
    return this.injector.call("raw", () => this.real.raw(options), this.sql, this.params);
  }
}

// POST /__control/sql  {"sql": "...", "params": [...]}  -> {"results": [...]} (real binding)
// POST /__control/reset                                  -> empties the tables
// GET  /__control/ready                                  -> 200 once the Worker serves
async function control(path, request, db) {
  try {
    if (path === "/__control/ready") {
      return Response.json({ ok: true });
    }
    if (path === "/__control/sql") {
      const { sql, params = [] } = await request.json();
      const { results } = await db.prepare(sql).bind(...params).all();
      return Response.json({ results });
    }
    if (path === "/__control/reset") {
      await db.batch([db.prepare("DELETE FROM orders"), db.prepare("DELETE FROM users")]);
      return Response.json({ ok: true });
    }
    return new Response("unknown control route", { status: 404 });
  } catch (error) {
    return Response.json({ error: String(error), cause: String(error?.cause) }, { status: 500 });
  }
}
