//! A `batch` whose list of statements `#[d1_retry]` cannot see where it is written
//! (collected by an iterator, built by a helper, passed in, made by `batch_bind`) is judged
//! by the SQL its statements hold, read when the batch begins (awaited where it is written,
//! or stored and awaited later): a batch of reads is made again after a failure that may
//! have run it, and a batch with a write in it is never made again after one.
//!
//! Each test fails the batch once after it ran (maybe executed). Reads count the calls D1
//! saw; writes count the rows that landed.

use d1_retry::testing::{D1Database, D1PreparedStatement, D1Result, D1Type, Error};
use d1_retry::{RetryPolicy, d1_retry};
use test_support::{calls_with, count, lose_once_after_running, orders_and_audit};

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();
const TIMED: RetryPolicy = NO_BUDGET.with_attempt_timeout(core::time::Duration::from_secs(2));

const READ: &str = "SELECT count(*) AS n FROM orders WHERE item = ?1";
const INSERT: &str = "INSERT INTO orders (item) VALUES (?1)";

/// How a method comes by its list.
#[derive(Clone, Copy, Debug)]
enum Listed {
    /// Collected by an iterator in the call's argument.
    Collected,
    /// Built by a helper.
    Helper,
    /// Bound to a local first.
    Local,
    /// `batch_bind` of one statement.
    BatchBind,
    /// On a session, collected.
    Session,
}

const LISTED: [Listed; 5] = [
    Listed::Collected,
    Listed::Helper,
    Listed::Local,
    Listed::BatchBind,
    Listed::Session,
];

struct Repo {
    db: D1Database,
}

impl Repo {
    /// The statements of `sql` for each item, made out of the method's sight.
    fn statements(&self, sql: &str, items: &[&str]) -> Result<Vec<D1PreparedStatement>, Error> {
        items
            .iter()
            .map(|item| self.db.prepare(sql).bind(&[(*item).into()]))
            .collect()
    }

