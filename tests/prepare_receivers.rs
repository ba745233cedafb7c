//! Whose `prepare` is trusted: `#[d1_retry]` judges the SQL handed to a `prepare` only when
//! it is a D1 database's or session's own (a `D1Receiver` whose type has `prepare`), since a
//! `prepare` of the project's own, on its own type or on D1's statement, may build any
//! statement from its argument. Here one inserts the rows its argument
//! selects: judged by the `SELECT`, its statement would be retried as a read after D1 ran
//! it, and the rows would land twice.
//!
//! Each repository method runs one statement, and each test fails that statement once after
//! it ran (maybe executed): the archive's inserts land once, and the reads made through D1's
//! own `prepare`, in every form the attribute probes, are still made again. Also here: the
//! statement shapes whose verdict is read at run time (dynamic SQL, a database that is a
//! value) run from several `async move` blocks.

use std::cell::RefCell;
use std::sync::Mutex;

use d1_retry::testing::{
    D1Database, D1PreparedStatement, Error, JsValue, Message, Operation, Timing,
};
use d1_retry::{RetryPolicy, d1_retry};
use test_support::{Archive, join_all};

const NO_BUDGET: RetryPolicy = RetryPolicy::DEFAULT.without_budget();

const READ: &str = "SELECT count(*) AS n FROM orders";
const ARCHIVE: &str = "INSERT INTO archive";

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Count {
    n: i64,
}

/// The archive's `prepare` (a statement builder of the user's own, `test_support::Archive`)
/// as a free function, and in a module.
fn prepare(db: &D1Database, select: &str) -> D1PreparedStatement {
    Archive { db: db.clone() }.prepare(select)
}

mod archive {
    pub fn prepare(
        db: &d1_retry::testing::D1Database,
        select: &str,
    ) -> d1_retry::testing::D1PreparedStatement {
        super::prepare(db, select)
    }
}

/// The archive's `prepare` as a trait of the project's that takes the database by value.
/// Called as `db.prepare(..)` on a database the call could take, Rust would pick it over
/// D1's own, which `#[d1_retry]` refuses to compile (`tests/ui/by_value_prepare.rs`); the
/// way the compiler's error offers to write it, through the trait's path, it is out of sight.
mod by_value {
    use super::{Error, NO_BUDGET, Repo, d1_retry};
    use d1_retry::testing::{D1Database, D1PreparedStatement};

    pub trait ArchiveByValue {
        fn prepare(self, select: &str) -> D1PreparedStatement;
    }

    impl ArchiveByValue for D1Database {
        fn prepare(self, select: &str) -> D1PreparedStatement {
            super::prepare(&self, select)
        }
    }

    impl Repo {
        #[d1_retry(policy = NO_BUDGET)]
        pub async fn own_by_value_prepare(&self) -> Result<(), Error> {
            ArchiveByValue::prepare(self.db.clone(), "SELECT item FROM orders")
                .run()
                .await?;
            Ok(())
        }
    }
}

/// The archive's `prepare` as traits of the project's for what a database is reached
/// through: an `Rc`, an `Arc`, a `Box`, a reference to a reference, and the database
/// borrowed mutably. Rust tries the methods of each type it dereferences in turn, so such a
/// method is found before D1's `prepare(&self)`, which is only reached at the database
/// itself; a by-value one on the database is reached through a `Box`, out of which it can
/// move. Each repository method here makes its statement through one of them, with only
/// that trait in scope.
mod through {
    use super::{Error, NO_BUDGET, Repo, d1_retry};
    use d1_retry::testing::{D1Database, D1PreparedStatement};
    use std::rc::Rc;
    use std::sync::Arc;

    macro_rules! archive_through {
        ($($pointer:ty),+) => {
            pub trait ArchiveThrough {
                fn prepare(&self, select: &str) -> D1PreparedStatement;
            }
            $(
                impl ArchiveThrough for $pointer {
                    fn prepare(&self, select: &str) -> D1PreparedStatement {
                        super::prepare(self, select)
                    }
                }
            )+
        };
    }
    archive_through!(
        Rc<D1Database>,
        Arc<D1Database>,
        Box<D1Database>,
        &D1Database
    );

    pub trait ArchiveByMut {
        fn prepare(&mut self, select: &str) -> D1PreparedStatement;
    }

    impl ArchiveByMut for D1Database {
        fn prepare(&mut self, select: &str) -> D1PreparedStatement {
            super::prepare(self, select)
        }
    }

