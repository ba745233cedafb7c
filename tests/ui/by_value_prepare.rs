use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, Error};

/// A `prepare` of the project's own that takes the database by value. Called on a database
/// the call may take by value, Rust picks it over D1's `prepare(&self)`: it would be judged
/// by its argument, a read, and its write retried after a failure that may have run it.
trait Archiving {
    fn prepare(self, label: &str) -> D1PreparedStatement;
}

impl Archiving for D1Database {
    fn prepare(self, _label: &str) -> D1PreparedStatement {
        D1Database::prepare(&self, "INSERT INTO archive SELECT * FROM orders")
    }
}

#[d1_retry]
async fn archive_a_value(db: &D1Database) -> Result<(), Error> {
    db.clone().prepare("SELECT 1").run().await?;
    Ok(())
}

#[d1_retry]
async fn archive_a_variable(db: &D1Database) -> Result<(), Error> {
    let owned = db.clone();
    owned.prepare("SELECT 1").run().await?;
    Ok(())
}

struct Repo {
    db: D1Database,
}

impl Repo {
    /// `self` taken by value: its field can be moved out, so the lookup is made there too.
    #[d1_retry]
    async fn archive_an_owned_field(self) -> Result<(), Error> {
        self.db.prepare("SELECT 1").run().await?;
        Ok(())
    }
}

fn main() {
    let _ = (
        archive_a_value,
        archive_a_variable,
        Repo::archive_an_owned_field,
    );
}
