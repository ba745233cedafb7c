//! Receivers written around the call the ways code is: in parentheses, and pasted into an
//! annotated function by a `macro_rules!` of the user's that writes repository functions,
//! whose `$receiver:expr` reaches the attribute as an invisible group (`Expr::Group`). Each
//! call is still retried on its own: a call whose future is kept is followed to its
//! `.await`, and a statement in a slice is borrowed where it is, not moved out of it (which
//! would not compile). A struct literal at the edge of a receiver, an argument or SQL
//! (`Job { .. }.statement.run()`) parses as written: the expansion hands such a value to a
//! `match`, where it needs parentheses.

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, D1Result, Error};

use crate::harness::{Count, INSERT_ITEM, NO_BUDGET, READ_N, n, sweep};

/// The call's future kept, its receiver in parentheses.
#[d1_retry(policy = NO_BUDGET)]
async fn kept_in_parentheses(statement: &D1PreparedStatement) -> Result<D1Result, Error> {
    let pending = (statement).run();
    pending.await
}

/// A user's macro writing a function whose call's future is kept.
macro_rules! kept_run {
    ($name:ident, $statement:ident, $receiver:expr) => {
        #[d1_retry(policy = NO_BUDGET)]
        async fn $name($statement: &D1PreparedStatement) -> Result<D1Result, Error> {
            let pending = $receiver.run();
            pending.await
        }
    };
}

kept_run!(kept_pasted, statement, statement);
kept_run!(kept_pasted_in_parentheses, statement, (statement));

/// A user's macro writing a function that runs one statement of a slice.
macro_rules! run_one_of {
    ($name:ident, $statements:ident, $receiver:expr) => {
        #[d1_retry(policy = NO_BUDGET)]
        async fn $name($statements: &[D1PreparedStatement]) -> Result<D1Result, Error> {
            $receiver.run().await
        }
    };
}

run_one_of!(indexed_pasted, statements, statements[1]);
run_one_of!(indexed_pasted_in_parentheses, statements, (statements[1]));

#[tokio::test(start_paused = true)]
async fn receivers_in_parentheses_or_pasted_by_a_macro_are_retried_on_their_own() {
    sweep("kept, in parentheses", |db, _| async move {
        let statement = db.prepare(INSERT_ITEM).bind(&["kept".into()])?;
        kept_in_parentheses(&statement).await.map(|_| ())
    })
    .await;
    sweep("kept, pasted by a macro", |db, _| async move {
        let statement = db.prepare(INSERT_ITEM).bind(&["kept".into()])?;
        kept_pasted(&statement).await.map(|_| ())
    })
    .await;
    sweep("kept, pasted in parentheses", |db, _| async move {
        let statement = db.prepare(INSERT_ITEM).bind(&["kept".into()])?;
        kept_pasted_in_parentheses(&statement).await.map(|_| ())
    })
    .await;
    sweep("a slice's statement, pasted", |db, _| async move {
        let statements = slice(&db)?;
        indexed_pasted(&statements).await.map(|_| ())
    })
    .await;
    sweep(
        "a slice's statement, pasted in parentheses",
        |db, _| async move {
            let statements = slice(&db)?;
            indexed_pasted_in_parentheses(&statements).await.map(|_| ())
        },
    )
    .await;
}

/// Two inserts, of which the functions above run the second.
fn slice(db: &D1Database) -> Result<[D1PreparedStatement; 2], Error> {
    Ok([
        db.prepare(INSERT_ITEM).bind(&["not run".into()])?,
        db.prepare(INSERT_ITEM).bind(&["indexed".into()])?,
    ])
}

/// A statement kept in a struct of the user's.
struct Job {
    statement: D1PreparedStatement,
}

/// A batch's list kept in a struct of the user's.
struct Jobs {
    list: Vec<D1PreparedStatement>,
}

/// SQL kept in a struct of the user's.
struct Query<'a> {
    sql: &'a str,
}

/// A column's name kept in a struct of the user's.
struct Column {
    name: Option<&'static str>,
}

/// Struct literals at the edge of what each call's rewrite takes: a receiver run, one
/// awaited, SQL handed to `prepare`, a batch's list, an execution's argument.
#[d1_retry(policy = NO_BUDGET)]
async fn in_struct_literals(
    db: &D1Database,
    statements: &[D1PreparedStatement],
) -> Result<i64, Error> {
    Job {
        statement: statements[0].clone(),
    }
    .statement
    .run()
    .await?;
    Job {
        statement: statements[1].clone(),
    }
    .statement
    .await?;
    db.prepare(Query { sql: INSERT_ITEM }.sql)
        .bind(&["query".into()])?
        .run()
        .await?;
    db.batch(
        Jobs {
            list: vec![statements[2].clone()],
        }
        .list,
    )
    .await?;
    let row = Job {
        statement: db.prepare(READ_N),
    }
    .statement
    .first::<Count>(Column { name: None }.name)
    .await?;
    Ok(n(row))
}

#[tokio::test(start_paused = true)]
async fn struct_literals_at_the_edge_of_a_call_parse_as_written_and_are_retried() {
    sweep("struct literals", |db, _| async move {
        let statements = [
            db.prepare(INSERT_ITEM).bind(&["run".into()])?,
            db.prepare(INSERT_ITEM).bind(&["awaited".into()])?,
            db.prepare(INSERT_ITEM).bind(&["batched".into()])?,
        ];
        in_struct_literals(&db, &statements).await
    })
    .await;
}