    impl Repo {
        /// Through a field of the repository's.
        #[d1_retry(policy = NO_BUDGET)]
        pub async fn own_prepare_through_an_rc(&self) -> Result<(), Error> {
            self.shared.prepare("SELECT item FROM orders").run().await?;
            Ok(())
        }

        #[d1_retry(policy = NO_BUDGET)]
        pub async fn own_prepare_through_an_arc(&self) -> Result<(), Error> {
            let shared = Arc::new(self.db.clone());
            let archived = shared.prepare("SELECT item FROM orders");
            archived.run().await?;
            Ok(())
        }

        #[d1_retry(policy = NO_BUDGET)]
        pub async fn own_prepare_through_a_box(&self) -> Result<(), Error> {
            Box::new(self.db.clone())
                .prepare("SELECT item FROM orders")
                .run()
                .await?;
            Ok(())
        }

        #[d1_retry(policy = NO_BUDGET)]
        pub async fn own_prepare_through_a_reference(&self) -> Result<(), Error> {
            let db = &self.db;
            let db = &db;
            db.prepare("SELECT item FROM orders").run().await?;
            Ok(())
        }

        #[d1_retry(policy = NO_BUDGET)]
        pub async fn own_prepare_borrowing_mutably(&self) -> Result<(), Error> {
            let mut db = self.db.clone();
            let db = &mut db;
            db.prepare("SELECT item FROM orders").run().await?;
            Ok(())
        }
    }

    /// The by-value trait of [`super::by_value`], through a `Box`.
    mod boxed {
        use super::super::by_value::ArchiveByValue;
        use super::{Error, NO_BUDGET, Repo, d1_retry};

        impl Repo {
            #[d1_retry(policy = NO_BUDGET)]
            pub async fn own_by_value_prepare_through_a_box(&self) -> Result<(), Error> {
                let boxed = Box::new(self.db.clone());
                boxed.prepare("SELECT item FROM orders").run().await?;
                Ok(())
            }
        }
    }
}

/// A repository generic over its database, which prepares through a trait of the
/// project's: in a generic function Rust can only call the `prepare` of a bound, never D1's
/// own, so a `prepare` there is always the project's. One trait archives, as the others
/// here do; the other prepares its argument, as most such traits do, and its read is made
/// again.
mod generic {
    use super::{Error, NO_BUDGET, Repo, d1_retry};
    use d1_retry::D1Receiver;
    use d1_retry::testing::{D1Database, D1PreparedStatement};

    pub trait Archiving {
        fn prepare(&self, select: &str) -> D1PreparedStatement;
    }

    impl Archiving for D1Database {
        fn prepare(&self, select: &str) -> D1PreparedStatement {
            super::prepare(self, select)
        }
    }

    pub trait Preparing {
        fn prepare(&self, sql: &str) -> D1PreparedStatement;
    }

    impl Preparing for D1Database {
        fn prepare(&self, sql: &str) -> D1PreparedStatement {
            D1Database::prepare(self, sql)
        }
    }

    pub struct Archive<D> {
        db: D,
    }

    impl<D: D1Receiver + Archiving> Archive<D> {
        #[d1_retry(policy = NO_BUDGET)]
        async fn archive(&self) -> Result<(), Error> {
            self.db.prepare("SELECT item FROM orders").run().await?;
            Ok(())
        }
    }

    pub struct Orders<D> {
        db: D,
    }

    impl<D: D1Receiver + Preparing> Orders<D> {
        #[d1_retry(policy = NO_BUDGET)]
        async fn count(&self) -> Result<Option<super::Count>, Error> {
            self.db.prepare(super::READ).first(None).await
        }
    }

    impl Repo {
        pub async fn own_prepare_of_a_generic_database(&self) -> Result<(), Error> {
            Archive {
                db: self.db.clone(),
            }
            .archive()
            .await
        }

        pub async fn d1_prepare_of_a_generic_database(
            &self,
        ) -> Result<Option<super::Count>, Error> {
            Orders {
                db: self.db.clone(),
            }
            .count()
            .await
        }
    }
}

/// A project's own `query!`, named like workers-rs's.
macro_rules! query {
    ($db:expr, $select:expr) => {
        prepare(&$db, $select)
    };
}

/// A type of the project's named `D1Database`, whose associated `prepare` archives: a
/// path `D1Database::prepare` names this type's function, whatever its argument is.
mod own {
    pub struct D1Database;

