//! Receivers written around the call the ways code is: in parentheses, and pasted into an
//! annotated function by a `macro_rules!` of the user's that writes repository functions,
//! whose `$receiver:expr` reaches the attribute as an invisible group (`Expr::Group`). Each
//! call is still retried on its own: a call whose future is kept is followed to its
//! `.await`, and a statement in a slice is borrowed where it is, not moved out of it (which
//! would not compile).

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, D1Result, Error};

use crate::harness::{INSERT_ITEM, NO_BUDGET, sweep};

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
