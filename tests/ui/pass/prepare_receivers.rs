//! Receivers of `prepare` the expansion probes, in shapes where a probe that moved,
//! borrowed or evaluated them the wrong way would not compile: a macro that names a field,
//! a static behind a path, a constant or unit struct that needs `Drop`, an element at an
//! index that is not `Copy`, a value that is moved, `Tasks::exec` that takes no SQL under
//! `read_only`, and the project's own `prepare` taking `self` by value or `&mut self`
//! (a statement cache), on a field of an owned, boxed or mutably borrowed `self`; and a
//! statement bound under a `#[cfg]` that is off.
#![deny(warnings)]

use std::ops::Index;

use d1_retry::d1_retry;

#[path = "../support/db.rs"]
mod db;
use db::{D1Database, Db, DbError, Statement, block_on};

macro_rules! db_of {
    ($repo:expr) => {
        $repo.db
    };
}

mod store {
    pub static DB: super::Db = super::Db;
}

/// A statement builder of the project's own, which needs `Drop`.
struct Archiver {
    prefix: String,
}

impl Archiver {
    fn prepare(&self, select: &str) -> Statement {
        Db.prepare(format!("{} {select}", self.prefix))
    }
}

const ARCHIVER: Archiver = Archiver {
    prefix: String::new(),
};

/// A unit struct with a `prepare` of its own and a `Drop`.
struct Scratch;

impl Scratch {
    fn prepare(&self, sql: &str) -> Statement {
        Db.prepare(sql)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {}
}

/// A shard key that is not `Copy`, taken by value by `Index`.
#[derive(PartialEq)]
enum Shard {
    Main,
}

struct Shards(Db);

impl Index<Shard> for Shards {
    type Output = Db;

    fn index(&self, shard: Shard) -> &Db {
        assert!(shard == Shard::Main);
        &self.0
    }
}

/// A query builder whose `prepare` consumes it.
struct Select(&'static str);

impl Select {
    fn prepare(self, db: &Db) -> Statement {
        db.prepare(self.0)
    }
}

/// A statement cache: its `prepare` takes `&mut self` and lends the statement.
struct StmtCache {
    db: Db,
    cached: Option<Statement>,
}

impl StmtCache {
    fn prepare(&mut self, sql: &str) -> &Statement {
        let db = &self.db;
        self.cached.get_or_insert_with(|| db.prepare(sql))
    }
}

struct Cached {
    cache: StmtCache,
    caches: Vec<StmtCache>,
}

impl Cached {
    #[d1_retry]
    async fn cached(&mut self) -> Result<Option<i64>, DbError> {
        self.cache.prepare("SELECT 1").first().await
    }

    #[d1_retry]
    async fn cached_element(&mut self, i: usize) -> Result<Option<i64>, DbError> {
        self.caches[i].prepare("SELECT 1").first().await
    }
}

/// A handle whose `prepare` consumes it, in a method that owns `self`.
struct Tx {
    db: Db,
}

impl Tx {
    fn prepare(self, sql: &str) -> Statement {
        self.db.prepare(sql)
    }
}

struct Unit {
    tx: Tx,
}

impl Unit {
    #[d1_retry]
    async fn owned(self) -> Result<u64, DbError> {
        self.tx.prepare("SELECT 1").run().await
    }

    #[d1_retry]
    async fn boxed(self: Box<Self>) -> Result<u64, DbError> {
        self.tx.prepare("SELECT 1").run().await
    }
}

struct Tasks;

impl Tasks {
    async fn exec(&self, _timeout_ms: u64) -> Result<u64, DbError> {
        Ok(0)
    }
}

const TIMEOUT_MS: u64 = 2_000;

fn make_db() -> Db {
    Db
}

struct Repo {
    db: Db,
    shards: Shards,
    tasks: Tasks,
    #[cfg(any())]
    audit: Db,
}

impl Repo {
    #[d1_retry]
    async fn through_a_macro(&self) -> Result<u64, DbError> {
        db_of!(self).prepare("SELECT 1").run().await
    }

    #[d1_retry]
    async fn static_behind_a_path(&self) -> Result<u64, DbError> {
        store::DB.prepare("SELECT 1").run().await?;
        let statement = store::DB.prepare("SELECT 2");
        statement.run().await
    }

    #[d1_retry]
    async fn constant_with_drop(&self) -> Result<u64, DbError> {
        ARCHIVER.prepare("SELECT 1").run().await?;
        Scratch.prepare("SELECT 1").run().await
    }

    #[d1_retry]
    async fn element_at_a_key_moved_in(&self, shard: Shard) -> Result<u64, DbError> {
        self.shards[shard].prepare("SELECT 1").run().await
    }

    #[d1_retry]
    async fn builder_consumed(&self) -> Result<u64, DbError> {
        let select = Select("SELECT 1");
        select.prepare(&self.db).run().await
    }

    /// A database made for the statement, borrowed: probed where it is evaluated, in a
    /// `match` whose temporaries live as long as the original call's.
    #[d1_retry]
    async fn database_made_for_it(&self) -> Result<u64, DbError> {
        D1Database::prepare(&make_db(), "SELECT 1").run().await?;
        let statement = D1Database::prepare(&make_db(), "SELECT 2");
        statement.run().await
    }

    /// A statement bound under a `#[cfg]` that is off, on a field and through a variable
    /// that exist only under it.
    #[d1_retry]
    async fn compiled_out(&self) -> Result<u64, DbError> {
        #[cfg(any())]
        let audit = self.audit.prepare("INSERT INTO audit (event) VALUES ('read')");
        #[cfg(any())]
        let audit_db = &self.audit;
        #[cfg(any())]
        let audited = audit_db.prepare("SELECT 1");
        #[cfg(any())]
        audit.run().await?;
        #[cfg(any())]
        audited.run().await?;
        self.db.prepare("SELECT 1").run().await
    }

    #[d1_retry(read_only)]
    async fn task_with_a_timeout(&self) -> Result<u64, DbError> {
        Tasks::exec(&self.tasks, TIMEOUT_MS).await?;
        self.db.prepare("SELECT 1").run().await
    }
}

fn main() {
    let repo = Repo {
        db: Db,
        shards: Shards(Db),
        tasks: Tasks,
    };
    block_on(repo.through_a_macro()).unwrap();
    block_on(repo.static_behind_a_path()).unwrap();
    block_on(repo.constant_with_drop()).unwrap();
    block_on(repo.element_at_a_key_moved_in(Shard::Main)).unwrap();
    block_on(repo.builder_consumed()).unwrap();
    block_on(repo.task_with_a_timeout()).unwrap();
    block_on(repo.database_made_for_it()).unwrap();
    block_on(repo.compiled_out()).unwrap();
    let cache = || StmtCache {
        db: Db,
        cached: None,
    };
    let mut cached = Cached {
        cache: cache(),
        caches: vec![cache()],
    };
    block_on(cached.cached()).unwrap();
    block_on(cached.cached_element(0)).unwrap();
    block_on(Unit { tx: Tx { db: Db } }.owned()).unwrap();
    block_on(Box::new(Unit { tx: Tx { db: Db } }).boxed()).unwrap();
}