    impl D1Database {
        pub fn prepare(
            db: &d1_retry::testing::D1Database,
            select: &str,
        ) -> d1_retry::testing::D1PreparedStatement {
            super::prepare(db, select)
        }
    }
}

/// Types of the project's named like D1's database and session, holding one: their
/// `prepare` archives the rows it is handed to select, and so does the database's `exec`.
mod named {
    use d1_retry::testing::{D1ExecResult, D1Result, Error};

    pub struct D1Database(pub d1_retry::testing::D1Database);

    impl D1Database {
        pub fn prepare(&self, select: &str) -> super::D1PreparedStatement {
            super::prepare(&self.0, select)
        }

        pub async fn exec(&self, select: &str) -> Result<D1ExecResult, Error> {
            self.0
                .exec(&format!("INSERT INTO archive (item) {select}"))
                .await
        }
    }

    pub struct D1DatabaseSession(pub d1_retry::testing::D1Database);

    /// The database's `exec`, as a trait's.
    pub trait Execs {
        async fn exec(&self, select: &str) -> Result<D1ExecResult, Error>;
    }

    impl Execs for D1Database {
        async fn exec(&self, select: &str) -> Result<D1ExecResult, Error> {
            D1Database::exec(self, select).await
        }
    }

    /// A statement wrapper of the project's named like D1's: its `run` runs the statement,
    /// then archives a row (an audit trail: a write, whatever the statement).
    pub struct D1PreparedStatement {
        pub db: d1_retry::testing::D1Database,
        pub inner: super::D1PreparedStatement,
    }

    impl D1PreparedStatement {
        pub async fn run(&self) -> Result<D1Result, Error> {
            let result = self.inner.run().await?;
            self.db
                .prepare("INSERT INTO archive (item) VALUES ('audited')")
                .run()
                .await?;
            Ok(result)
        }
    }

    impl D1DatabaseSession {
        pub fn prepare(&self, select: &str) -> super::D1PreparedStatement {
            super::prepare(&self.0, select)
        }
    }
}

