//! The local D1 against real SQLite: call shapes, error shapes, faults, journal.

use std::collections::BTreeMap;
use std::error::Error as _;

use super::*;
use crate::{FailureClass, classify};

mod stalls;

fn block_on<F: core::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds")
        .block_on(future)
}

fn users() -> D1Database {
    let db = D1Database::open_in_memory().unwrap();
    db.with_connection(|c| {
        c.execute_batch(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, age INTEGER);
             INSERT INTO users (email, age) VALUES ('ada@x', 36), ('grace@x', NULL);",
        )
    })
    .unwrap();
    db
}

fn count(db: &D1Database, sql: &str) -> i64 {
    db.with_connection(|c| c.query_row(sql, [], |row| row.get(0)))
        .unwrap()
}

#[derive(serde::Deserialize, Debug, PartialEq)]
struct User {
    id: i64,
    email: String,
    age: Option<i64>,
}

#[test]
fn first_all_run_raw_read_and_write() {
    block_on(async {
        let db = users();
        let user: Option<User> = db
            .prepare("SELECT id, email, age FROM users WHERE id = ?1")
            .bind(&[2.into()])
            .unwrap()
            .first(None)
            .await
            .unwrap();
        assert_eq!(
            user,
            Some(User {
                id: 2,
                email: "grace@x".into(),
                age: None
            })
        );
        let missing: Option<User> = db
            .prepare("SELECT id, email, age FROM users WHERE id = 99")
            .first(None)
            .await
            .unwrap();
        assert_eq!(missing, None);
        let age: Option<i64> = db
            .prepare("SELECT age FROM users WHERE id = 1")
            .first(Some("age"))
            .await
            .unwrap();
        assert_eq!(age, Some(36));
        let null_age: Option<i64> = db
            .prepare("SELECT age FROM users WHERE id = 2")
            .first(Some("age"))
            .await
            .unwrap();
        assert_eq!(null_age, None);

        let all = db
            .prepare("SELECT id, email FROM users ORDER BY id")
            .all()
            .await
            .unwrap();
        let rows: Vec<BTreeMap<String, Value>> = all.results().unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1]["email"], Value::from("grace@x"));
        assert_eq!(all.columns(), ["id", "email"]);
        assert_eq!(all.meta().unwrap().unwrap().rows_read, Some(2));
        assert_eq!(all.meta().unwrap().unwrap().changed_db, Some(false));

        let run = db
            .prepare("INSERT INTO users (email) VALUES (?1), (?2)")
            .bind(&["a@x".into(), "b@x".into()])
            .unwrap()
            .run()
            .await
            .unwrap();
        let meta = run.meta().unwrap().unwrap();
        assert_eq!(meta.changes, Some(2));
        assert_eq!(meta.changed_db, Some(true));
        assert_eq!(meta.last_row_id, Some(4));
        assert!(run.success());
        assert_eq!(run.error(), None);

        let raw: Vec<Vec<Value>> = db
            .prepare("SELECT id, email FROM users WHERE id > 2 ORDER BY id")
            .raw()
            .await
            .unwrap();
        assert_eq!(
            raw,
            [
                vec![Value::Integer(3), Value::from("a@x")],
                vec![Value::Integer(4), Value::from("b@x")]
            ]
        );
        // Awaiting the statement itself runs it.
        let result = db.prepare("DELETE FROM users WHERE id = 4").await.unwrap();
        assert_eq!(result.meta().unwrap().unwrap().changes, Some(1));
        assert_eq!(count(&db, "SELECT count(*) FROM users"), 3);
    });
}

#[test]
fn returning_rows_of_a_write_through_first() {
    block_on(async {
        let db = users();
        let id: Option<i64> = db
            .prepare("INSERT INTO users (email) VALUES ('r@x') RETURNING id")
            .first(Some("id"))
            .await
            .unwrap();
        assert_eq!(id, Some(3));
    });
}

