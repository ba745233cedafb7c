//! A receiver that is a place but not a variable or field of one (`v[0]`, `(*r)`,
//! `self.state().db`) is borrowed for the execution, never moved out of (which would not
//! compile: E0507).
#![deny(warnings)]

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{Db, DbError, Statement, block_on};

struct State {
    db: Db,
}

struct App {
    state: State,
}

impl App {
    fn state(&self) -> &State {
        &self.state
    }

    #[d1_retry]
    async fn purge(&self) -> Result<u64, DbError> {
        self.state().db.exec("DELETE FROM t").await
    }
}

#[d1_retry]
async fn index(statements: Vec<Statement>) -> Result<u64, DbError> {
    Ok(statements[0].run().await? + statements[1].run().await?)
}

#[d1_retry]
async fn deref(statement: &Statement) -> Result<u64, DbError> {
    let boxed = Box::new(statement.clone());
    Ok((*statement).run().await? + (*boxed).run().await? + boxed.run().await?)
}

fn main() {
    let app = App {
        state: State { db: Db },
    };
    assert_eq!(block_on(app.purge()).ok(), Some(13));
    let statements = vec![Db.prepare("SELECT 1"), Db.prepare("SELECT 2")];
    assert_eq!(block_on(index(statements)).ok(), Some(2));
    assert_eq!(block_on(deref(&Db.prepare("SELECT 1"))).ok(), Some(3));
}
