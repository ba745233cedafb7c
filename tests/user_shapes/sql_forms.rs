//! The forms SQL takes in the source (chosen by `match`, built by `format!`, module and
//! associated constants, `concat!`, raw strings, comments and CTEs in front of a write,
//! user macros) and the D1 calls it goes to (`exec` scripts, batches, every read form and
//! a session's calls).

use std::sync::Arc;

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, Error};

use crate::harness::{Count, Effects, NO_BUDGET, READ_N, n, sweep, sweep_leaving};

/// SQL kept in a module of queries, as many repositories do.
mod queries {
    pub const COUNT: &str = "SELECT count(*) AS n FROM orders";
    pub const ADD: &str = "INSERT INTO orders (item) VALUES (?1)";
}

/// A statement built by a macro of the user's own, run outside it.
macro_rules! order_stmt {
    ($db:expr, $item:expr) => {
        $db.prepare("INSERT INTO orders (item) VALUES (?1)")
            .bind(&[$item.into()])
    };
}

/// A macro of the user's own that runs the statement: the call is inside the macro.
macro_rules! run_it {
    ($stmt:expr) => {
        $stmt.run().await
    };
}

struct Sqls {
    db: D1Database,
    effects: Arc<Effects>,
}

impl Sqls {
    const BUMP: &'static str = "UPDATE counters SET n = n + 1 WHERE name = 'hits'";

    /// An operation name picks the SQL in a `match`, then one `run` for all.
    #[d1_retry(policy = NO_BUDGET)]
    async fn by_match(&self, op: &str) -> Result<i64, Error> {
        let sql = match op {
            "count" => "SELECT count(*) AS n FROM orders",
            "bump" => "UPDATE counters SET n = n + 1 WHERE name = 'hits'",
            _ => "INSERT INTO orders (item) VALUES ('matched')",
        };
        let r = self.db.prepare(sql).run().await?;
        self.effects.push(op.to_owned());
        Ok(r.rows().len() as i64)
    }

    /// The `match` written inside `prepare`'s argument.
    #[d1_retry(policy = NO_BUDGET)]
    async fn by_inline_match(&self, write: bool) -> Result<i64, Error> {
        let r = self
            .db
            .prepare(match write {
                false => "SELECT count(*) AS n FROM orders",
                true => "UPDATE counters SET n = n + 1 WHERE name = 'hits'",
            })
            .run()
            .await?;
        self.effects.push("inline");
        Ok(r.rows().len() as i64)
    }

    /// The table name put in by `format!`.
    #[d1_retry(policy = NO_BUDGET)]
    async fn formatted(&self, table: &str, write: bool) -> Result<i64, Error> {
        let sql = if write {
            format!("UPDATE {table} SET n = n + 1 WHERE name = 'hits'")
        } else {
            format!("SELECT count(*) AS n FROM {table}")
        };
        let r = self.db.prepare(&sql).all().await?;
        self.effects.push("formatted");
        Ok(r.rows().len() as i64)
    }