#[test]
fn sqlite_errors_have_d1_shapes() {
    block_on(async {
        let db = users();
        let unique = db
            .prepare("INSERT INTO users (email) VALUES ('ada@x')")
            .run()
            .await
            .unwrap_err();
        assert_eq!(
            unique.to_string(),
            "D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT \
             (extended: SQLITE_CONSTRAINT_UNIQUE)"
        );
        assert_eq!(
            unique.source().unwrap().to_string(),
            "UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT \
             (extended: SQLITE_CONSTRAINT_UNIQUE)"
        );
        assert_eq!(unique.injected(), None);

        let not_null = db
            .prepare("INSERT INTO users (email) VALUES (NULL)")
            .run()
            .await
            .unwrap_err();
        assert_eq!(
            not_null.to_string(),
            "D1_ERROR: NOT NULL constraint failed: users.email: SQLITE_CONSTRAINT \
             (extended: SQLITE_CONSTRAINT_NOTNULL)"
        );

        let syntax = db.prepare("SELEC 1").all().await.unwrap_err();
        assert_eq!(
            syntax.to_string(),
            "D1_ERROR: near \"SELEC\": syntax error at offset 0: SQLITE_ERROR"
        );
        let table = db.prepare("SELECT * FROM t").all().await.unwrap_err();
        assert_eq!(
            table.to_string(),
            "D1_ERROR: no such table: t: SQLITE_ERROR"
        );
        let binds = db
            .prepare("SELECT * FROM users WHERE id = ?1")
            .all()
            .await
            .unwrap_err();
        assert_eq!(
            binds.to_string(),
            "D1_ERROR: Wrong number of parameter bindings for SQL query."
        );
        let column = db
            .prepare("SELECT id FROM users")
            .first::<i64>(Some("nope"))
            .await
            .unwrap_err();
        assert_eq!(
            column.to_string(),
            "D1_COLUMN_NOTFOUND: Column not found (nope)"
        );
        let empty = db.prepare("  ").run().await.unwrap_err();
        assert_eq!(empty.to_string(), "D1_ERROR: No SQL statements detected.");
        let shape = db
            .prepare("SELECT email FROM users")
            .first::<i64>(Some("email"))
            .await
            .unwrap_err();
        assert!(shape.to_string().contains("invalid type"), "{shape}");
        for error in [unique, not_null, syntax, table, binds, column, shape] {
            assert_eq!(classify(&error), FailureClass::Permanent, "{error}");
        }
        // The column and the type errors come after a call that succeeded.
        assert_eq!(db.stats().sql_errors, 6);
    });
}

#[test]
fn batch_is_atomic() {
    block_on(async {
        let db = users();
        let ok = db
            .batch(vec![
                db.prepare("INSERT INTO users (email) VALUES ('b1@x')"),
                db.prepare("SELECT count(*) AS n FROM users"),
            ])
            .await
            .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[1].rows()[0][0], Value::Integer(3));
        let failed = db
            .batch(vec![
                db.prepare("INSERT INTO users (email) VALUES ('b2@x')"),
                db.prepare("INSERT INTO users (email) VALUES ('ada@x')"),
            ])
            .await
            .unwrap_err();
        assert!(
            failed.to_string().contains("UNIQUE constraint failed"),
            "{failed}"
        );
        assert_eq!(
            count(&db, "SELECT count(*) FROM users WHERE email = 'b2@x'"),
            0
        );
        assert_eq!(count(&db, "SELECT count(*) FROM users"), 3);
    });
}

#[test]
fn exec_runs_line_by_line_and_names_the_failing_line() {
    block_on(async {
        let db = users();
        let result = db
            .exec("INSERT INTO users (email) VALUES ('e1@x')\n\nINSERT INTO users (email) VALUES ('e2@x')")
            .await
            .unwrap();
        assert_eq!(result.count(), Ok(Some(2)));
        assert_eq!(result.duration(), Ok(Some(0.0)));
        let error = db
            .exec("INSERT INTO users (email) VALUES ('e3@x')\nINSERT INTO users (email) VALUES ('ada@x')")
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "D1_EXEC_ERROR: Error in line 2: INSERT INTO users (email) VALUES ('ada@x'): \
             UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT \
             (extended: SQLITE_CONSTRAINT_UNIQUE)"
        );
        // The first line stays applied, and the journal says something was committed.
        assert_eq!(
            count(&db, "SELECT count(*) FROM users WHERE email = 'e3@x'"),
            1
        );
        assert!(db.calls().last().unwrap().executed);
    });
}

