use std::sync::Arc;

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, D1PreparedStatement, D1Result, Error};

/// A `batch` of the project's own for `Arc<D1Database>`, which splits a list into chunks.
/// Rust finds it before D1's `batch`, reached only through the `Arc`: retried whole as if it
/// were D1's one call, its first chunk would be written again.
trait ChunkedBatch {
    async fn batch(&self, statements: Vec<D1PreparedStatement>) -> Result<Vec<D1Result>, Error>;
}

impl ChunkedBatch for Arc<D1Database> {
    async fn batch(&self, statements: Vec<D1PreparedStatement>) -> Result<Vec<D1Result>, Error> {
        let mut results = Vec::new();
        for chunk in statements.chunks(1) {
            results.extend(D1Database::batch(self, chunk.to_vec()).await?);
        }
        Ok(results)
    }
}

/// A `run` of the project's own for `Arc<D1PreparedStatement>`, which writes an audit row
/// before it runs the statement.
trait Audited {
    async fn run(&self) -> Result<D1Result, Error>;
}

impl Audited for Arc<D1PreparedStatement> {
    async fn run(&self) -> Result<D1Result, Error> {
        D1PreparedStatement::run(self).await
    }
}

#[d1_retry]
async fn place_all(db: Arc<D1Database>, list: Vec<D1PreparedStatement>) -> Result<usize, Error> {
    let done = db.batch(list).await?;
    Ok(done.len())
}

#[d1_retry]
async fn read_audited(statement: Arc<D1PreparedStatement>) -> Result<usize, Error> {
    let result = statement.run().await?;
    Ok(result.rows().len())
}

#[d1_retry(read_only)]
async fn read_audited_in_a_read_only_body(
    statement: &Arc<D1PreparedStatement>,
) -> Result<usize, Error> {
    let result = statement.run().await?;
    Ok(result.rows().len())
}

/// A `first()` of the project's own for `Rc<D1PreparedStatement>`, without D1's column.
trait FirstRow {
    async fn first(&self) -> Result<Option<u32>, Error>;
}

impl FirstRow for std::rc::Rc<D1PreparedStatement> {
    async fn first(&self) -> Result<Option<u32>, Error> {
        D1PreparedStatement::first(self, None).await
    }
}

#[d1_retry]
async fn first_row(statement: std::rc::Rc<D1PreparedStatement>) -> Result<Option<u32>, Error> {
    statement.first().await
}

/// A `first(column)` of the project's own for `Box<D1PreparedStatement>`, with D1's column:
/// looked up as D1's `first` is, with its one argument.
trait CachedFirst {
    async fn first(&self, column: Option<&str>) -> Result<Option<u32>, Error>;
}

impl CachedFirst for Box<D1PreparedStatement> {
    async fn first(&self, column: Option<&str>) -> Result<Option<u32>, Error> {
        D1PreparedStatement::first(self, column).await
    }
}

#[d1_retry]
async fn cached_first(statement: Box<D1PreparedStatement>) -> Result<Option<u32>, Error> {
    statement.first(None).await
}

fn main() {
    let _ = (
        place_all,
        read_audited,
        read_audited_in_a_read_only_body,
        first_row,
        cached_first,
    );
}