    /// One batch of `sql` over `items`, its list made as `listed` says.
    #[d1_retry(policy = NO_BUDGET)]
    async fn batch(
        &self,
        listed: Listed,
        sql: &str,
        items: &[&str],
    ) -> Result<Vec<D1Result>, Error> {
        match listed {
            Listed::Collected => {
                self.db
                    .batch(
                        items
                            .iter()
                            .map(|item| self.db.prepare(sql).bind(&[(*item).into()]))
                            .collect::<Result<Vec<_>, _>>()?,
                    )
                    .await
            }
            Listed::Helper => self.db.batch(self.statements(sql, items)?).await,
            Listed::Local => {
                let list = self.statements(sql, items)?;
                self.db.batch(list).await
            }
            Listed::BatchBind => {
                let stmt = self.db.prepare(sql);
                let values: Vec<[D1Type<'_>; 1]> =
                    items.iter().map(|item| [D1Type::Text(item)]).collect();
                self.db.batch(stmt.batch_bind(&values)?).await
            }
            Listed::Session => {
                let session = self.db.with_session(None)?;
                session.batch(self.statements(sql, items)?).await
            }
        }
    }

    /// The same under time limits: the loop that races each attempt.
    #[d1_retry(policy = TIMED)]
    async fn batch_bounded(&self, sql: &str, items: &[&str]) -> Result<Vec<D1Result>, Error> {
        self.db.batch(self.statements(sql, items)?).await
    }

    /// Reads and a write in one list.
    #[d1_retry(policy = NO_BUDGET)]
    async fn read_then_write(&self) -> Result<Vec<D1Result>, Error> {
        let mut list = self.statements(READ, &["tea"])?;
        list.extend(self.statements(INSERT, &["mixed"])?);
        self.db.batch(list).await
    }

    /// The batch's future made first and awaited later: the list is read where the future
    /// is made.
    #[d1_retry(policy = NO_BUDGET)]
    async fn stored(&self, sql: &str, items: &[&str]) -> Result<Vec<D1Result>, Error> {
        let db = &self.db;
        let pending = db.batch(self.statements(sql, items)?);
        pending.await
    }

    /// Two batches joined, neither awaited where it is written.
    #[d1_retry(policy = NO_BUDGET)]
    async fn joined(&self, sql: &str) -> Result<usize, Error> {
        let db = &self.db;
        let (first, second) = tokio::join!(
            db.batch(self.statements(sql, &["a"])?),
            db.batch(self.statements(sql, &["b"])?)
        );
        Ok(first?.len() + second?.len())
    }

    /// A list written out of statements made out of sight (`held`, `read`): the batch is
    /// judged by the SQL every statement of the list holds, as a list out of sight.
    #[d1_retry(policy = NO_BUDGET)]
    async fn written_out(
        &self,
        held: &D1PreparedStatement,
        read: &D1PreparedStatement,
    ) -> Result<Vec<D1Result>, Error> {
        self.db.batch(vec![held.clone(), read.clone()]).await
    }

    /// The same with a statement made in sight in the list.
    #[d1_retry(policy = NO_BUDGET)]
    async fn written_out_beside(&self, held: &D1PreparedStatement) -> Result<Vec<D1Result>, Error> {
        self.db
            .batch(vec![
                held.clone(),
                self.db.prepare(READ).bind(&["lamp".into()])?,
            ])
            .await
    }

    /// The same under time limits, stored.
    #[d1_retry(policy = TIMED)]
    async fn stored_bounded(&self, sql: &str) -> Result<Vec<D1Result>, Error> {
        let db = &self.db;
        let pending = db.batch(self.statements(sql, &["tea"])?);
        pending.await
    }
}

fn repo() -> Repo {
    Repo {
        db: orders_and_audit(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_batch_of_reads_out_of_sight_is_made_again() {
    for listed in LISTED {
        let repo = repo();
        lose_once_after_running(&repo.db, READ);
        let results = repo.batch(listed, READ, &["tea", "lamp"]).await;
        assert_eq!(results.unwrap().len(), 2, "{listed:?}");
        assert_eq!(calls_with(&repo.db, READ), 2, "{listed:?}: made again");
    }
    let repo = repo();
    lose_once_after_running(&repo.db, READ);
    repo.batch_bounded(READ, &["tea"]).await.unwrap();
    assert_eq!(calls_with(&repo.db, READ), 2, "bounded: made again");
}

#[tokio::test(start_paused = true)]
async fn a_batch_of_writes_out_of_sight_lands_once() {
    for listed in LISTED {
        let repo = repo();
        lose_once_after_running(&repo.db, INSERT);
        assert!(
            repo.batch(listed, INSERT, &["tea", "lamp"]).await.is_err(),
            "{listed:?}"
        );
        assert_eq!(calls_with(&repo.db, INSERT), 1, "{listed:?}: made once");
        assert_eq!(
            count(&repo.db, "SELECT count(*) FROM orders"),
            2,
            "{listed:?}"
        );
    }
    let repo = repo();
    lose_once_after_running(&repo.db, INSERT);
    assert!(repo.batch_bounded(INSERT, &["tea"]).await.is_err());
    assert_eq!(count(&repo.db, "SELECT count(*) FROM orders"), 1, "bounded");
}

#[tokio::test(start_paused = true)]
async fn a_read_and_a_write_in_one_list_land_once() {
    let repo = repo();
    lose_once_after_running(&repo.db, READ);
    assert!(repo.read_then_write().await.is_err());
    assert_eq!(calls_with(&repo.db, READ), 1, "made once");
    assert_eq!(count(&repo.db, "SELECT count(*) FROM orders"), 1);
}

/// One list written out with `held` in it: beside another statement made out of sight,
/// or beside one made in sight.
async fn written_out(r: &Repo, held: &D1PreparedStatement, beside: bool) -> Result<usize, Error> {
    let results = if beside {
        r.written_out_beside(held).await?
    } else {
        let read = r.statements(READ, &["lamp"])?.remove(0);
        r.written_out(held, &read).await?
    };
    Ok(results.len())
}

#[tokio::test(start_paused = true)]
async fn a_list_written_out_with_statements_out_of_sight_is_judged_by_all_it_holds() {
    for beside in [false, true] {
        let r = repo();
        let held = r.statements(READ, &["tea"]).unwrap().remove(0);
        lose_once_after_running(&r.db, READ);
        assert_eq!(written_out(&r, &held, beside).await.unwrap(), 2, "{beside}");
        assert_eq!(calls_with(&r.db, READ), 2, "{beside}: reads, made again");

        let r = repo();
        let held = r.statements(INSERT, &["tea"]).unwrap().remove(0);
        lose_once_after_running(&r.db, INSERT);
        assert!(written_out(&r, &held, beside).await.is_err(), "{beside}");
        assert_eq!(
            calls_with(&r.db, INSERT),
            1,
            "{beside}: a write in it, made once"
        );
        assert_eq!(count(&r.db, "SELECT count(*) FROM orders"), 1, "{beside}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_batch_not_awaited_where_it_is_made_is_read_too() {
    let r = repo();
    lose_once_after_running(&r.db, READ);
    assert_eq!(r.stored(READ, &["tea"]).await.unwrap().len(), 1);
    assert_eq!(calls_with(&r.db, READ), 2, "stored read: made again");

    let r = repo();
    lose_once_after_running(&r.db, INSERT);
    assert!(r.stored(INSERT, &["tea"]).await.is_err());
    assert_eq!(
        count(&r.db, "SELECT count(*) FROM orders"),
        1,
        "stored insert: once"
    );

    let r = repo();
    lose_once_after_running(&r.db, READ);
    assert_eq!(r.joined(READ).await.unwrap(), 2);
    assert_eq!(
        calls_with(&r.db, READ),
        3,
        "joined reads: the failed one made again"
    );

    let r = repo();
    lose_once_after_running(&r.db, INSERT);
    assert!(r.joined(INSERT).await.is_err());
    assert_eq!(
        count(&r.db, "SELECT count(*) FROM orders"),
        2,
        "joined inserts: once each"
    );

    let r = repo();
    lose_once_after_running(&r.db, READ);
    assert_eq!(r.stored_bounded(READ).await.unwrap().len(), 1);
    assert_eq!(
        calls_with(&r.db, READ),
        2,
        "bounded stored read: made again"
    );
    let r = repo();
    lose_once_after_running(&r.db, INSERT);
    assert!(r.stored_bounded(INSERT).await.is_err());
    assert_eq!(
        count(&r.db, "SELECT count(*) FROM orders"),
        1,
        "bounded stored insert"
    );
}