#[test]
fn a_fault_before_execution_changes_nothing() {
    block_on(async {
        let db = users();
        db.add_fault(Fault::new(Message::CannotResolve).times(1));
        let error = db
            .prepare("INSERT INTO users (email) VALUES ('f@x')")
            .run()
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node."
        );
        assert_eq!(error.injected(), Some(Timing::BeforeExecution));
        assert_eq!(
            count(&db, "SELECT count(*) FROM users WHERE email = 'f@x'"),
            0
        );
        let call = db.take_calls().pop().unwrap();
        assert!(!call.executed);
        assert_eq!(
            call.injected,
            Some((Message::CannotResolve, Timing::BeforeExecution))
        );
        assert_eq!(call.error.as_deref(), Some(error.message()));
        // `times(1)`: the next call goes through.
        db.prepare("INSERT INTO users (email) VALUES ('f@x')")
            .run()
            .await
            .unwrap();
        assert_eq!(
            count(&db, "SELECT count(*) FROM users WHERE email = 'f@x'"),
            1
        );
    });
}

#[test]
fn a_fault_after_execution_commits_then_fails() {
    block_on(async {
        let db = users();
        db.add_fault(
            Fault::new(Message::NetworkConnectionLost)
                .after_execution()
                .times(2),
        );
        let error = db
            .prepare("INSERT INTO users (email) VALUES ('g@x')")
            .run()
            .await
            .unwrap_err();
        assert_eq!(error.injected(), Some(Timing::AfterExecution));
        assert_eq!(
            count(&db, "SELECT count(*) FROM users WHERE email = 'g@x'"),
            1
        );
        // A batch hit after execution is committed whole.
        db.batch(vec![
            db.prepare("INSERT INTO users (email) VALUES ('h1@x')"),
            db.prepare("INSERT INTO users (email) VALUES ('h2@x')"),
        ])
        .await
        .unwrap_err();
        assert_eq!(
            count(&db, "SELECT count(*) FROM users WHERE email LIKE 'h_@x'"),
            2
        );
        let calls = db.calls();
        assert!(calls.iter().all(|call| call.executed));
        assert_eq!(db.stats().injected_after, 2);
    });
}

#[test]
fn a_fault_after_a_statement_that_fails_on_its_own_reports_the_fault_and_commits_nothing() {
    block_on(async {
        let db = users();
        db.add_fault(Fault::new(Message::CodeUpdated).after_execution().times(1));
        let error = db
            .prepare("INSERT INTO users (email) VALUES ('ada@x')")
            .run()
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "D1_ERROR: D1 DB reset because its code was updated."
        );
        assert!(!db.calls()[0].executed);
        assert_eq!(count(&db, "SELECT count(*) FROM users"), 2);
    });
}

#[test]
fn faults_pick_calls_by_operation_and_sql() {
    block_on(async {
        let db = users();
        db.set_faults(
            FaultPlan::new()
                .with(Fault::new(Message::StorageReset).on(Operation::Raw))
                .with(Fault::new(Message::CpuLimit).when_sql_contains("age")),
        );
        assert!(db.prepare("SELECT 1").all().await.is_ok());
        let raw = db.prepare("SELECT 1").raw::<i64>().await.unwrap_err();
        assert!(raw.to_string().contains("Internal error in D1 DB storage"));
        let age = db.prepare("SELECT age FROM users").all().await.unwrap_err();
        assert!(age.to_string().contains("CPU time limit"));
        assert_eq!(db.injected_per_rule(), [1, 1]);
        db.clear_faults();
        assert!(db.prepare("SELECT 1").raw::<i64>().await.is_ok());
    });
}

