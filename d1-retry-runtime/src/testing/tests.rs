//! The local D1 against real SQLite: call shapes, error shapes, faults, journal.

use std::collections::BTreeMap;
use std::error::Error as _;

use super::*;
use crate::{FailureClass, classify};

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
        assert_eq!(result.count(), Some(2));
        assert_eq!(result.duration(), Some(0.0));
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
        assert_eq!(empty.count(), Some(0));
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
fn internal_error_references_look_random() {
    let ids: std::collections::HashSet<String> = (0..2000)
        .map(|i| super::database::render(Message::InternalError, i))
        .collect();
    assert_eq!(ids.len(), 2000);
    let chars: std::collections::HashSet<char> = ids
        .iter()
        .flat_map(|id| {
            id.trim_start_matches("internal error; reference = ")
                .chars()
        })
        .collect();
    assert!(chars.len() >= 30, "{chars:?}");
}

#[test]
fn plans_and_handles_describe_themselves() {
    let plan = FaultPlan::new();
    assert!(plan.is_empty());
    assert_eq!(plan.len(), 0);
    let clock = Clock::new(|| core::time::Duration::from_secs(3));
    let plan = plan
        .with(Fault::new(Message::CpuLimit).during(
            &clock,
            core::time::Duration::ZERO..core::time::Duration::from_secs(1),
        ))
        .with(Fault::new(Message::CpuLimit).on_calls(1..2));
    assert!(!plan.is_empty());
    assert_eq!(plan.len(), 2);
    let text = format!("{plan:?}");
    assert!(text.contains("During([0ns..1s])"), "{text}");
    assert!(text.contains("Calls(1..2)"), "{text}");
    assert_eq!(format!("{clock:?}"), "Clock(3s)");
    let db = users();
    db.set_faults(plan);
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