/// A query type of the project's: it shows the `SELECT` it holds through `AsRef<str>`, and
/// converts into the `INSERT` that archives the rows it selects.
struct Archiving(&'static str);

impl AsRef<str> for Archiving {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl From<Archiving> for String {
    fn from(query: Archiving) -> String {
        format!("INSERT INTO archive (item) {}", query.0)
    }
}

/// A helper of the project's on D1's statement, named like D1's `prepare`, which a
/// statement has not: it hands back the statement it is called on, whatever its argument
/// (the argument only labels the call). On the archive's insert, `prepare("SELECT ..")` is
/// that insert, not a read.
trait Relabel {
    fn prepare(&self, label: &str) -> D1PreparedStatement;
}

impl Relabel for D1PreparedStatement {
    fn prepare(&self, _label: &str) -> D1PreparedStatement {
        self.clone()
    }
}

/// A query named by an enum, which `prepare` takes through `Into<String>`.
enum Query {
    CountOrders,
    Archive,
}

impl From<Query> for String {
    fn from(query: Query) -> String {
        match query {
            Query::CountOrders => READ.to_owned(),
            Query::Archive => "INSERT INTO archive (item) SELECT item FROM orders".to_owned(),
        }
    }
}

/// A repository the method consumes: its database is probed before the statement's
/// `bind` moves `self`.
struct Order {
    db: D1Database,
    item: String,
}

impl Order {
    fn into_params(self) -> Vec<JsValue> {
        vec![self.item.into()]
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn count(self) -> Result<Option<Count>, Error> {
        self.db
            .prepare("SELECT count(*) AS n FROM orders WHERE item = ?1")
            .bind(&self.into_params())?
            .first(None)
            .await
    }
}

struct Repo {
    db: D1Database,
    archive: Archive,
    /// The same database behind a `RefCell` and a `Mutex`, whose guards deref to it.
    cell: RefCell<D1Database>,
    lock: Mutex<D1Database>,
    /// The same database behind an `Rc`.
    shared: std::rc::Rc<D1Database>,
    asked: u32,
    /// The archive's insert, prepared once.
    insert: D1PreparedStatement,
}

impl Repo {
    fn archive(&self) -> &Archive {
        &self.archive
    }

    fn database(&self) -> &D1Database {
        &self.db
    }

    fn insert(&self) -> &D1PreparedStatement {
        &self.insert
    }

    /// The column to read, from `&mut self`: an execution's argument that borrows `self`
    /// mutably while it is retried.
    fn column(&mut self) -> &str {
        self.asked += 1;
        "n"
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn count_column(&mut self) -> Result<Option<i64>, Error> {
        self.db.prepare(READ).first(Some(self.column())).await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn own_method(&self) -> Result<(), Error> {
        self.archive
            .prepare("SELECT item FROM orders")
            .run()
            .await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn own_method_bound(&self) -> Result<(), Error> {
        let archived = self.archive.prepare("SELECT item FROM orders");
        archived.run().await?;
        Ok(())
    }

    /// The builder reached through a call: probed where it is evaluated.
    #[d1_retry(policy = NO_BUDGET)]
    async fn own_method_on_a_value(&self) -> Result<(), Error> {
        self.archive()
            .prepare("SELECT item FROM orders")
            .run()
            .await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn own_method_on_a_value_bound(&self) -> Result<(), Error> {
        let archived = self.archive().prepare("SELECT item FROM orders");
        archived.run().await?;
        Ok(())
    }

    /// The project's `prepare` on D1's own statement: the statement type is D1's, but its
    /// `prepare` is the project's.
    #[d1_retry(policy = NO_BUDGET)]
    async fn statement_helper(&self) -> Result<(), Error> {
        self.insert.prepare("SELECT item FROM orders").run().await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn statement_helper_bound(&self) -> Result<(), Error> {
        let archived = self.insert.prepare("SELECT item FROM orders");
        archived.run().await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn statement_helper_on_a_value(&self) -> Result<(), Error> {
        self.insert()
            .prepare("SELECT item FROM orders")
            .run()
            .await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn own_function(&self) -> Result<(), Error> {
        prepare(&self.db, "SELECT item FROM orders").run().await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn own_module_function(&self) -> Result<(), Error> {
        archive::prepare(&self.db, "SELECT item FROM orders")
            .run()
            .await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn own_type_named_d1_database(&self) -> Result<(), Error> {
        own::D1Database::prepare(&self.db, "SELECT item FROM orders")
            .run()
            .await?;
        Ok(())
    }

    /// D1's `prepare`, handed a query type of the project's: the text it converts to is
    /// not the one it shows, so it is not read.
    #[d1_retry(policy = NO_BUDGET)]
    async fn own_query_type(&self) -> Result<(), Error> {
        self.db
            .prepare(Archiving("SELECT item FROM orders"))
            .run()
            .await?;
        Ok(())
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn own_query_macro(&self) -> Result<(), Error> {
        query!(self.db, "SELECT item FROM orders").run().await?;
        Ok(())
    }

    /// The same statement awaited as it is made: a `query!` is taken for a statement, as
    /// workers-rs's is, whose `.await` is retried as any statement's is.
    #[d1_retry(policy = NO_BUDGET)]
    async fn own_query_macro_awaited(&self) -> Result<(), Error> {
        query!(self.db, "SELECT item FROM orders").await?;
        Ok(())
    }

    /// D1's `prepare` on a field: probed by type, before the statement is made.
    #[d1_retry(policy = NO_BUDGET)]
    async fn d1_field(&self) -> Result<Option<Count>, Error> {
        self.db.prepare(READ).first(None).await
    }

    /// D1's `prepare` on a database returned by a call: probed as it is evaluated.
    #[d1_retry(policy = NO_BUDGET)]
    async fn d1_value(&self) -> Result<Option<Count>, Error> {
        self.database().prepare(READ).first(None).await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn d1_value_bound(&self) -> Result<Option<Count>, Error> {
        let count = self.database().prepare(READ);
        count.first(None).await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn d1_behind_a_ref_cell(&self) -> Result<Option<Count>, Error> {
        let count = self.cell.borrow().prepare(READ);
        count.first(None).await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn d1_behind_a_mutex(&self) -> Result<Option<Count>, Error> {
        let count = self.lock.lock().unwrap().prepare(READ);
        count.first(None).await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn d1_path(&self) -> Result<Option<Count>, Error> {
        D1Database::prepare(&self.db, READ).first(None).await
    }

    #[d1_retry(policy = NO_BUDGET)]
    async fn d1_path_on_a_value(&self) -> Result<Option<Count>, Error> {
        D1Database::prepare(self.database(), READ).first(None).await
    }

    /// A local named like a constant: scanned when it is prepared, as dynamic SQL.
    #[allow(non_snake_case)]
    #[d1_retry(policy = NO_BUDGET)]
    async fn local_named_like_a_constant(&self, table: &str) -> Result<Option<Count>, Error> {
        let COUNT_SQL = format!("SELECT count(*) AS n FROM {table}");
        self.db.prepare(COUNT_SQL).first(None).await
    }

    /// An enum's variant is no `&str` constant, and not text to scan: its statement is
    /// judged by the text `prepare` made of it, as one out of sight is.
    #[d1_retry(policy = NO_BUDGET)]
    async fn enum_query(&self, query: Query) -> Result<Option<Count>, Error> {
        self.db.prepare(query).first(None).await
    }

    /// A statement whose verdict is read at run time (dynamic SQL), run from the
    /// `async move` blocks of a `join_all`, one per table.
    #[d1_retry(policy = NO_BUDGET)]
    async fn joined_dynamic(&self, sql: &str, tables: &[&str]) -> Result<i64, Error> {
        let statement = self.db.prepare(sql);
        let runs = tables.iter().map(|_| {
            let statement = &statement;
            async move { statement.first::<Count>(None).await }
        });
        let mut total = 0;
        for found in join_all(runs).await {
            total += found?.map_or(0, |count| count.n);
        }
        Ok(total)
    }

    /// The same with a database returned by a call, and the futures pushed in a loop.
    #[d1_retry(policy = NO_BUDGET)]
    async fn looped_value(&self, times: usize) -> Result<i64, Error> {
        let statement = self.database().prepare(READ);
        let mut runs = Vec::new();
        for _ in 0..times {
            let statement = statement.clone();
            runs.push(async move { statement.first::<Count>(None).await });
        }
        let mut total = 0;
        for found in join_all(runs).await {
            total += found?.map_or(0, |count| count.n);
        }
        Ok(total)
    }
}

/// `read_only` bodies that archive through a type named like D1's (`named`), then read:
/// whatever the path says, the type's `prepare` and `exec` are probed as a method's
/// receiver is, so the body is not run again once they ran.
impl Repo {
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn named_by_path(&self, mine: &named::D1Database) -> Result<Option<Count>, Error> {
        named::D1Database::prepare(mine, "SELECT item FROM orders")
            .run()
            .await?;
        self.db.prepare(READ).first(None).await
    }

    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn named_by_qualified_path(
        &self,
        mine: &named::D1Database,
    ) -> Result<Option<Count>, Error> {
        <named::D1Database>::prepare(mine, "SELECT item FROM orders")
            .run()
            .await?;
        self.db.prepare(READ).first(None).await
    }

    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn named_by_path_bound(&self, mine: &named::D1Database) -> Result<Option<Count>, Error> {
        let archive = named::D1Database::prepare(mine, "SELECT item FROM orders");
        archive.run().await?;
        self.db.prepare(READ).first(None).await
    }

    #[d1_retry(read_only, policy = NO_BUDGET, attempt_timeout_ms = 1000)]
    async fn named_session_by_path(
        &self,
        mine: &named::D1DatabaseSession,
    ) -> Result<Option<Count>, Error> {
        named::D1DatabaseSession::prepare(mine, "SELECT item FROM orders")
            .run()
            .await?;
        self.db.prepare(READ).first(None).await
    }

    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn named_exec_by_path(&self, mine: &named::D1Database) -> Result<Option<Count>, Error> {
        named::D1Database::exec(mine, "SELECT item FROM orders").await?;
        self.db.prepare(READ).first(None).await
    }

    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn named_exec(&self, mine: &named::D1Database) -> Result<Option<Count>, Error> {
        mine.exec("SELECT item FROM orders").await?;
        self.db.prepare(READ).first(None).await
    }

    /// The wrapper's `run` handed on by its path, as D1's own would be.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn named_statement_mapped(
        &self,
        statements: &[named::D1PreparedStatement],
    ) -> Result<Option<Count>, Error> {
        for ran in join_all(statements.iter().map(named::D1PreparedStatement::run)).await {
            ran?;
        }
        self.db.prepare(READ).first(None).await
    }

    /// `exec` of the type named like D1's under other paths: an alias, a renamed import,
    /// a trait's.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn named_exec_by_other_paths(
        &self,
        mine: &named::D1Database,
        how: u8,
    ) -> Result<Option<Count>, Error> {
        type Alias = named::D1Database;
        use named::D1Database as Renamed;
        match how {
            0 => Alias::exec(mine, "SELECT item FROM orders").await?,
            1 => Renamed::exec(mine, "SELECT item FROM orders").await?,
            _ => <Alias as named::Execs>::exec(mine, "SELECT item FROM orders").await?,
        };
        self.db.prepare(READ).first(None).await
    }

    /// D1's own, by their paths, on a reference, through an `Rc` and a `&mut` (which the
    /// call derefs or reborrows, and which stays usable): the body reads, and is run again.
    #[d1_retry(read_only, policy = NO_BUDGET)]
    async fn d1_by_path(&self, db: &mut D1Database) -> Result<Option<Count>, Error> {
        D1Database::exec(&self.db, "SELECT 1").await?;
        D1Database::prepare(&self.shared, "SELECT 2").run().await?;
        D1Database::prepare(db, "SELECT 3").run().await?;
        D1Database::prepare(db, READ).first(None).await
    }
}

fn seeded() -> Repo {
    let db = test_support::orders_with_archive();
    let archive = Archive { db: db.clone() };
    Repo {
        insert: archive.prepare("SELECT item FROM orders"),
        archive,
        cell: RefCell::new(db.clone()),
        lock: Mutex::new(db.clone()),
        shared: std::rc::Rc::new(db.clone()),
        asked: 0,
        db,
    }
}

fn lose_once_after_running(repo: &Repo, fragment: &str) {
    test_support::lose_once_after_running(&repo.db, fragment);
}

fn archived(repo: &Repo) -> i64 {
    test_support::count(&repo.db, "SELECT count(*) FROM archive")
}

/// A repository method, named in a table of the shapes a test runs.
type Method<T> =
    for<'r> fn(&'r Repo) -> core::pin::Pin<Box<dyn Future<Output = Result<T, Error>> + 'r>>;

/// Every form of a `prepare` of the project's own: the insert it builds runs once, and the
/// caller gets D1's error. Judged by the `SELECT` handed to it, it ran twice.
#[tokio::test(start_paused = true)]
async fn a_prepare_of_the_project_s_own_is_out_of_sight() {
    let methods: [(&str, Method<()>); 20] = [
        ("method", |r| Box::pin(r.own_method())),
        ("by-value trait's, by its path", |r| {
            Box::pin(r.own_by_value_prepare())
        }),
        ("type named D1Database", |r| {
            Box::pin(r.own_type_named_d1_database())
        }),
        ("query type, handed to D1", |r| Box::pin(r.own_query_type())),
        ("method, bound", |r| Box::pin(r.own_method_bound())),
        ("method on a value", |r| Box::pin(r.own_method_on_a_value())),
        ("method on a value, bound", |r| {
            Box::pin(r.own_method_on_a_value_bound())
        }),
        ("function", |r| Box::pin(r.own_function())),
        ("module's function", |r| Box::pin(r.own_module_function())),
        ("query! macro", |r| Box::pin(r.own_query_macro())),
        ("helper on D1's statement", |r| {
            Box::pin(r.statement_helper())
        }),
        ("helper on D1's statement, bound", |r| {
            Box::pin(r.statement_helper_bound())
        }),
        ("helper on D1's statement, a value", |r| {
            Box::pin(r.statement_helper_on_a_value())
        }),
        ("trait's for an Rc", |r| {
            Box::pin(r.own_prepare_through_an_rc())
        }),
        ("trait's for an Arc, bound", |r| {
            Box::pin(r.own_prepare_through_an_arc())
        }),
        ("trait's for a Box, on a value", |r| {
            Box::pin(r.own_prepare_through_a_box())
        }),
        ("trait's for a reference", |r| {
            Box::pin(r.own_prepare_through_a_reference())
        }),
        ("trait's borrowing mutably", |r| {
            Box::pin(r.own_prepare_borrowing_mutably())
        }),
        ("by-value trait's, through a Box", |r| {
            Box::pin(r.own_by_value_prepare_through_a_box())
        }),
        ("trait's, of a generic database", |r| {
            Box::pin(r.own_prepare_of_a_generic_database())
        }),
    ];
    for (shape, method) in methods {
        let repo = seeded();
        lose_once_after_running(&repo, ARCHIVE);
        assert!(method(&repo).await.is_err(), "{shape}: D1's error");
        assert_eq!(repo.db.calls().len(), 1, "{shape}: made once");
        assert_eq!(archived(&repo), 1, "{shape}: the insert landed once");
    }
}

/// A statement of the project's own `query!`, awaited where it is made: when D1 was not
/// reached it is made again, and its insert lands once; after it ran (maybe executed), it
/// is made once, judged by what D1 holds (an insert), not by the `SELECT` shown.
#[tokio::test(start_paused = true)]
async fn a_query_macro_s_statement_awaited_where_it_is_made_is_retried_as_a_statement() {
    for (message, timing, made) in [
        (Message::CannotResolve, Timing::BeforeExecution, 2),
        (Message::NetworkConnectionLost, Timing::AfterExecution, 1),
    ] {
        let repo = seeded();
        test_support::fail_once(&repo.db, ARCHIVE, message, timing);
        let result = repo.own_query_macro_awaited().await;
        assert_eq!(result.is_ok(), made == 2, "{timing:?}: {result:?}");
        assert_eq!(repo.db.calls().len(), made, "{timing:?}: made");
        assert_eq!(archived(&repo), 1, "{timing:?}: the insert landed once");
    }
}

/// D1's own `prepare`, on a field, on a database a call returns, behind a `RefCell`'s or a
/// `Mutex`'s guard, through its path: the read that failed after it ran is made again.
#[tokio::test(start_paused = true)]
async fn d1_s_prepare_keeps_its_reads_retried() {
    let methods: [(&str, Method<Option<Count>>); 8] = [
        ("field", |r| Box::pin(r.d1_field())),
        (
            "trait's that prepares its argument, of a generic database",
            |r| Box::pin(r.d1_prepare_of_a_generic_database()),
        ),
        ("RefCell's guard, bound", |r| {
            Box::pin(r.d1_behind_a_ref_cell())
        }),
        ("Mutex's guard, bound", |r| Box::pin(r.d1_behind_a_mutex())),
        ("value", |r| Box::pin(r.d1_value())),
        ("value, bound", |r| Box::pin(r.d1_value_bound())),
        ("path", |r| Box::pin(r.d1_path())),
        ("path on a value", |r| Box::pin(r.d1_path_on_a_value())),
    ];
    for (shape, method) in methods {
        let repo = seeded();
        lose_once_after_running(&repo, READ);
        let count = method(&repo)
            .await
            .unwrap_or_else(|error| panic!("{shape}: {error}"));
        assert_eq!(count, Some(Count { n: 1 }), "{shape}");
        assert_eq!(repo.db.calls().len(), 2, "{shape}: made again");
    }
}

/// A local named like a constant is read at run time: a read is made again, a write is
/// handed back.
#[tokio::test(start_paused = true)]
async fn a_local_named_like_a_constant_is_scanned() {
    let repo = seeded();
    lose_once_after_running(&repo, "FROM orders");
    assert_eq!(
        repo.local_named_like_a_constant("orders").await.unwrap(),
        Some(Count { n: 1 })
    );
    assert_eq!(repo.db.calls().len(), 2, "the read was made again");

    let repo = seeded();
    lose_once_after_running(&repo, "FROM orders");
    let write = "orders; DELETE FROM orders RETURNING 1 AS n";
    assert!(repo.local_named_like_a_constant(write).await.is_err());
    assert_eq!(repo.db.calls().len(), 1, "the write was made once");
}

/// An enum's variant handed to `prepare` compiles, and is judged by the text it becomes:
/// a read is made again (it counted as a write, and lost its retry), a write is not.
#[tokio::test(start_paused = true)]
async fn a_query_that_is_not_text_is_judged_by_the_text_it_becomes() {
    let repo = seeded();
    lose_once_after_running(&repo, READ);
    assert_eq!(
        repo.enum_query(Query::CountOrders).await.unwrap(),
        Some(Count { n: 1 })
    );
    assert_eq!(repo.db.calls().len(), 2, "the read was made again");

    let repo = seeded();
    lose_once_after_running(&repo, "INTO archive");
    assert!(repo.enum_query(Query::Archive).await.is_err());
    assert_eq!(repo.db.calls().len(), 1, "the write was made once");
    assert_eq!(archived(&repo), 1);
}

/// A statement whose verdict is read at run time, run from several `async move` blocks:
/// the read that failed after it ran is made again, alone; a write is not.
#[tokio::test(start_paused = true)]
async fn run_time_verdicts_reach_every_async_block() {
    let repo = seeded();
    test_support::lose_call_after_running(&repo.db, Operation::First, 1);
    assert_eq!(
        repo.joined_dynamic(READ, &["a", "b", "c"]).await.unwrap(),
        3
    );
    assert_eq!(repo.db.calls().len(), 4, "three runs, one of them twice");

    let repo = seeded();
    test_support::lose_call_after_running(&repo.db, Operation::First, 1);
    assert_eq!(repo.looped_value(3).await.unwrap(), 3);
    assert_eq!(repo.db.calls().len(), 4, "three runs, one of them twice");

    let repo = seeded();
    test_support::lose_call_after_running(&repo.db, Operation::First, 1);
    let write = "INSERT INTO archive (item) VALUES ('x') RETURNING 1 AS n";
    assert!(repo.joined_dynamic(write, &["a", "b", "c"]).await.is_err());
    assert_eq!(repo.db.calls().len(), 3, "each write made once");
    assert_eq!(archived(&repo), 3);
}

/// The database is probed before the statement is made, while nothing has moved or
/// borrowed it: the method that consumes `self` in `bind`, and the one whose argument
/// borrows `self` mutably, compile and keep their reads retried.
#[tokio::test(start_paused = true)]
async fn a_database_moved_or_borrowed_by_its_statement_is_probed_first() {
    let mut repo = seeded();
    lose_once_after_running(&repo, READ);
    assert_eq!(repo.count_column().await.unwrap(), Some(1));
    assert_eq!(repo.db.calls().len(), 2, "the read was made again");
    assert_eq!(repo.asked, 1, "the argument was evaluated once");

    let repo = seeded();
    lose_once_after_running(&repo, "WHERE item = ?1");
    let order = Order {
        db: repo.db.clone(),
        item: "tea".to_owned(),
    };
    assert_eq!(order.count().await.unwrap(), Some(Count { n: 1 }));
    assert_eq!(repo.db.calls().len(), 2, "the read was made again");
}

/// A `read_only` body's `prepare` or `exec` through a type named like D1's, by its path or
/// as a method, or a statement wrapper named like D1's handed on by its `run`'s path: the
/// archive's insert ran once, and the read after it that failed after it
/// ran is not made again with the body; D1's own, by their paths, keep the body retried.
#[tokio::test(start_paused = true)]
async fn a_read_only_body_probes_a_type_named_like_d1_s_by_its_path() {
    type Named = for<'r> fn(
        &'r Repo,
        &'r named::D1Database,
        &'r named::D1DatabaseSession,
    ) -> core::pin::Pin<
        Box<dyn Future<Output = Result<Option<Count>, Error>> + 'r>,
    >;
    let methods: [(&str, Named); 6] = [
        ("path", |r, m, _| Box::pin(r.named_by_path(m))),
        ("qualified path", |r, m, _| {
            Box::pin(r.named_by_qualified_path(m))
        }),
        ("path, bound", |r, m, _| Box::pin(r.named_by_path_bound(m))),
        ("session's path, timed", |r, _, s| {
            Box::pin(r.named_session_by_path(s))
        }),
        ("exec's path", |r, m, _| Box::pin(r.named_exec_by_path(m))),
        ("exec", |r, m, _| Box::pin(r.named_exec(m))),
    ];
    for (shape, method) in methods {
        let repo = seeded();
        let mine = named::D1Database(repo.db.clone());
        let session = named::D1DatabaseSession(repo.db.clone());
        lose_once_after_running(&repo, READ);
        assert!(method(&repo, &mine, &session).await.is_err(), "{shape}");
        assert_eq!(archived(&repo), 1, "{shape}: the insert landed once");
    }

    // A statement wrapper named like D1's, its `run` handed on by its path.
    let repo = seeded();
    let audited = [named::D1PreparedStatement {
        db: repo.db.clone(),
        inner: repo.db.prepare("SELECT 1"),
    }];
    lose_once_after_running(&repo, READ);
    assert!(repo.named_statement_mapped(&audited).await.is_err());
    assert_eq!(archived(&repo), 1, "the wrapper's insert landed once");

    for how in 0..3 {
        let repo = seeded();
        let mine = named::D1Database(repo.db.clone());
        lose_once_after_running(&repo, READ);
        assert!(repo.named_exec_by_other_paths(&mine, how).await.is_err());
        assert_eq!(archived(&repo), 1, "{how}: the insert landed once");
    }

    let repo = seeded();
    lose_once_after_running(&repo, READ);
    let mut db = repo.db.clone();
    assert_eq!(
        repo.d1_by_path(&mut db).await.unwrap(),
        Some(Count { n: 1 })
    );
    assert_eq!(repo.db.calls().len(), 8, "the body was run again");
}
