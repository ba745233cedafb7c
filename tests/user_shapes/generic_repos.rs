//! Repositories behind traits and generics: native async trait methods on a generic
//! repository, default methods with `where` clauses, a database reached through a smart
//! pointer, and SQL taken from an associated constant that each implementation may
//! override.

use std::sync::Arc;

use d1_retry::d1_retry;
use d1_retry::testing::{D1Database, Error, Fault, Message};

use crate::harness::{Count, Effects, INSERT_ITEM, NO_BUDGET, READ_N, database, n, sweep};

/// Where a generic repository gets its database: a connection pool, a request context.
trait Source {
    fn db(&self) -> &D1Database;
}

struct Plain(D1Database);

impl Source for Plain {
    fn db(&self) -> &D1Database {
        &self.0
    }
}

/// A repository generic over where its database comes from.
struct GenericRepo<D> {
    src: D,
    effects: Arc<Effects>,
}

/// The repository's interface, a native `async fn` in a trait, as handlers take it
/// generically.
trait OrderStore {
    async fn place_and_count(&self, item: &str) -> Result<i64, Error>;

    fn effects(&self) -> &Effects;
    fn database(&self) -> &D1Database;

    /// A default method, written once for every store, with a `where` clause on `Self`.
    #[d1_retry(policy = NO_BUDGET)]
    async fn audit(&self, what: &str) -> Result<i64, Error>
    where
        Self: Sync,
    {
        self.database()
            .prepare("INSERT INTO audit (what) VALUES (?1)")
            .bind(&[what.into()])?
            .run()
            .await?;
        self.effects().push(format!("audit:{what}"));
        let c = self
            .database()
            .prepare("SELECT count(*) AS n FROM audit")
            .first::<Count>(None)
            .await?;
        Ok(n(c))
    }
}

impl<D> OrderStore for GenericRepo<D>
where
    D: Source + Send + Sync,
{
    #[d1_retry(policy = NO_BUDGET)]
    async fn place_and_count(&self, item: &str) -> Result<i64, Error> {
        let before = self.src.db().prepare(READ_N).first::<Count>(None).await?;
        self.effects.push("before");
        self.src
            .db()
            .prepare(INSERT_ITEM)
            .bind(&[item.into()])?
            .run()
            .await?;
        self.effects.push("inserted");
        let after = self.src.db().prepare(READ_N).first::<Count>(None).await?;
        self.effects.push("after");
        Ok(n(before) * 100 + n(after))
    }

    fn effects(&self) -> &Effects {
        &self.effects
    }

    fn database(&self) -> &D1Database {
        self.src.db()
    }
}

/// A generic repository's trait method: the reads around the insert are retried, the
/// insert lands once.
#[tokio::test(start_paused = true)]
async fn a_generic_repository_s_trait_method_lands_its_write_once_whatever_fails() {
    sweep("generic trait method", |db, effects| async move {
        GenericRepo {
            src: Plain(db),
            effects,
        }
        .place_and_count("generic")
        .await
    })
    .await;
}

/// A default method of the trait, with a `where` clause, written once for all stores.
#[tokio::test(start_paused = true)]
async fn a_trait_default_method_lands_its_write_once_whatever_fails() {
    sweep("default method with where", |db, effects| async move {
        GenericRepo {
            src: Plain(db),
            effects,
        }
        .audit("default")
        .await
    })
    .await;
}

/// A repository generic over a pointer to the database, as one shared through `Arc` across
/// handlers.
struct PointerRepo<P>
where
    P: core::ops::Deref<Target = D1Database>,
{
    db: P,
    effects: Arc<Effects>,
}

impl<P> PointerRepo<P>
where
    P: core::ops::Deref<Target = D1Database>,
{
    #[d1_retry(policy = NO_BUDGET)]
    async fn place(&self, item: &str) -> Result<i64, Error> {
        let c = self.db.prepare(READ_N).first::<Count>(None).await?;
        self.effects.push("read");
        self.db
            .prepare(INSERT_ITEM)
            .bind(&[item.into()])?
            .run()
            .await?;
        self.effects.push("wrote");
        Ok(n(c))
    }
}