    /// Module constants, an associated constant, a local `concat!` constant, a `concat!`
    /// literal and raw strings with quotes inside.
    #[d1_retry(policy = NO_BUDGET)]
    async fn consts(&self) -> Result<i64, Error> {
        const LOCAL: &str = concat!("UPDATE counters ", "SET n = n + 2 ", "WHERE name = 'hits'");
        let c = self.db.prepare(queries::COUNT).first::<Count>(None).await?;
        self.effects.push("mod const read");
        self.db
            .prepare(queries::ADD)
            .bind(&["modconst".into()])?
            .run()
            .await?;
        self.effects.push("mod const write");
        self.db.prepare(Self::BUMP).run().await?;
        self.effects.push("assoc const write");
        self.db.prepare(LOCAL).run().await?;
        self.effects.push("concat const write");
        self.db
            .prepare(concat!("INSERT INTO audit ", "(what) VALUES ('concat')"))
            .run()
            .await?;
        self.effects.push("concat literal write");
        self.db
            .prepare(r#"INSERT INTO archive (item) VALUES ("raw")"#)
            .run()
            .await?;
        self.effects.push("raw write");
        let d = self
            .db
            .prepare(r#"SELECT count(*) AS "n" FROM orders"#)
            .first::<Count>(None)
            .await?;
        self.effects.push("raw read");
        Ok(n(c) * 10 + n(d))
    }

    /// Writes that start with something else: a comment saying `SELECT`, a line comment, a
    /// CTE (materialized too), `REPLACE`, `RETURNING`, and `EXPLAIN` of a write; and a read
    /// whose trailing comment holds a `DELETE`.
    #[d1_retry(policy = NO_BUDGET)]
    async fn tricky_sql(&self) -> Result<i64, Error> {
        self.db
            .prepare("/* SELECT */ UPDATE counters SET n = n + 1 WHERE name = 'hits'")
            .run()
            .await?;
        self.effects.push("comment-first update");
        self.db
            .prepare("-- SELECT 1\nINSERT INTO audit (what) VALUES ('line comment first')")
            .run()
            .await?;
        self.effects.push("line comment insert");
        self.db
            .prepare("WITH x(v) AS (SELECT 'cte') INSERT INTO orders (item) SELECT v FROM x")
            .run()
            .await?;
        self.effects.push("cte insert");
        self.db
            .prepare("REPLACE INTO audit (what) VALUES ('replace')")
            .run()
            .await?;
        self.effects.push("replace");
        let id = self
            .db
            .prepare("UPDATE counters SET n = n + 1 WHERE name = 'hits' RETURNING n")
            .first::<i64>(Some("n"))
            .await?;
        self.effects.push("returning");
        self.db
            .prepare("  \n\t sElEcT count(*) AS n FROM orders -- ; DELETE FROM orders")
            .first::<Count>(None)
            .await?;
        self.effects.push("mixed-case read with comment");
        self.db
            .prepare(
                "WITH x AS MATERIALIZED (SELECT 1) \
                 UPDATE counters SET n = n + 1 WHERE name = 'hits'",
            )
            .run()
            .await?;
        self.effects.push("materialized cte update");
        self.db
            .prepare("EXPLAIN UPDATE counters SET n = n + 100 WHERE name = 'hits'")
            .all()
            .await?;
        self.effects.push("explain");
        Ok(id.unwrap_or(-1))
    }

    /// `first`'s column as the user holds it, a `String`, handed as `Some(&column)` and
    /// `Some(column.as_ref())`, as the call's parameter type lets it be written: awaited
    /// where it is made, and a future kept and awaited later.
    #[d1_retry(policy = NO_BUDGET)]
    async fn string_columns(&self, column: String, kept: &Columns) -> Result<i64, Error> {
        let bumped = self
            .db
            .prepare("UPDATE counters SET n = n + 1 WHERE name = 'hits' RETURNING n")
            .first::<i64>(Some(&column))
            .await?;
        self.effects.push("returning");
        let read = self.db.prepare("SELECT count(*) AS n FROM orders");
        let counted = read.first::<i64>(Some(column.as_ref())).await?;
        self.effects.push("counted");
        let pending = read.first::<i64>(Some(&kept.count));
        let again = pending.await?;
        self.effects.push("counted again");
        Ok(bumped.unwrap_or(-1) * 100 + counted.unwrap_or(-1) * 10 + again.unwrap_or(-1))
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn user_macros(&self, item: &str) -> Result<i64, Error> {
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        self.effects.push("read");
        order_stmt!(self.db, item)?.run().await?;
        self.effects.push("macro stmt");
        let s = self
            .db
            .prepare("INSERT INTO audit (what) VALUES ('run_it')");
        run_it!(s)?;
        self.effects.push("macro run");
        let d = self.db.prepare(READ_N).first::<Count>(None).await?;
        self.effects.push("read 2");
        Ok(n(c) * 10 + n(d))
    }

    /// `exec` scripts: a write on the first line, a write on a line after a comment, a
    /// dynamic script, and a script of reads.
    #[d1_retry(policy = NO_BUDGET)]
    async fn exec_forms(&self, dynamic: &str) -> Result<i64, Error> {
        self.db
            .exec("INSERT INTO audit (what) VALUES ('e1');\nSELECT 1;")
            .await?;
        self.effects.push("exec literal");
        self.db
            .exec("SELECT 1; -- x\nUPDATE counters SET n = n + 1 WHERE name = 'hits'")
            .await?;
        self.effects.push("exec comment line");
        self.db.exec(dynamic).await?;
        self.effects.push("exec dynamic");
        let r = self
            .db
            .exec("SELECT count(*) FROM orders;\nSELECT 2")
            .await?;
        self.effects.push("exec read");
        Ok(r.count().ok().flatten().unwrap_or(0) as i64)
    }

    /// Batches written out inline, of variables, of a list a write was pushed into, and of
    /// reads alone.
    #[d1_retry(policy = NO_BUDGET)]
    async fn batches(&self) -> Result<i64, Error> {
        let r = self
            .db
            .batch(vec![
                self.db.prepare(READ_N),
                self.db.prepare("INSERT INTO orders (item) VALUES ('b1')"),
            ])
            .await?;
        self.effects.push("inline mixed");
        let read = self.db.prepare("SELECT count(*) AS n FROM audit");
        let write = self.db.prepare("INSERT INTO audit (what) VALUES ('b2')");
        self.db.batch(vec![read.clone(), write]).await?;
        self.effects.push("vars mixed");
        let mut list = vec![read.clone(), self.db.prepare(READ_N)];
        list.push(
            self.db
                .prepare("UPDATE counters SET n = n + 1 WHERE name = 'hits'"),
        );
        self.db.batch(list).await?;
        self.effects.push("pushed write");
        let reads = [read.clone(), self.db.prepare(READ_N)];
        let r2 = self.db.batch(reads.to_vec()).await?;
        self.effects.push("reads");
        Ok((r.len() + r2.len()) as i64)
    }

    /// Every way to read a statement, the database's dump, then a session's read and write.
    #[d1_retry(policy = NO_BUDGET)]
    async fn read_forms(&self) -> Result<i64, Error> {
        let s = self.db.prepare(READ_N);
        let a = s.all().await?;
        self.effects.push("all");
        let b = s.raw::<i64>().await?;
        self.effects.push("raw");
        let c = s.raw_js_value().await?;
        self.effects.push("raw_js_value");
        let d = s.clone().await?;
        self.effects.push("await");
        // A read of the whole database, which has no SQL: retried as a read.
        let dumped = !self.db.dump().await?.is_empty();
        self.effects.push("dump");
        let session = self.db.with_session(None)?;
        let e = session.prepare(READ_N).first::<Count>(None).await?;
        self.effects.push("session read");
        session
            .prepare("INSERT INTO orders (item) VALUES ('session')")
            .run()
            .await?;
        self.effects.push("session write");
        Ok((a.rows().len() + b.len() + c.len() + d.rows().len()) as i64 + n(e) + i64::from(dumped))
    }

    /// SQL handed to `prepare` the way D1's `prepare` takes it, as a generic
    /// `Into<String>`: the reads are retried by the text each statement holds, and the
    /// writes (text, and a query type that becomes an `INSERT`) land once.
    #[d1_retry(policy = NO_BUDGET)]
    async fn generic<S: Into<String>>(
        &self,
        read: impl Into<String>,
        write: S,
        archive: Archive,
    ) -> Result<i64, Error> {
        let before = self.db.prepare(read).first::<Count>(None).await?;
        self.effects.push("generic read");
        self.db.prepare(write).run().await?;
        self.effects.push("generic write");
        self.db.prepare(archive).run().await?;
        self.effects.push("archived");
        let rows = self.rows_of(READ_N).await?;
        let both = self
            .db
            .batch(vec![
                self.db.prepare(Counted),
                self.db.prepare(Archive("batched")),
            ])
            .await?;
        self.effects.push("batched");
        let reads = self
            .db
            .batch(vec![self.db.prepare(Counted), self.db.prepare(READ_N)])
            .await?;
        self.effects.push("batched reads");
        // A statement made by a helper, out of sight, beside one in sight.
        let helped = self
            .db
            .batch(vec![counted(&self.db), self.db.prepare(READ_N)])
            .await?;
        Ok(n(before) + rows + (both.len() + reads.len() + helped.len()) as i64)
    }

    /// A helper of the same kind, called from the `read_only` function below.
    #[d1_retry(policy = NO_BUDGET)]
    async fn rows_of(&self, sql: impl Into<String>) -> Result<i64, Error> {
        Ok(self.db.prepare(sql).all().await?.rows().len() as i64)
    }

    /// A `read_only` body's own `prepare` of SQL that is not text, in the body and in an
    /// `async` block: judged by the statement it becomes, so the body is run again after
    /// a read fails (each counted as a write before, which also logged an error), and not
    /// after the `INSERT .. SELECT` a query type becomes, which lands once.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn read_only_generic<S: Into<String> + Clone>(
        &self,
        read: S,
        archive: bool,
    ) -> Result<i64, Error> {
        let a = self.db.prepare(read.clone()).first::<Count>(None).await?;
        let b = async { self.db.prepare(Counted).first::<Count>(None).await }.await?;
        if archive {
            self.db.prepare(Archive("read only")).run().await?;
        }
        let c = self.db.prepare(Counted).all().await?;
        self.effects.push("read only, generic");
        Ok(n(a) + n(b) + c.rows().len() as i64)
    }

    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn rows_twice(&self) -> Result<i64, Error> {
        let rows = self.rows_of(String::from(READ_N)).await?;
        self.effects.push("read twice");
        Ok(rows * 2)
    }
}

/// A query type of the user's that `prepare` converts `Into<String>`: what it becomes (an
/// `INSERT .. SELECT`) is what D1 runs, and the item it shows is no SQL at all.
struct Archive(&'static str);

/// A read made by a helper: out of the attribute's sight.
fn counted(db: &D1Database) -> d1_retry::testing::D1PreparedStatement {
    db.prepare(READ_N)
}

/// A query type that becomes a read.
#[derive(Clone, Copy)]
struct Counted;

impl From<Counted> for String {
    fn from(_: Counted) -> String {
        READ_N.to_owned()
    }
}

impl From<Archive> for String {
    fn from(archive: Archive) -> String {
        format!(
            "INSERT INTO archive (item) SELECT item FROM orders WHERE item = '{}'",
            archive.0
        )
    }
}

/// One `run` for SQL picked by a `match` (in a local or inside `prepare`'s argument): a
/// read arm is retried, a write arm lands once.
#[tokio::test(start_paused = true)]
async fn sql_chosen_by_match_is_judged_by_the_arm_taken() {
    for op in ["count", "bump", "insert"] {
        sweep(&format!("match {op}"), |db, effects| async move {
            Sqls { db, effects }.by_match(op).await
        })
        .await;
    }
    for write in [false, true] {
        sweep(
            &format!("inline match, write {write}"),
            |db, effects| async move { Sqls { db, effects }.by_inline_match(write).await },
        )
        .await;
    }
}

/// SQL handed to `prepare` as a generic `Into<String>` (`impl Into<String>`, `S:
/// Into<String>`, a query type): each statement is judged by the text it holds, so its
/// reads are retried (they lost every retry, even after a failure before D1 ran them, and
/// a `read_only` function around one was not run again) and its writes land once.
#[tokio::test(start_paused = true)]
async fn sql_handed_to_prepare_as_into_string_is_judged_by_the_statement_s_text() {
    sweep("Into<String>", |db, effects| async move {
        let sqls = Sqls { db, effects };
        let written = sqls
            .generic(
                READ_N,
                String::from("INSERT INTO orders (item) VALUES ('generic')"),
                Archive("generic"),
            )
            .await?;
        Ok::<_, Error>(written + sqls.rows_twice().await?)
    })
    .await;
}

/// The same in a `read_only` body's own `prepare`: the body is run again after a read
/// fails, not after a write fails that may have run.
#[tokio::test(start_paused = true)]
async fn a_read_only_body_s_own_prepare_of_into_string_is_judged_by_the_statement_s_text() {
    sweep("read_only Into<String>", |db, effects| async move {
        Sqls { db, effects }.read_only_generic(READ_N, false).await
    })
    .await;
    // The query type that becomes a write: the body is not run again after it may have
    // run, and it lands once.
    let db = crate::harness::database();
    test_support::lose_once_after_running(&db, "INTO archive");
    let sqls = Sqls {
        db: db.clone(),
        effects: Arc::new(Effects::default()),
    };
    assert!(sqls.read_only_generic(READ_N, true).await.is_err());
    assert_eq!(test_support::calls_with(&db, "INTO archive"), 1);
    assert_eq!(
        test_support::calls_with(&db, READ_N),
        2,
        "the body was not run again"
    );
}

/// A query rendered lazily, by a closure of the body run inside `prepare`'s conversion,
/// which prepares (and never runs) a probe statement of its own: that inner `prepare` ends
/// inside the outer one and must not take its mark. (With one flag for the thread it did:
/// the outer `INSERT .. SELECT` went unobserved, and a later read's failure ran the body
/// and the insert again, with `Ok` — helper-43.)
struct Rendered<F: FnOnce() -> String>(F);

impl<F: FnOnce() -> String> From<Rendered<F>> for String {
    fn from(rendered: Rendered<F>) -> String {
        (rendered.0)()
    }
}

#[d1_retry(read_only, policy = NO_BUDGET)]
async fn lazily_rendered(db: &D1Database, probe: &str) -> Result<i64, Error> {
    db.prepare(Rendered(|| {
        let _probe = db.prepare(probe);
        String::from("INSERT INTO archive (item) SELECT item FROM orders")
    }))
    .run()
    .await?;
    Ok(n(db.prepare(READ_N).first::<Count>(None).await?))
}

#[tokio::test(start_paused = true)]
async fn a_query_rendered_by_a_closure_that_prepares_is_still_observed() {
    let db = crate::harness::database();
    db.prepare("INSERT INTO orders (item) VALUES ('tea')")
        .run()
        .await
        .unwrap();
    test_support::lose_once_after_running(&db, READ_N);
    let result = lazily_rendered(&db, READ_N).await;
    assert!(
        result.is_err(),
        "the body was run again after it wrote: {result:?}"
    );
    assert_eq!(test_support::calls_with(&db, "INTO archive"), 1);
    assert_eq!(test_support::count(&db, "SELECT count(*) FROM archive"), 1);
}

/// SQL built by `format!` is judged at run time, by the text it turned out to be.
#[tokio::test(start_paused = true)]
async fn sql_built_by_format_is_judged_by_the_text_it_builds() {
    for write in [false, true] {
        sweep(
            &format!("format!, write {write}"),
            |db, effects| async move { Sqls { db, effects }.formatted("counters", write).await },
        )
        .await;
    }
}

/// Constants from a module, the type, a local `concat!`, and raw strings: every write
/// lands once and the reads are retried.
#[tokio::test(start_paused = true)]
async fn sql_from_consts_concat_and_raw_strings_is_judged_as_written() {
    sweep("consts", |db, effects| async move {
        Sqls { db, effects }.consts().await
    })
    .await;
}

/// What precedes a write (a comment saying `SELECT`, a CTE) or follows it (`RETURNING`)
/// does not make it a read.
#[tokio::test(start_paused = true)]
async fn comments_and_ctes_in_front_of_a_write_do_not_make_it_a_read() {
    sweep("tricky sql", |db, effects| async move {
        Sqls { db, effects }.tricky_sql().await
    })
    .await;
}

/// Column names of the user's, in a field.
struct Columns {
    count: String,
}

/// A `String` column handed to `first` as `Some(&column)` compiles, as it does without the
/// attribute, and each call is retried on its own: the write through `RETURNING` lands once.
#[tokio::test(start_paused = true)]
async fn a_string_column_handed_to_first_by_reference_is_retried_call_by_call() {
    sweep("string columns", |db, effects| async move {
        let kept = Columns {
            count: "n".to_owned(),
        };
        Sqls { db, effects }
            .string_columns("n".to_owned(), &kept)
            .await
    })
    .await;
}

/// A statement a user macro builds is run outside the macro and retried; the call the
/// `run_it!` macro makes is inside it, unseen, so it runs as written and never twice.
#[tokio::test(start_paused = true)]
async fn a_call_inside_a_user_macro_runs_as_written_and_never_twice() {
    sweep_leaving("user macros", &["('run_it')"], |db, effects| async move {
        Sqls { db, effects }.user_macros("um").await
    })
    .await;
}

/// `exec` runs each line on its own: a write on any line makes the script a write, a
/// script of reads is retried; a dynamic script is judged as it runs.
#[tokio::test(start_paused = true)]
async fn exec_scripts_are_judged_line_by_line() {
    for dynamic in [
        "UPDATE counters SET n = n + 1 WHERE name = 'hits'",
        "SELECT 1;\nSELECT 2",
        "SELECT 1; -- note\nINSERT INTO archive (item) VALUES ('dyn')",
    ] {
        sweep(&format!("exec {dynamic:?}"), |db, effects| async move {
            Sqls { db, effects }.exec_forms(dynamic).await
        })
        .await;
    }
}

/// A batch is one transaction: with a write in it (written out, in a variable, pushed into
/// the list later) it lands once; a batch of reads is retried.
#[tokio::test(start_paused = true)]
async fn a_batch_with_a_write_lands_once_and_a_batch_of_reads_is_retried() {
    sweep("batches", |db, effects| async move {
        Sqls { db, effects }.batches().await
    })
    .await;
}

/// `all`, `raw`, `raw_js_value`, `.await` and a session's `first` are all retried; the
/// session's write lands once.
#[tokio::test(start_paused = true)]
async fn every_read_form_and_a_session_s_calls_are_retried_by_their_sql() {
    sweep("read forms and session", |db, effects| async move {
        Sqls { db, effects }.read_forms().await
    })
    .await;
}
