//! `prepare`s of the project's own that take their receiver by value, where D1's is still
//! the one called: the check for a by-value `prepare` on a D1 database (`by_value_prepare`
//! in the UI tests) must not refuse them.

use std::ops::Deref;
use std::rc::Rc;
use std::sync::Arc;

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, Error};

/// By value on a reference: found after D1's own `prepare(&self)`, which is what runs.
trait Labelled {
    fn prepare(self, label: &str) -> D1PreparedStatement;
}

impl Labelled for &D1Database {
    fn prepare(self, _label: &str) -> D1PreparedStatement {
        D1Database::prepare(self, "INSERT INTO archive SELECT * FROM orders")
    }
}

/// By value on the project's own statement builder.
struct Builder;

trait Build {
    fn prepare(self, sql: &str) -> String;
}

impl Build for Builder {
    fn prepare(self, sql: &str) -> String {
        sql.to_owned()
    }
}

/// A database behind the project's own pointer.
struct Shared(D1Database);

impl Deref for Shared {
    type Target = D1Database;
    fn deref(&self) -> &D1Database {
        &self.0
    }
}

#[d1_retry]
async fn through_pointers(
    db: &D1Database,
    rc: Rc<D1Database>,
    arc: &Arc<D1Database>,
    shared: &Shared,
    boxed: Box<D1Database>,
) -> Result<(), Error> {
    db.prepare("SELECT 1").run().await?;
    (&db.clone()).prepare("SELECT 1").run().await?;
    rc.prepare("SELECT 1").run().await?;
    arc.prepare("SELECT 1").run().await?;
    shared.prepare("SELECT 1").run().await?;
    boxed.prepare("SELECT 1").run().await?;
    let _sql: String = Builder.prepare("SELECT 1");
    Ok(())
}

fn main() {
    let _ = through_pointers;
}