#[test]
fn every_injected_message_is_classified_as_documented() {
    block_on(async {
        let db = users();
        for message in Message::DOCUMENTED {
            db.set_faults(FaultPlan::new().with(Fault::new(message)));
            let error = db.prepare("SELECT 1").all().await.unwrap_err();
            assert!(error.to_string().starts_with("D1_ERROR: "), "{error}");
            assert_eq!(
                Some(classify(&error)),
                message.documented_class(),
                "{message:?}: {error}"
            );
        }
    });
}

#[test]
fn clones_share_one_database_across_concurrent_tasks() {
    block_on(async {
        let db = users();
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async {
                let tasks: Vec<_> = (0..8)
                    .map(|task| {
                        let db = db.clone();
                        tokio::task::spawn_local(async move {
                            for i in 0..25 {
                                db.prepare("INSERT INTO users (email) VALUES (?1)")
                                    .bind(&[format!("{task}-{i}@x").into()])
                                    .unwrap()
                                    .run()
                                    .await
                                    .unwrap();
                                tokio::task::yield_now().await;
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.unwrap();
                }
            })
            .await;
        assert_eq!(count(&db, "SELECT count(*) FROM users"), 202);
        assert_eq!(db.stats().calls, 200);
        assert_eq!(db.take_calls().len(), 200);
        assert!(db.calls().is_empty());
    });
}

#[test]
fn the_database_is_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<D1Database>();
    assert_send_sync::<D1PreparedStatement>();
    let db = users();
    std::thread::scope(|s| {
        for t in 0..2 {
            let db = db.clone();
            s.spawn(move || {
                block_on(async move {
                    for i in 0..10 {
                        db.prepare("INSERT INTO users (email) VALUES (?1)")
                            .bind(&[format!("t{t}-{i}").into()])
                            .unwrap()
                            .run()
                            .await
                            .unwrap();
                    }
                });
            });
        }
    });
    assert_eq!(count(&db, "SELECT count(*) FROM users"), 22);
}

#[test]
fn a_file_database_persists() {
    let dir = std::env::temp_dir().join(format!("d1-retry-kit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("db.sqlite");
    let _ = std::fs::remove_file(&path);
    block_on(async {
        let db = D1Database::open(&path).unwrap();
        db.exec("CREATE TABLE t (x)").await.unwrap();
        db.exec("INSERT INTO t VALUES (1)").await.unwrap();
    });
    let again = D1Database::open(&path).unwrap();
    assert_eq!(count(&again, "SELECT count(*) FROM t"), 1);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(D1Database::open(dir.join("missing/dir/db.sqlite")).is_err());
}

#[test]
fn first_with_a_repeated_column_name_reads_the_last_one() {
    block_on(async {
        let db = users();
        // As in the JS row object D1 builds, the later column overwrites the earlier one.
        let n: Option<i64> = db
            .prepare("SELECT 1 AS n, 2 AS n")
            .first(Some("n"))
            .await
            .unwrap();
        assert_eq!(n, Some(2));
        let row: Option<BTreeMap<String, Value>> = db
            .prepare("SELECT 1 AS n, 2 AS n")
            .first(None)
            .await
            .unwrap();
        assert_eq!(row.unwrap()["n"], Value::Integer(2));
    });
}

#[test]
fn the_journal_knows_what_exec_committed() {
    block_on(async {
        let db = users();
        // Ran and committed, then failed: executed.
        db.add_fault(
            Fault::new(Message::NetworkConnectionLost)
                .after_execution()
                .times(1),
        );
        db.exec("INSERT INTO users (email) VALUES ('x1@x')")
            .await
            .unwrap_err();
        // A first line that fails commits nothing; nor does an empty query.
        db.exec(
            "INSERT INTO users (email) VALUES ('ada@x')\nINSERT INTO users (email) VALUES ('x2@x')",
        )
        .await
        .unwrap_err();
        let empty = db.exec("\n  \n").await.unwrap();
        assert_eq!(empty.count(), Ok(Some(0)));
        // An empty query hit after "execution" ran nothing either.
        db.add_fault(Fault::new(Message::CodeUpdated).after_execution().times(1));
        db.exec("").await.unwrap_err();
        db.exec("INSERT INTO users (email) VALUES ('x3@x')")
            .await
            .unwrap();
        let executed: Vec<bool> = db.calls().iter().map(|call| call.executed).collect();
        assert_eq!(executed, [true, false, false, false, true]);
        assert_eq!(count(&db, "SELECT count(*) FROM users"), 4);
        assert_eq!(db.stats().injected_after, 2);
        assert_eq!(db.stats().sql_errors, 1);
    });
}

#[test]
fn stats_count_each_kind_of_failure() {
    block_on(async {
        let db = users();
        db.set_faults(
            FaultPlan::new()
                .with(Fault::new(Message::CannotResolve).times(2))
                .with(Fault::new(Message::CodeUpdated).after_execution().times(1)),
        );
        for _ in 0..4 {
            let _ = db.prepare("SELECT 1").all().await;
        }
        assert_eq!(
            (
                db.stats().calls,
                db.stats().injected_before,
                db.stats().injected_after
            ),
            (4, 2, 1)
        );
        assert_eq!(db.injected_per_rule(), [2, 1]);
    });
}

#[test]
fn batch_binds_each_statement() {
    block_on(async {
        let db = users();
        let insert = "INSERT INTO users (email, age) VALUES (?1, ?2)";
        db.batch(vec![
            db.prepare(insert).bind(&["p1@x".into(), 1.into()]).unwrap(),
            db.prepare(insert).bind(&["p2@x".into(), 2.into()]).unwrap(),
        ])
        .await
        .unwrap();
        assert_eq!(
            count(&db, "SELECT sum(age) FROM users WHERE email LIKE 'p_@x'"),
            3
        );
        let batch = db.calls().pop().unwrap();
        assert_eq!(batch.statements[1].1, [Value::from("p2@x"), Value::from(2)]);
    });
}

#[test]
fn handles_describe_themselves() {
    let db = users();
    db.set_faults(
        FaultPlan::new()
            .with(Fault::new(Message::CpuLimit))
            .with(Fault::new(Message::CpuLimit).on_calls(1..2)),
    );
    assert!(format!("{db:?}").contains("rules: 2"), "{db:?}");
    let statement = db.prepare("SELECT ?1").bind(&[7.into()]).unwrap();
    assert_eq!(statement.params(), [Value::Integer(7)]);
    assert!(
        format!("{statement:?}").contains("SELECT ?1"),
        "{statement:?}"
    );
    // Values read from serde: a bool becomes 1, a map is refused with a clear expectation.
    let yes: Value = serde::Deserialize::deserialize(serde::de::value::BoolDeserializer::<
        serde::de::value::Error,
    >::new(true))
    .unwrap();
    assert_eq!(yes, Value::Integer(1));
    let map = serde::de::value::MapDeserializer::<_, serde::de::value::Error>::new(
        std::iter::empty::<(&str, i64)>(),
    );
    let refused: Result<Value, _> = serde::Deserialize::deserialize(map);
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("expected a D1 value"),
    );
}

#[test]
fn js_values_bind_as_d1_stores_them() {
    block_on(async {
        let db = users();
        let row: Option<BTreeMap<String, Value>> = db
            .prepare(
                "SELECT typeof(?1) AS a, typeof(?2) AS b, ?3 AS c, typeof(?4) AS d, ?5 AS e, \
                 ?6 AS f, typeof(?7) AS g",
            )
            .bind(&[
                JsValue::from_f64(2.5),
                JsValue::NULL,
                JsValue::from_bool(true),
                JsValue::from_str("s"),
                Some(3u32).into(),
                None::<&str>.into(),
                JsValue::null(),
            ])
            .unwrap()
            .first(None)
            .await
            .unwrap();
        let row = row.unwrap();
        assert_eq!(row["a"], Value::from("real"));
        assert_eq!(row["b"], Value::from("null"));
        assert_eq!(row["c"], Value::Integer(1));
        assert_eq!(row["d"], Value::from("text"));
        assert_eq!(row["e"], Value::Integer(3));
        assert_eq!(row["f"], Value::Null);
        assert_eq!(row["g"], Value::from("null"));
        // A whole number bound as a JS number finds an INTEGER key and reads back as i64.
        let email: Option<String> = db
            .prepare("SELECT email FROM users WHERE id = ?1")
            .bind(&[JsValue::from_f64(1.0)])
            .unwrap()
            .first(Some("email"))
            .await
            .unwrap();
        assert_eq!(email.as_deref(), Some("ada@x"));
        let n: Option<i64> = db
            .prepare("SELECT ?1 AS n")
            .bind(&[JsValue::from_f64(4.0)])
            .unwrap()
            .first(Some("n"))
            .await
            .unwrap();
        assert_eq!(n, Some(4));
    });
}

#[test]
fn bind_refs_and_batch_bind_take_d1_types() {
    block_on(async {
        let db = users();
        let insert = db.prepare("INSERT INTO users (email, age) VALUES (?1, ?2)");
        let email = String::from("r1@x");
        let one = insert
            .bind_refs(&[D1Type::Text(&email), D1Type::Integer(40)])
            .unwrap();
        one.run().await.unwrap();
        // `bind_refs` leaves the statement reusable; one `&D1Type` needs no array.
        assert!(insert.params().is_empty());
        let age = D1Type::Integer(41);
        let prepared = D1PreparedArgument::new(&age);
        let rows = [
            [D1Type::Text("r2@x"), D1Type::Real(1.5)],
            [D1Type::Text("r3@x"), D1Type::Null],
        ];
        let statements = insert.batch_bind(&rows).unwrap();
        assert_eq!(statements.len(), 2);
        db.batch(statements).await.unwrap();
        let single = db.prepare("SELECT count(*) AS n FROM users WHERE age = ?1");
        let n: Option<i64> = single
            .bind_refs(&prepared)
            .unwrap()
            .first(Some("n"))
            .await
            .unwrap();
        assert_eq!(n, Some(0));
        let n: Option<i64> = single
            .bind_refs(&D1Type::Integer(40))
            .unwrap()
            .first(Some("n"))
            .await
            .unwrap();
        assert_eq!(n, Some(1));
        let flags: Vec<Vec<Value>> = db
            .prepare("SELECT ?1, ?2")
            .bind_refs(&[D1Type::Boolean(false), D1Type::Blob(&[9])])
            .unwrap()
            .raw()
            .await
            .unwrap();
        assert_eq!(flags, [vec![Value::Integer(0), Value::Blob(vec![9])]]);
        assert_eq!(
            count(&db, "SELECT count(*) FROM users WHERE email LIKE 'r_@x'"),
            3
        );
    });
}

#[test]
fn raw_js_value_is_a_raw_call() {
    block_on(async {
        let db = users();
        let rows = db
            .prepare("SELECT id, age FROM users ORDER BY id")
            .raw_js_value()
            .await
            .unwrap();
        assert_eq!(
            rows,
            [
                vec![Value::Integer(1), Value::Integer(36)],
                vec![Value::Integer(2), Value::Null]
            ]
        );
        db.add_fault(
            Fault::new(Message::StorageReset)
                .on(Operation::Raw)
                .times(1),
        );
        let error = db.prepare("SELECT 1").raw_js_value().await.unwrap_err();
        assert_eq!(error.injected(), Some(Timing::BeforeExecution));
        let operations: Vec<Operation> = db.calls().iter().map(|c| c.operation).collect();
        assert_eq!(operations, [Operation::Raw, Operation::Raw]);
    });
}

#[test]
fn dump_returns_a_sqlite_file_of_the_database() {
    block_on(async {
        let db = users();
        let bytes = db.dump().await.unwrap();
        assert!(bytes.starts_with(b"SQLite format 3\0"));
        // The bytes are a database of their own: write them out and read the rows back.
        let dir = std::env::temp_dir().join(format!("d1-retry-dump-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("copy.sqlite");
        std::fs::write(&path, &bytes).unwrap();
        let copy = D1Database::open(&path).unwrap();
        assert_eq!(count(&copy, "SELECT count(*) FROM users"), 2);
        drop(copy);
        let _ = std::fs::remove_dir_all(&dir);
        let call = db.calls().pop().unwrap();
        assert_eq!(call.operation, Operation::Dump);
        assert!(call.statements.is_empty());
        assert!(call.executed);
    });
}

#[test]
fn dump_takes_faults_before_and_after() {
    block_on(async {
        let db = users();
        db.set_faults(
            FaultPlan::new()
                .with(
                    Fault::new(Message::CannotResolve)
                        .on(Operation::Dump)
                        .times(1),
                )
                .with(
                    Fault::new(Message::CodeUpdated)
                        .on(Operation::Dump)
                        .after_execution()
                        .times(1),
                )
                // A SQL filter never matches a dump, which has no SQL.
                .with(Fault::new(Message::CpuLimit).when_sql_contains("")),
        );
        let before = db.dump().await.unwrap_err();
        assert_eq!(before.injected(), Some(Timing::BeforeExecution));
        let after = db.dump().await.unwrap_err();
        assert_eq!(
            after.to_string(),
            "D1_ERROR: D1 DB reset because its code was updated."
        );
        assert!(db.dump().await.is_ok());
        let executed: Vec<bool> = db.calls().iter().map(|c| c.executed).collect();
        assert_eq!(executed, [false, true, true]);
        assert_eq!(db.injected_per_rule(), [1, 1, 0]);
        assert_eq!(db.stats().calls, 3);
    });
}

#[test]
fn session_bookmarks_start_empty_and_advance_on_writes() {
    block_on(async {
        let db = users();
        let session = db.with_session(None).unwrap();
        assert_eq!(session.get_bookmark().unwrap(), None);
        session.prepare("SELECT 1").all().await.unwrap();
        let first = session.get_bookmark().unwrap().unwrap();
        // Reads see the same state: the bookmark stays.
        let _: Option<i64> = session
            .prepare("SELECT 1 AS n")
            .first(Some("n"))
            .await
            .unwrap();
        assert_eq!(session.get_bookmark().unwrap().as_deref(), Some(&*first));
        // A write anywhere moves the state; the session sees it on its next call.
        db.prepare("INSERT INTO users (email) VALUES ('s1@x')")
            .run()
            .await
            .unwrap();
        assert_eq!(session.get_bookmark().unwrap().as_deref(), Some(&*first));
        session.prepare("SELECT 1").raw::<i64>().await.unwrap();
        let second = session.get_bookmark().unwrap().unwrap();
        assert!(second > first, "{second} > {first}");
        // Awaiting a session statement runs it in the session.
        session
            .prepare("INSERT INTO users (email) VALUES ('s2@x')")
            .await
            .unwrap();
        let third = session.get_bookmark().unwrap().unwrap();
        assert!(third > second);
        session
            .batch(vec![
                session.prepare("INSERT INTO users (email) VALUES ('s3@x')"),
                session.prepare("SELECT count(*) FROM users"),
            ])
            .await
            .unwrap();
        let fourth = session.get_bookmark().unwrap().unwrap();
        assert!(fourth > third);
        assert_eq!(count(&db, "SELECT count(*) FROM users"), 5);
        // The journal and the fault plan know which calls a session made.
        let in_session: Vec<bool> = db.calls().iter().map(|c| c.session).collect();
        assert_eq!(in_session, [true, true, false, true, true, true]);
    });
}

/// Whether a call may have written, which moves the bookmark, is judged as D1 runs the
/// text: a prepared statement whole, `exec` text line by line, where the inner line of a
/// comment runs.
#[test]
fn a_bookmark_moves_as_d1_runs_the_text() {
    block_on(async {
        let db = users();
        let session = db.with_session(None).unwrap();
        session.prepare("SELECT 1").all().await.unwrap();
        let first = session.get_bookmark().unwrap().unwrap();
        let commented = "SELECT count(*) FROM users /* every user,\nDELETE FROM users WHERE 0;\n*/";
        session.prepare(commented).all().await.unwrap();
        assert_eq!(session.get_bookmark().unwrap().as_deref(), Some(&*first));
        // `exec` runs the first two lines, then fails on `*/`: it may have written.
        assert!(db.exec(commented).await.is_err());
        session.prepare("SELECT 1").all().await.unwrap();
        let second = session.get_bookmark().unwrap().unwrap();
        assert!(second > first, "{second} > {first}");
    });
}

#[test]
fn a_failed_session_call_brings_no_bookmark() {
    block_on(async {
        let db = users();
        let session = db
            .with_session_constraint(D1SessionConstraint::FirstPrimary)
            .unwrap();
        db.add_fault(
            Fault::new(Message::NetworkConnectionLost)
                .after_execution()
                .when(|call| call.session)
                .times(1),
        );
        // Committed, but the caller heard a failure, and no bookmark came back.
        session
            .prepare("INSERT INTO users (email) VALUES ('f1@x')")
            .run()
            .await
            .unwrap_err();
        assert_eq!(session.get_bookmark().unwrap(), None);
        assert_eq!(
            count(&db, "SELECT count(*) FROM users WHERE email = 'f1@x'"),
            1
        );
        // Outside the session the rule does not apply.
        db.prepare("SELECT 1").all().await.unwrap();
        assert_eq!(db.injected_per_rule(), [1]);
    });
}

#[test]
fn sessions_start_from_bookmarks_of_this_database_only() {
    block_on(async {
        let db = users();
        let writer = db
            .with_session_constraint(D1SessionConstraint::FirstUnconstrained)
            .unwrap();
        writer
            .prepare("INSERT INTO users (email) VALUES ('b1@x')")
            .run()
            .await
            .unwrap();
        let bookmark = writer.get_bookmark().unwrap().unwrap();
        let reader = db.with_session(Some(&bookmark)).unwrap();
        assert_eq!(reader.get_bookmark().unwrap(), Some(bookmark.clone()));
        let n: Option<i64> = reader
            .prepare("SELECT count(*) AS n FROM users WHERE email = 'b1@x'")
            .first(Some("n"))
            .await
            .unwrap();
        assert_eq!(n, Some(1));
        assert_eq!(reader.get_bookmark().unwrap(), Some(bookmark.clone()));
        for constraint in ["first-primary", "first-unconstrained", " first-primary "] {
            let session = db.with_session(Some(constraint)).unwrap();
            assert_eq!(session.get_bookmark().unwrap(), None, "{constraint}");
        }
        // Bad input is an error value, never a panic: garbage, and a bookmark from a
        // database further along than this one.
        let ahead = users();
        for _ in 0..3 {
            ahead
                .exec("INSERT INTO users (email) VALUES (random())")
                .await
                .unwrap();
        }
        let later = ahead.with_session(None).unwrap();
        later.prepare("SELECT 1").all().await.unwrap();
        let foreign = later.get_bookmark().unwrap().unwrap();
        for bad in ["", "first-replica", "00000000-0000", foreign.as_str()] {
            let error = db.with_session(Some(bad)).unwrap_err();
            assert!(
                error.to_string().starts_with("D1_ERROR: invalid bookmark"),
                "{bad:?}: {error}"
            );
            assert_eq!(classify(&error), FailureClass::Permanent);
        }
    });
}

#[test]
fn a_repository_error_of_its_own_is_permanent() {
    let error = Error::from("the batch returned fewer results than statements");
    assert_eq!(
        error.to_string(),
        "the batch returned fewer results than statements"
    );
    assert_eq!(classify(&error), FailureClass::Permanent);
    let from_exec: Result<Option<u32>, Error> = exec_count();
    assert_eq!(from_exec.unwrap(), Some(1));
}

/// `exec(..).count().map_err(Error::from)`, as code shared with `worker` writes it.
fn exec_count() -> Result<Option<u32>, Error> {
    block_on(async {
        let db = users();
        db.exec("SELECT 1").await?.count().map_err(Error::from)
    })
}