impl<P> PointerRepo<P>
where
    P: core::ops::Deref<Target = D1Database>,
{
    /// D1's own `prepare` through the pointer (`*self.db`): its SQL is judged, and the body
    /// is run again after a transient failure.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn count_through(&self) -> Result<i64, Error> {
        // A second `.await`: a body of one D1 call is retried as that call.
        core::future::ready(()).await;
        Ok(n((*self.db).prepare(READ_N).first::<Count>(None).await?))
    }

    /// The pointer's `prepare`, which in a generic function can only be a bound's (README,
    /// "SQL it cannot read counts as a write"): the attempt counts as a write, and is not
    /// run again, even after a failure before D1 was reached.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn count_on_pointer(&self) -> Result<i64, Error> {
        core::future::ready(()).await;
        Ok(n(self.db.prepare(READ_N).first::<Count>(None).await?))
    }
}

/// A `read_only` body on a generic pointer: retried when it calls D1's `prepare` through
/// the pointer, as the README says to write it, and not when it calls the pointer's.
#[tokio::test(start_paused = true)]
async fn a_read_only_body_on_a_generic_pointer_is_retried_through_the_pointer() {
    for through in [true, false] {
        let db = Arc::new(database());
        db.add_fault(Fault::new(Message::CannotResolve).times(1));
        let repo = PointerRepo {
            db: Arc::clone(&db),
            effects: Arc::default(),
        };
        let result = if through {
            repo.count_through().await
        } else {
            repo.count_on_pointer().await
        };
        assert_eq!(result.is_ok(), through, "{result:?}");
        assert_eq!(db.calls().len(), if through { 2 } else { 1 });
    }
}

/// The database behind `Arc` or `Box`, reached through `Deref`: its calls are D1's.
#[tokio::test(start_paused = true)]
async fn a_database_behind_a_smart_pointer_is_retried_call_by_call() {
    sweep("Arc<D1Database>", |db, effects| async move {
        PointerRepo {
            db: Arc::new(db),
            effects,
        }
        .place("arc")
        .await
    })
    .await;
    sweep("Box<D1Database>", |db, effects| async move {
        PointerRepo {
            db: Box::new(db),
            effects,
        }
        .place("box")
        .await
    })
    .await;
}

/// A table whose "touch" statement each implementation picks: a read by default, a write
/// where the table keeps a counter.
trait Table {
    const TOUCH: &'static str = "SELECT count(*) AS n FROM orders";
    fn db(&self) -> &D1Database;
    fn effects(&self) -> &Effects;

    #[d1_retry(policy = NO_BUDGET)]
    async fn touch(&self) -> Result<i64, Error>
    where
        Self: Sync,
    {
        let r = self.db().prepare(Self::TOUCH).all().await?;
        self.effects().push("touched");
        Ok(r.rows().len() as i64)
    }
}

struct ReadsTable(D1Database, Arc<Effects>);
struct WritesTable(D1Database, Arc<Effects>);

impl Table for ReadsTable {
    fn db(&self) -> &D1Database {
        &self.0
    }
    fn effects(&self) -> &Effects {
        &self.1
    }
}

impl Table for WritesTable {
    const TOUCH: &'static str = "UPDATE counters SET n = n + 1 WHERE name = 'hits'";
    fn db(&self) -> &D1Database {
        &self.0
    }
    fn effects(&self) -> &Effects {
        &self.1
    }
}

/// Generic over the table: `T::TOUCH` is known only per instantiation.
#[d1_retry(policy = NO_BUDGET)]
async fn touch_generic<T: Table + Sync>(table: &T) -> Result<i64, Error> {
    let r = table.db().prepare(T::TOUCH).all().await?;
    table.effects().push("generic touched");
    Ok(r.rows().len() as i64)
}

/// The same default method or generic function reads for one implementation and writes
/// for another: the verdict must follow the constant each one has, so the read is retried
/// and the overriding write lands once.
#[tokio::test(start_paused = true)]
async fn sql_from_an_overridden_associated_const_is_judged_per_implementation() {
    sweep("generic T::TOUCH read", |db, effects| async move {
        touch_generic(&ReadsTable(db, effects)).await
    })
    .await;
    sweep("generic T::TOUCH write", |db, effects| async move {
        touch_generic(&WritesTable(db, effects)).await
    })
    .await;
    sweep(
        "default method Self::TOUCH read",
        |db, effects| async move { ReadsTable(db, effects).touch().await },
    )
    .await;
    sweep(
        "default method Self::TOUCH write",
        |db, effects| async move { WritesTable(db, effects).touch().await },
    )
    .await;
}
