use proc_macro2::Span;
use quote::{ToTokens, quote};
use syn::Expr;

use super::bindings::derived_from;
use super::syntax::{is_d1_path, is_plain_place, is_variable, is_worker_query, rooted_at_self};
use super::*;

fn names_in(mode: Mode) -> Names {
    Names {
        read_only: mode == Mode::WholeBody { read_only: true },
        private: quote!(::d1_retry::__private),
        call: Ident::new("call", Span::call_site()),
        call_init: quote!(&CALL),
        attempt: Ident::new("attempt", Span::call_site()),
        operation: quote!(NAME),
        timed: false,
        self_borrowed: true,
    }
}

fn names() -> Names {
    names_in(Mode::PerCall)
}

/// One line per execution: method, whether rewritten, and what its SQL is.
fn found_in(body: &str, mode: Mode, params: &[&str]) -> (Vec<String>, String) {
    let mut block: Block = syn::parse_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let params: Vec<Ident> = params
        .iter()
        .map(|p| Ident::new(p, Span::call_site()))
        .collect();
    let found = rewrite(&mut block, mode, &names_in(mode), &params, &[]);
    let lines = found
        .executions
        .iter()
        .map(|execution| {
            let sql: Vec<&str> = execution
                .sql
                .iter()
                .map(|sql| match sql {
                    Sql::Literal {
                        read_only: true, ..
                    } => "read",
                    Sql::Literal { .. } => "write",
                    Sql::Const(..) => "const",
                    Sql::Bound(..) => "bound const",
                    Sql::Dynamic => "dynamic",
                    Sql::Unseen => "unseen",
                })
                .collect();
            let rewritten = if execution.rewritten() {
                "retried"
            } else {
                "as written"
            };
            format!("{} {rewritten} {}", execution.method, sql.join("+"))
        })
        .collect();
    (lines, block.into_token_stream().to_string())
}

fn per_call(body: &str) -> Vec<String> {
    found_in(body, Mode::PerCall, &[]).0
}

#[test]
fn executions_and_their_sql() {
    assert_eq!(
        per_call(
            r#"{
            db.prepare("SELECT 1").bind(&[a])?.first::<Row>(None).await?;
            db.prepare("DELETE FROM t").run().await?;
            db.prepare(SQL).all().await?;
            db.prepare(sql).raw::<Row>().await?;
            D1Database::prepare(&db, "SELECT 2").first(None).await?;
            db.exec("SELECT 3").await?;
            db.exec(&text).await?;
            db.dump().await?;
            helper(&db).run().await?;
        }"#
        ),
        [
            "first retried read",
            "run retried write",
            "all retried const",
            "raw retried dynamic",
            "first retried read",
            "exec retried read",
            "exec retried dynamic",
            "dump retried read",
            "run retried unseen",
        ]
    );
}

#[test]
fn statement_variables_are_followed_unless_rebound() {
    assert_eq!(
        per_call(
            r#"{
            let find = db.prepare("SELECT 1");
            find.bind(&[a])?.first(None).await?;
            let insert = db.prepare("INSERT INTO t VALUES (1)");
            insert.clone().run().await?;
            let dynamic = db.prepare(sql);
            dynamic.await?;
            let twice = db.prepare("SELECT 2");
            let twice = db.prepare("DELETE FROM t");
            twice.run().await?;
            let mut assigned = db.prepare("SELECT 3");
            assigned = other;
            assigned.run().await?;
        }"#
        ),
        [
            "first retried read",
            "run retried write",
            ".await retried dynamic",
            "run retried unseen",
            "run retried unseen",
        ]
    );
    // A parameter named like the variable makes the name ambiguous too.
    let (found, _) = found_in(
        r#"{ let stmt = db.prepare("SELECT 1"); stmt.run().await }"#,
        Mode::PerCall,
        &["stmt"],
    );
    assert_eq!(found, ["run retried unseen"]);
}

#[test]
fn names_a_macro_may_bind_are_not_followed() {
    // A known statement macro binds no name but those in its tokens: a name in them is
    // not followed, others are.
    assert_eq!(
        per_call(
            r#"{
            let s = db.prepare("SELECT 1");
            tracing::info!(?s, "bound");
            s.run().await?;
            let t = db.prepare("SELECT 2");
            info!(other);
            let n = my_count!(t);
            t.run().await?;
        }"#
        ),
        ["run retried unseen", "run retried unseen"]
    );
    assert_eq!(
        per_call(
            r#"{
            let t = db.prepare("SELECT 2");
            info!(other);
            let n = my_count!(other);
            t.run().await?;
        }"#
        ),
        ["run retried read"]
    );
    // Any other statement macro (`bind!(s = db.prepare(..))` may expand to
    // `let s = ..;`, a procedural one to a `let` of any name): nothing is followed.
    assert_eq!(
        per_call(
            r#"{
            let s = db.prepare("SELECT 1");
            let t = db.prepare("SELECT 2");
            bind!(x);
            s.run().await?;
            t.run().await?;
        }"#
        ),
        ["run retried unseen", "run retried unseen"]
    );
    assert_eq!(
        per_call(r#"{ let s = db.prepare("SELECT 1"); bind! { x } s.run().await?; }"#),
        ["run retried unseen"]
    );
    // An expression macro's arguments bind names as any expression does: a `let` in a
    // `join!` argument's block is a second binding.
    assert_eq!(
        per_call(
            r#"{
            let s = db.prepare("DELETE FROM t");
            join!(async { let s = db.prepare("SELECT 1"); s.first(None).await });
            s.run().await?;
            let t = db.prepare("SELECT 2");
            join!(t.first(None), async { let u = 1; u });
            t.all().await?;
        }"#
        ),
        [
            "first retried unseen",
            "run retried unseen",
            "first retried read",
            "all retried read",
        ]
    );
}

#[test]
fn a_statement_bound_again_to_itself_is_followed() {
    assert_eq!(
        per_call(
            r#"{
            let s = db.prepare("SELECT 1");
            let s = &s;
            s.first(None).await?;
            let t = db.prepare("SELECT 2");
            let runs = ids.iter().map(|id| { let t = t.clone(); async move { t.all().await } });
            let u = db.prepare("SELECT 3");
            let u = &other;
            u.run().await?;
            let v = db.prepare("SELECT 4");
            let v = &mut v;
            v.run().await?;
            let w = db.prepare("SELECT 5");
            let w: &Statement = &w;
            w.run().await?;
        }"#
        ),
        [
            "first retried read",
            "all retried read",
            "run retried unseen",
            "run retried unseen",
            "run retried read",
        ]
    );
    // Through a reference, the statement is the one referred to.
    assert_eq!(
        per_call(r#"{ let s = db.prepare("SELECT 1"); (&s).first(None).await?; }"#),
        ["first retried read"]
    );
    // Bound to its own parameters under its own name: still its SQL, read or write.
    assert_eq!(
        per_call(
            r#"{
            let s = db.prepare("SELECT 1");
            let s = s.bind(&[a])?;
            s.first(None).await?;
            let d = db.prepare("DELETE FROM t WHERE id = ?1");
            let d = d.clone().bind(&[b])?.bind_refs(&c)?;
            d.run().await?;
        }"#
        ),
        ["first retried read", "run retried write"]
    );
    // A name bound inside the arguments is counted.
    assert_eq!(
        per_call(
            r#"{
            let s = db.prepare("DELETE FROM t WHERE id = ?1");
            let s = s.bind(&[{ let s = db.prepare("SELECT 1"); s.first(None).await?.id }])?;
            s.run().await?;
        }"#
        ),
        ["first retried unseen", "run retried unseen"]
    );
    // Only those forms: any other `let` of the name is a second binding.
    for rebinding in [
        "let mut s = &s;",
        "let ref s = &s;",
        "let s @ _ = &s;",
        "let s = s.to_owned();",
        "let s = other.clone();",
        "let s = s.clone(x);",
        "let s = s.clone::<X>();",
        "let s = &s else { return };",
    ] {
        let body = format!(r#"{{ let s = db.prepare("SELECT 1"); {rebinding} s.run().await?; }}"#);
        assert_eq!(per_call(&body), ["run retried unseen"], "{rebinding}");
    }
}

#[test]
fn statements_named_by_raw_identifiers_are_followed() {
    assert_eq!(
        per_call(
            r#"{
            let r#type = db.prepare(sql);
            r#type.run().await?;
            let r#match = db.prepare(QUERY);
            r#match.first(None).await?;
        }"#
        ),
        ["run retried dynamic", "first retried bound const"]
    );
}

#[test]
fn derived_from_sees_through_what_the_finder_does() {
    let name = |expr: Expr| derived_from(&expr).map(ToString::to_string);
    let parse = |text: &str| syn::parse_str::<Expr>(text).unwrap();
    assert_eq!(name(parse("(s).bind(&[a])?")), Some("s".into()));
    assert_eq!(name(parse("&(s.clone())")), Some("s".into()));
    // A macro's `$s:expr` reaches the attribute in an invisible group.
    let grouped = Expr::Group(syn::ExprGroup {
        attrs: Vec::new(),
        group_token: Default::default(),
        expr: Box::new(parse("s")),
    });
    assert_eq!(name(grouped), Some("s".into()));
    assert_eq!(name(parse("<T>::s")), None);
    assert_eq!(name(parse("a::s")), None);
    assert_eq!(name(parse("s.run()")), None);
}

#[test]
fn a_bound_statement_s_constant_is_judged_where_it_is_bound() {
    let mut block: Block = syn::parse_str(
        r#"{
            let s = db.prepare(QUERY);
            { const QUERY: &str = "SELECT 1"; s.run().await?; }
        }"#,
    )
    .unwrap();
    let found = rewrite(&mut block, Mode::PerCall, &names(), &[], &[]);
    let kinds: Vec<_> = found.executions[0]
        .sql
        .iter()
        .map(|sql| matches!(sql, Sql::Bound(..)))
        .collect();
    assert_eq!(kinds, [true]);
    let code = block.to_token_stream().to_string();
    // The verdict is taken before the binding, in its scope, and read where `s` runs.
    let judged = code.find("is_read_only_prepared (QUERY)").expect(&code);
    let bound = code.find("let s =").expect(&code);
    let inner = code.find("const QUERY").expect(&code);
    assert!(judged < bound && bound < inner, "{code}");
    assert_eq!(code.matches("is_read_only_prepared").count(), 1, "{code}");
}

/// The SQL handed to a `prepare` is judged only where the receiver's type can be
/// probed, and `D1Database::prepare` and `worker::query!` only by those names: any other
/// `prepare` or `query!` may be the project's own.
#[test]
fn prepare_is_judged_only_where_its_database_is_probed() {
    assert_eq!(
        per_call(
            r#"{
            self.db.prepare("SELECT 1").run().await?;
            dbs[0].prepare("SELECT 1").run().await?;
            (*self.db).prepare("SELECT 1").run().await?;
            env.d1("DB")?.prepare("SELECT 1").run().await?;
            self.state().db.prepare("SELECT 1").run().await?;
            D1Database::prepare(&self.db, "SELECT 1").run().await?;
            worker::D1DatabaseSession::prepare(session, "SELECT 1").run().await?;
            <D1Database>::prepare(db(), "SELECT 1").run().await?;
            <D1Database as Mine>::prepare(&db, "SELECT 1").run().await?;
            prepare(&db, "SELECT 1").run().await?;
            archive::prepare(&db, "SELECT 1").run().await?;
            worker::query!(&db, "SELECT 1").run().await?;
            query!(&db, "SELECT 1").run().await?;
            worker::query!(db(), "SELECT 1").run().await?;
            db_of!(self).prepare("SELECT 1").run().await?;
            store::DB.prepare("SELECT 1").run().await?;
            dbs[i].prepare("SELECT 1").run().await?;
            self.dbs()[i].prepare("SELECT 1").run().await?;
            let bound = D1Database::prepare(&self.db, "SELECT 1");
            bound.run().await?;
        }"#
        ),
        [
            "run retried read",
            "run retried read",
            "run retried read",
            "run retried read",
            "run retried unseen",
            "run retried read",
            "run retried read",
            "run retried read",
            "run retried unseen",
            "run retried unseen",
            "run retried unseen",
            "run retried read",
            "run retried unseen",
            "run retried unseen",
            "run retried unseen",
            "run retried read",
            "run retried unseen",
            "run retried unseen",
            "run retried read",
        ]
    );
}

/// A statement chosen by `if`/`else` or `match` is judged by every arm: read-only only
/// if each arm's SQL is; an arm that leaves makes none, and an `if` without `else`, a
/// labelled block or an arm with statements before its value is out of sight. Each
/// arm's receiver is probed in the arm, where its pattern's names are in scope, and
/// recorded into the slot: nothing is hoisted before the `let`.
#[test]
fn a_statement_chosen_by_its_arms_is_judged_by_all_of_them() {
    let run = |choose: &str| {
        let body = format!("{{ let stmt = {choose}; stmt.run().await?; }}");
        let (lines, code) = found_in(&body, Mode::PerCall, &[]);
        (lines.join(", "), code)
    };
    for (choose, verdict) in [
        (
            r#"if a { db.prepare("SELECT 1") } else { db.prepare("SELECT 2") }"#,
            "read+read",
        ),
        (
            r#"if a { db.prepare("SELECT 1") } else { db.prepare("DELETE FROM t") }"#,
            "read+write",
        ),
        (
            r#"if a { db.prepare("INSERT INTO t VALUES (1)") } else { db.prepare("SELECT 2") }"#,
            "write+read",
        ),
        (
            r#"if a { db.prepare("SELECT 1") } else if b { db.prepare("SELECT 2").bind(&[x])? } else { return Ok(()) }"#,
            "read+read",
        ),
        (
            r#"match kind { Kind::A => db.prepare("SELECT 1"), Kind::B { db } => { db.prepare("SELECT 2") } _ => continue }"#,
            "read+read",
        ),
        (r#"{ db.prepare("SELECT 1") }"#, "read"),
        (
            r#"(if a { db.prepare("SELECT 1") } else { break })"#,
            "read",
        ),
        (
            r#"match a { A => &db.prepare("SELECT 1"), _ => &db.prepare("SELECT 2") }"#,
            "read+read",
        ),
        (
            r#"if a { db.prepare("SELECT 1") } else { db.prepare(sql) }"#,
            "read+dynamic",
        ),
        (r#"if a { db.prepare("SELECT 1") } else { other }"#, "read"),
        (r#"match a { _ => return Ok(()) }"#, "unseen"),
        (
            r#"match a { A => db.prepare("SELECT 1"), _ => unreachable!("no {a}") }"#,
            "read",
        ),
        (
            r#"match a { A => db.prepare("SELECT 1"), _ => my::unreachable!() }"#,
            "read",
        ),
        (
            r#"if a { let db = &x; db.prepare("SELECT 1") } else { db.prepare("SELECT 2") }"#,
            "read",
        ),
        (r#"'found: { db.prepare("SELECT 1") }"#, "unseen"),
        (r#"&mut db.prepare("SELECT 1")"#, "unseen"),
        (
            r#"match a { A => &mut db.prepare("SELECT 1"), _ => &mut db.prepare("SELECT 2") }"#,
            "unseen",
        ),
        (
            r#"match a { Some(s) => break s, None => db.prepare("SELECT 1") }"#,
            "read",
        ),
    ] {
        let (lines, code) = run(choose);
        assert_eq!(lines, format!("run retried {verdict}"), "{choose}");
        // Probed in the arms, after the `let` begins: no probe is hoisted before it.
        let before_let = &code[..code.find("let stmt").unwrap()];
        assert!(!before_let.contains("d1_retry_site"), "{choose}: {code}");
    }
    // An arm out of sight records so into the slot before its value (the runtime then
    // reads the SQL the statement holds), one that leaves by `return` nothing; a
    // statement with no other arm is out of sight.
    for (choose, writes) in [
        (r#"if a { db.prepare("SELECT 1") } else { helper() }"#, 1),
        (
            r#"match a { A => other, B => unreachable!(), _ => return Ok(()) }"#,
            2,
        ),
        (
            r#"match a { A => { let b = &x; b.prepare("SELECT 1") } B => db.prepare("SELECT 2"), _ => Err(e)? }"#,
            2,
        ),
    ] {
        let (_, code) = run(choose);
        let unseen = code.matches(". join (:: d1_retry :: __private :: Access :: Unseen)");
        assert_eq!(unseen.count(), writes, "{code}");
        assert!(!code.contains(". record (false)"), "{code}");
    }
    let (lines, _) = run(r#"if a { helper() } else { return Ok(()) }"#);
    assert_eq!(lines, "run retried unseen");
    // Each arm joins its receiver's verdict into the statement's slot.
    let (_, code) = run(r#"if a { db.prepare("SELECT 1") } else { self.db.prepare("SELECT 2") }"#);
    assert_eq!(code.matches(". join (").count(), 2, "{code}");
    assert_eq!(code.matches("d1_retry_prepare ()").count(), 2, "{code}");
    // A borrowed statement is followed, its receiver probed before the `let` as usual.
    let (lines, code) = run(r#"&db.prepare("SELECT 1")"#);
    assert_eq!(lines, "run retried read");
    assert!(code.starts_with("{ let __d1_retry_sql_db"), "{code}");
    // Bound again to itself in every arm, the name keeps its statement.
    let (lines, _) = found_in(
        r#"{
            let stmt = db.prepare("SELECT 1");
            let stmt = if let Some(id) = id { stmt.bind(&[id])? } else { stmt.clone() };
            stmt.run().await?;
            let other = db.prepare("SELECT 2");
            let other = match id { Some(_) => other.clone(), None => break };
            other.run().await?;
            let last = db.prepare("SELECT 3");
            let last = if a { last.clone() } else { db.prepare("DELETE FROM t") };
            last.run().await?;
        }"#,
        Mode::PerCall,
        &[],
    );
    assert_eq!(
        lines,
        [
            "run retried read+read",
            "run retried read",
            "run retried unseen"
        ]
    );
    // A labelled block may `break` another statement out: it binds the name again.
    let (lines, _) = found_in(
        r#"{ let s = db.prepare("SELECT 1"); let s = 'a: { s.clone() }; s.run().await?; }"#,
        Mode::PerCall,
        &[],
    );
    assert_eq!(lines, ["run retried unseen"]);
    // An `if` without `else` is no statement.
    let (lines, _) = found_in(
        r#"{ let stmt = if a { db.prepare("SELECT 1") }; stmt.run().await?; }"#,
        Mode::PerCall,
        &[],
    );
    assert_eq!(lines, ["run retried unseen"]);
    // The same arms as an execution's receiver.
    let (lines, code) = found_in(
        r#"{ (if a { db.prepare("SELECT 1") } else { db.prepare("SELECT 2") }).run().await?; }"#,
        Mode::PerCall,
        &[],
    );
    assert_eq!(lines, ["run retried read+read"]);
    assert_eq!(code.matches(". join (").count(), 2, "{code}");
}

/// A literal that may write is a write whatever prepares it: its receiver is not
/// probed, in any of the three forms, and it stays a write (a user's own `prepare` of
/// it is not made a read); a read's receiver still is.
#[test]
fn a_written_literal_needs_no_probe() {
    for write in [
        r#"{ self.db.prepare("INSERT INTO t VALUES (1)").run().await?; }"#,
        r#"{ env.d1("DB")?.prepare("DELETE FROM t").run().await?; }"#,
        r#"{ D1Database::prepare(&self.db, concat!("UPDATE t ", "SET a = 1")).run().await?; }"#,
        r#"{ worker::query!(&db, "INSERT INTO t VALUES (1)").run().await?; }"#,
        r#"{ archive.prepare("REPLACE INTO t VALUES (1)").run().await?; }"#,
    ] {
        let (lines, code) = found_in(write, Mode::PerCall, &[]);
        assert_eq!(lines, ["run retried write"], "{write}");
        assert!(!code.contains("d1_retry_prepare"), "{code}");
        assert!(!code.contains("__d1_retry_site"), "{code}");
        assert!(!code.contains("record"), "{code}");
    }
    for read in [
        r#"{ self.db.prepare("SELECT 1").run().await?; }"#,
        r#"{ env.d1("DB")?.prepare("SELECT 1").run().await?; }"#,
        r#"{ worker::query!(&db, "SELECT 1").run().await?; }"#,
    ] {
        let (lines, code) = found_in(read, Mode::PerCall, &[]);
        assert_eq!(lines, ["run retried read"], "{read}");
        assert!(code.contains("d1_retry_prepare"), "{code}");
    }
}

/// Only D1's types' `prepare` by path, and only `worker::query!`; only a place reached
/// without a call is probed by a closure.
#[test]
fn d1_paths_and_plain_places_are_told_apart() {
    let expr = |text: &str| syn::parse_str::<Expr>(text).unwrap();
    for (path, d1) in [
        ("D1Database::prepare", true),
        ("worker::D1DatabaseSession::prepare", true),
        ("<D1Database>::prepare", true),
        ("<worker::D1Database>::prepare", true),
        ("<D1Database as Mine>::prepare", false),
        ("<Other>::prepare", false),
        ("<D1Database>::exec", false),
        ("D1Database::exec", false),
        ("prepare", false),
        ("archive::prepare", false),
        ("D1Database", false),
    ] {
        assert_eq!(is_d1_path(&expr(path), "prepare"), d1, "{path}");
    }
    for (path, d1) in [
        ("D1Database::exec", true),
        ("<worker::D1DatabaseSession>::exec", true),
        ("Tasks::exec", false),
        ("exec", false),
        ("D1Database::prepare", false),
    ] {
        assert_eq!(is_d1_path(&expr(path), "exec"), d1, "{path}");
    }
    for (path, worker) in [
        ("worker::query", true),
        ("::worker::query", true),
        ("query", false),
        ("mine::query", false),
        ("worker::queries", false),
    ] {
        let parsed: syn::Path = syn::parse_str(path).unwrap();
        assert_eq!(is_worker_query(&parsed), worker, "{path}");
    }
    for (place, plain) in [
        ("db", true),
        ("self.db", true),
        ("(self.db)", true),
        ("dbs[0]", true),
        ("dbs[&key]", true),
        ("*self.db", true),
        ("store::DB", true),
        ("dbs[i]", false),
        ("dbs[&f()]", false),
        ("<T>::DB", false),
        ("dbs[f()]", false),
        ("f()[0]", false),
        ("self.f().db", false),
        ("*f()", false),
        ("!db", false),
    ] {
        assert_eq!(is_plain_place(&expr(place)), plain, "{place}");
    }
    let grouped = Expr::Group(syn::ExprGroup {
        attrs: Vec::new(),
        group_token: Default::default(),
        expr: Box::new(expr("self.db")),
    });
    assert!(is_plain_place(&grouped));
    // A variable is borrowed where it stands; a constant, a static, a unit struct, an
    // element or a dereference only in a closure.
    assert!(is_variable(&grouped));
    for (place, variable) in [
        ("db", true),
        ("_db", true),
        ("db.inner", true),
        ("(db).inner", true),
        ("(db)", true),
        ("DB", false),
        ("Scratch", false),
        ("store::DB", false),
        ("dbs[0]", false),
        ("*db", false),
        ("db.inner[0]", false),
    ] {
        assert_eq!(is_variable(&expr(place)), variable, "{place}");
    }
}

/// A method named otherwise that takes one argument is no `prepare`; a local named
/// like a constant is dynamic; in whole-body mode, `D1Database`'s `prepare` and `exec`
/// are judged by path, and no other function's: it may take something else than SQL.
#[test]
fn what_is_taken_for_sql() {
    assert_eq!(
        per_call(
            r#"{
            self.statement_for("SELECT 1").run().await?;
            let INSERT_SQL = format!("INSERT INTO t VALUES ({})", 1);
            db.prepare(INSERT_SQL).run().await?;
            db.prepare(FIND_SQL).run().await?;
        }"#
        ),
        [
            "run retried unseen",
            "run retried dynamic",
            "run retried const"
        ]
    );
    let mut block: Block = syn::parse_str(
        r#"{
            D1Database::exec(db, "DELETE FROM t").await?;
            <D1Database>::prepare(db, "INSERT INTO t VALUES (1)").run().await?;
            Tasks::exec(&tasks, "rebuild-cache").await?;
            exec(db, "UPDATE t SET n = 1").await?;
            Tasks::prepare(&tasks, TIMEOUT_MS);
            D1Database::exec(db).await?;
            D1Database::run(db, "DELETE FROM t").await?;
        }"#,
    )
    .unwrap();
    let mode = Mode::WholeBody { read_only: true };
    let found = rewrite(&mut block, mode, &names_in(mode), &[], &[]);
    let judged: Vec<Option<Span>> = found.sql.iter().map(Sql::literal_write).collect();
    assert_eq!(judged.len(), 2);
    assert!(judged.iter().all(Option::is_some));
}

#[test]
fn places_reached_from_self() {
    for (place, from_self) in [
        ("self", true),
        ("self.db", true),
        ("self.dbs[0]", true),
        ("*self.db", true),
        ("&self.db", true),
        ("(self.db)", true),
        ("self.inner.db", true),
        ("db", false),
        ("this.db", false),
        ("self.db()", false),
        ("make(self).db", false),
        ("!self.db", false),
    ] {
        let expr: Expr = syn::parse_str(place).unwrap();
        assert_eq!(rooted_at_self(&expr), from_self, "{place}");
    }
    // In an invisible group, as a `macro_rules!` hands over an `$e:expr`.
    let grouped = proc_macro2::Group::new(proc_macro2::Delimiter::None, quote!(self.db));
    let expr: Expr = syn::parse2(grouped.into_token_stream()).unwrap();
    assert!(matches!(expr, Expr::Group(_)), "{}", expr.to_token_stream());
    assert!(rooted_at_self(&expr));
}

/// A variable is borrowed, and a constant probed by a closure that is never called,
/// before the statement is made (a `prepare` of the project's own may consume it); a
/// value, where it is evaluated, into the slot; a bound statement's verdicts are read
/// once it is made, into `Copy` locals that `async move` blocks may each take.
#[test]
fn receivers_are_probed_before_or_as_they_are_evaluated() {
    let flat = |code: &str| code.replace(' ', "");
    // A local is probed before the statement is made (it may consume it), and so is a
    // field of `self`: the statement's own chain and arguments may move or borrow it
    // mutably.
    for (body, receiver) in [
        (r#"{ db.prepare("SELECT 1").run().await?; }"#, "db"),
        (
            r#"{ self.db.prepare("SELECT 1").first(Some(self.col())).await?; }"#,
            "self.db",
        ),
    ] {
        let (_, code) = found_in(body, Mode::PerCall, &[]);
        let probed = flat(&code)
            .find(&format!(
                "let__d1_retry_site=(&&::d1_retry::__private::Receiver::of(&{receiver}))"
            ))
            .expect(&code);
        let made = flat(&code)
            .find(&format!("{receiver}.prepare"))
            .expect(&code);
        assert!(probed < made, "{code}");
        // Before it, in code that never runs, the lookup that refuses a `prepare` of
        // the user's taking the database by value (`by_value.rs`); not on a place
        // reached from `self` taken by reference, which could not be moved.
        if receiver.starts_with("self") {
            assert!(!code.contains("ByValue"), "{code}");
        } else {
            let looked_up = flat(&code)
                .find(&format!(
                    "iffalse{{#[allow(unused_imports)]use::d1_retry::__private::{{\
                     PrepareTakingTheDatabaseByValueas_,ViaD1Databaseas_,ViaOtherDatabaseas_,}};\
                     let_=(&&::d1_retry::__private::ByValue::of(&({receiver}))).database().prepare(());}}"
                ))
                .expect(&code);
            assert!(looked_up < probed, "{code}");
        }
        assert!(code.contains(". d1_retry_prepare ()"), "{code}");
        assert!(
            code.contains("begin_on (call , __d1_retry_sql_db_2 ,"),
            "{code}"
        );
        assert!(!code.contains("SqlSlot"), "{code}");
    }

    // A constant is borrowed only inside a closure that is never called: borrowing it
    // would make it, and drop it.
    let (_, code) = found_in(
        r#"{ ARCHIVER.prepare("SELECT 1").run().await?; }"#,
        Mode::PerCall,
        &[],
    );
    let probed = flat(&code).find(
        "(&&::d1_retry::__private::probed(||::d1_retry::__private::Receiver::of(&ARCHIVER))).d1_retry_prepare()",
    );
    assert!(probed.is_some(), "{code}");

    let (_, code) = found_in(
        r#"{ self.db().prepare("SELECT 1").run().await?; }"#,
        Mode::PerCall,
        &[],
    );
    assert!(!code.contains("probed"), "{code}");
    let record = code.find(". join ((&& ").expect(&code);
    let made = code.find(". prepare (\"SELECT 1\")").expect(&code);
    assert!(record < made, "{code}");
    // The value's lookup is made on the local it was moved into, where it is evaluated.
    let looked_up = flat(&code)
        .find("ByValue::of(&__d1_retry_database)).database().prepare(());}")
        .expect(&code);
    assert!(
        looked_up < flat(&code).find(".join((&&").expect(&code),
        "{code}"
    );
    assert!(code.contains("SqlSlot :: new ()"), "{code}");
    // ...and the slot is read into the execution's access.
    assert!(
        code.contains("begin_on (call , (& __d1_retry_sql_call_1) . access () ,"),
        "{code}"
    );

    let (_, code) = found_in(
        r#"{
            let s = self.db().prepare(sql);
            let t = self.db.prepare("SELECT 1");
            join(async move { s.run().await }, async move { t.run().await }).await;
        }"#,
        Mode::PerCall,
        &[],
    );
    // `s`'s verdict is read right after `s` is made (its SQL and database were recorded
    // into its slot), and `t`, probed by type, has no slot.
    let bound = code.find("let s =").expect(&code);
    let read = code.find(". access () ;").expect(&code);
    let next = code.find("let t =").expect(&code);
    assert!(bound < read && read < next, "{code}");
    assert_eq!(
        code.matches("(& __d1_retry_sql_s_1) . access ()").count(),
        1,
        "{code}"
    );
    assert!(!code.contains("__d1_retry_sql_t"), "{code}");
    // A field of `self` is probed before the `let` too: `t` may run after the field
    // was given another value.
    let probed = flat(&code)
        .find("Receiver::of(&self.db)).d1_retry_prepare();__d1_retry_site};lett=")
        .expect(&code);
    let made = flat(&code).find("lett=").expect(&code);
    assert!(probed < made, "{code}");
    // A statement bound with visible SQL on a probed place records nothing at run time.
    assert_eq!(code.matches("SqlSlot :: new").count(), 1, "{code}");

    // `&value`: probed where it is evaluated, not by a closure, which would return a
    // reference to a temporary.
    let (_, code) = found_in(
        r#"{ (&make_db()).prepare("SELECT 1").run().await?; }"#,
        Mode::PerCall,
        &[],
    );
    assert!(!code.contains("probed"), "{code}");
    assert!(code.contains(". join ("), "{code}");

    // A path's function is its type's, whatever the argument is: the type named is
    // probed (one of the user's named `D1Database` is not trusted), the argument not.
    for (path, ty) in [
        ("D1Database::prepare", "D1Database"),
        ("worker::D1Database::prepare", "worker::D1Database"),
        (
            "::worker::D1DatabaseSession::prepare",
            "::worker::D1DatabaseSession",
        ),
        ("<D1Database>::prepare", "D1Database"),
    ] {
        let body = format!(r#"{{ {path}(&make_db(), "SELECT 1").run().await?; }}"#);
        let (lines, code) = found_in(&body, Mode::PerCall, &[]);
        assert_eq!(lines, ["run retried read"], "{code}");
        let probe =
            format!("(&&::d1_retry::__private::Receiver::<{ty}>::named()).d1_retry_prepare()");
        assert!(flat(&code).contains(&flat(&probe)), "{probe}: {code}");
        assert!(!code.contains("make_db ())"), "{code}");
        assert!(!code.contains(". record ("), "{code}");
    }
}

/// A `let` under `#[cfg]` keeps its declarations under the same `#[cfg]`: they name
/// what it names, which may not exist when it is compiled out.
#[test]
fn a_bound_statement_s_declarations_share_its_cfg() {
    let (_, code) = found_in(
        r#"{
            #[cfg(feature = "audit")]
            let audit = self.audit.prepare(AUDIT);
            #[cfg(feature = "audit")]
            audit.run().await?;
        }"#,
        Mode::PerCall,
        &[],
    );
    let flat = code.replace(' ', "");
    let cfg = "#[cfg(feature=\"audit\")]";
    assert!(
        flat.contains(&format!("{cfg}let__d1_retry_sql_audit_judged_")),
        "{code}"
    );
    assert!(
        flat.contains(&format!("{cfg}let__d1_retry_sql_db_")),
        "{code}"
    );
    assert!(flat.contains(&format!("{cfg}letaudit=")), "{code}");
}

#[test]
fn batches_are_read_only_only_if_every_statement_reads() {
    assert_eq!(
        per_call(
            r#"{
            db.batch(vec![db.prepare("SELECT 1"), db.prepare("SELECT 2")]).await?;
            db.batch(vec![db.prepare("SELECT 1"), db.prepare("DELETE FROM t")]).await?;
            db.batch(statements).await?;
            db.batch([db.prepare("SELECT 3")]).await?;
            db.batch((vec![db.prepare("SELECT 4")])).await?;
            db.batch(vec![]).await?;
            db.batch(other![db.prepare("SELECT 5")]).await?;
        }"#
        ),
        [
            "batch retried read+read",
            "batch retried read+write",
            "batch retried unseen",
            "batch retried read",
            "batch retried read",
            "batch retried unseen",
            "batch retried unseen",
        ]
    );
}

/// The literals' verdicts are joined where the expansion is written: one `Access::Write`
/// if any literal writes, nothing for those that read, beside the probes of the databases
/// that prepared them (which decide whether the text is what runs).
#[test]
fn literal_verdicts_join_into_one_access() {
    let access = |body: &str| {
        let (_, code) = found_in(body, Mode::PerCall, &[]);
        assert!(!code.contains("judged"), "{code}");
        let start = code.find("begin_on (call , ").expect(&code) + "begin_on (call , ".len();
        let end = start + code[start..].find(" , &").expect(&code);
        let access = &code[start..end];
        // A batch's is matched on, for a list that turns out to be out of sight.
        match access.strip_prefix("match ") {
            Some(matched) => matched[..matched.find(" {").expect(&code)].to_owned(),
            None => access.to_owned(),
        }
    };
    assert_eq!(
        access(
            r#"{ db.batch(vec![db.prepare("SELECT 1"), db.prepare("DELETE FROM t"), db.prepare("UPDATE t SET a = 1")]).await?; }"#
        ),
        ":: d1_retry :: __private :: Access :: Write . and (__d1_retry_sql_db_2)"
    );
    assert_eq!(
        access(r#"{ db.batch(vec![db.prepare("SELECT 1"), db.prepare("SELECT 2")]).await?; }"#),
        "__d1_retry_sql_db_2 . and (__d1_retry_sql_db_3)"
    );
    assert_eq!(
        access(r#"{ self.db.prepare("INSERT INTO t VALUES (1)").run().await?; }"#),
        ":: d1_retry :: __private :: Access :: Write"
    );
    assert_eq!(
        access(r#"{ self.db.prepare("SELECT 1").first(None).await?; }"#),
        "__d1_retry_sql_db_2"
    );
}

/// A batch of a list out of sight reads the list's statements where it begins, awaited
/// where it is written or stored (from the stored execution's arguments); one written out
/// and awaited there, only where its statements' access comes out `Unseen` as it runs (a
/// statement out of sight in it, SQL that is not text, a `prepare` not vouched for).
#[test]
fn a_batch_of_a_list_out_of_sight_reads_its_statements() {
    let reads = |body: &str| {
        let (_, code) = found_in(body, Mode::PerCall, &[]);
        code.matches("HeldBatch (& __d1_retry_kept)").count()
    };
    assert_eq!(reads("{ db.batch(statements).await }"), 1);
    assert_eq!(reads("{ db.batch(helper()?).await }"), 1);
    assert_eq!(reads("{ db.batch((list)).await }"), 1);
    assert_eq!(reads("{ db.batch(vec![stmt; 3]).await }"), 1);
    let written_out = r#"{ db.batch(vec![db.prepare("SELECT 1")]).await }"#;
    assert_eq!(reads(written_out), 1);
    let (_, code) = found_in(written_out, Mode::PerCall, &[]);
    assert!(
        code.contains("Access :: Unseen => {"),
        "read only where the access is unseen: {code}"
    );
    assert_eq!(
        reads(r#"{ let f = db.batch(vec![db.prepare("SELECT 1")]); f.await }"#),
        0
    );
    assert_eq!(reads("{ let f = db.batch(statements); f.await }"), 0);
    let stored = |body: &str| {
        let (_, code) = found_in(body, Mode::PerCall, &[]);
        code.matches("HeldBatch (& __d1_retry_kept . 0)").count()
    };
    assert_eq!(stored("{ let f = db.batch(statements); f.await }"), 1);
    assert_eq!(stored("{ join!(db.batch(a), db.batch(b)); Ok(()) }"), 2);
    assert_eq!(
        stored(r#"{ let f = db.batch(vec![db.prepare("SELECT 1")]); f.await }"#),
        0
    );
    assert_eq!(stored("{ db.batch(statements).await }"), 0);
    assert_eq!(reads("{ db.exec(sql).await; stmt.run().await }"), 0);
}

/// What the doc paragraph says is read when it runs: a statement's own rewritten
/// execution, a rewritten batch of a list out of sight; not a batch written out, an
/// `exec`, a `dump` or a call left as written.
#[test]
fn an_execution_records_whether_its_sql_out_of_sight_is_read() {
    let held = |body: &str| {
        let mut block: Block = syn::parse_str(body).unwrap();
        let found = rewrite(&mut block, Mode::PerCall, &names(), &[], &[]);
        found.executions.iter().map(|e| e.held).collect::<Vec<_>>()
    };
    assert_eq!(
        held(
            r#"{
            stmt.run().await;
            db.batch(list).await;
            db.batch(vec![db.prepare("SELECT 1")]).await;
            db.exec(sql).await;
            db.dump().await;
            let f = self.make().run();
        }"#
        ),
        [true, true, false, false, false, false]
    );
}

#[test]
fn only_calls_that_cannot_break_are_rewritten() {
    assert_eq!(
        per_call(
            r#"{
            let later = db.prepare("SELECT 1").first(None);
            let place = stmt.run();
            let both = [a.run(), b.run()];
            let f = move || stmt.run();
            let g = async move { stmt.run().await };
            items.iter().all(|x| x > 0);
        }"#
        ),
        [
            "first as written read",
            "run retried unseen",
            "run as written unseen",
            "run as written unseen",
            "run as written unseen",
            "run retried unseen",
        ]
    );
}

/// A future kept in a value that needs no one type with another site (a block's value, a
/// tuple's element, an `Option` of a block) is retried; in a one-type position (an arm's
/// value after other statements, a `let` with a type whose name meets, what is pushed by
/// the method's path) it is left as written, or the code would not compile.
#[test]
fn futures_in_values_are_retried_and_in_one_type_positions_left() {
    for (body, first) in [
        (
            "{ let v = { log(); a.run() }; v.await?; }",
            "run retried unseen",
        ),
        (
            "{ let v = Some({ a.run() }); v.unwrap().await?; }",
            "run retried unseen",
        ),
        (
            "{ let (fa, n) = (a.first(None), 1); fa.await?; }",
            "first retried unseen",
        ),
    ] {
        assert_eq!(per_call(body)[0], first, "{body}");
    }
    let left = [
        "{ let c = if d { log(); a.run() } else { b.run() }; c.await?; }",
        "{ let c = if d { { log(); a.run() } } else { b.run() }; c.await?; }",
        "{ let c = match d { true => { log(); a.run() } _ => b.run() }; c.await?; }",
        "{ let fa: _ = a.run(); let fb = b.run(); join_all(vec![fa, fb]).await; }",
        "{ let fa = a.run(); let fb: _ = b.run(); let c = if d { fa } else { fb }; c.await?; }",
        "{ let mut v = Vec::new(); Vec::push(&mut v, a.run()); Vec::push(&mut v, b.run()); }",
        "{ let (c, _) = if d { (a.run(), 1) } else { (b.run(), 2) }; c.await?; }",
        "{ slot.f = a.run(); slot.f = b.run(); }",
    ];
    for body in left {
        assert_eq!(
            per_call(body)[..2],
            ["run as written unseen", "run as written unseen"],
            "{body}"
        );
    }
}

#[test]
fn an_async_move_block_gets_its_own_schedule() {
    let (_, body) = found_in(
        "{ spawn(async move { stmt.run().await }); }",
        Mode::PerCall,
        &[],
    );
    assert!(body.contains("async move { let call = & CALL ;"), "{body}");
    let (_, body) = found_in(
        "{ spawn(async move { other().await }); }",
        Mode::PerCall,
        &[],
    );
    assert!(!body.contains("CALL"), "{body}");
}

#[test]
fn dynamic_sql_is_scanned_where_it_is_prepared() {
    let (_, body) = found_in("{ db.prepare(sql).run().await }", Mode::PerCall, &[]);
    assert!(body.contains("d1_retry_text"), "{body}");
    assert!(body.contains("SqlSlot :: new ()"), "{body}");
    let (_, body) = found_in(
        r#"{ db.prepare("SELECT 1").run().await }"#,
        Mode::PerCall,
        &[],
    );
    assert!(!body.contains("d1_retry_text"), "{body}");
}

#[test]
fn whole_body_mode_rewrites_nothing_but_observes_dynamic_sql() {
    let (found, body) = found_in(
        r#"{ let s = db.prepare(sql); helper(db.prepare("DELETE FROM t")); s.run().await }"#,
        Mode::WholeBody { read_only: true },
        &[],
    );
    assert_eq!(found, ["run as written "]);
    assert!(body.contains("attempt . observe"), "{body}");
    // The execution is not observed: the statement was made in sight, and only where its
    // SQL is not text is the statement made observed, as it is made.
    assert!(!body.contains("d1_retry_site () . observe ("), "{body}");
    assert_eq!(
        body.matches("d1_retry_site () . observe_made (").count(),
        1,
        "{body}"
    );
    let (_, in_block) = found_in(
        "{ spawn(async move { db.prepare(sql).run().await }) }",
        Mode::WholeBody { read_only: true },
        &[],
    );
    assert_eq!(
        in_block
            .matches("d1_retry_site () . observe_made_unborrowed (")
            .count(),
        1,
        "{in_block}"
    );

    // In an `async` block or a closure, the record is not borrowed: the thread counts.
    let recorded = |body: &str| {
        let (_, body) = found_in(body, Mode::WholeBody { read_only: true }, &[]);
        [
            "attempt . observe_prepared_text (",
            "attempt . observe (",
            "record_sql_prepared_text (",
            "record_sql (",
        ]
        .map(|call| body.matches(call).count())
    };
    assert_eq!(recorded("{ db.prepare(sql).run().await }"), [1, 0, 0, 0]);
    assert_eq!(recorded("{ db.exec(sql).await }"), [0, 1, 0, 0]);
    assert_eq!(
        recorded("{ spawn(async move { db.prepare(sql).run().await }) }"),
        [0, 0, 1, 0]
    );
    assert_eq!(recorded("{ (|| db.exec(sql))().await }"), [0, 0, 0, 1]);
    assert_eq!(
        recorded("{ let f = |s| async { db.exec(s).await }; db.exec(sql).await }"),
        [0, 1, 0, 1]
    );
}

#[test]
fn a_read_only_body_reads_the_sql_of_statements_made_out_of_sight() {
    let read_only = Mode::WholeBody { read_only: true };
    let observed = |body: &str| {
        let (_, body) = found_in(body, read_only, &[]);
        body.matches("d1_retry_site () . observe (").count()
            + body
                .matches("d1_retry_site () . observe_unborrowed (")
                .count()
    };
    // Made in sight: a `prepare` chain, a name bound once to one, `D1Database::prepare`.
    assert_eq!(
        observed(r#"{ db.prepare("SELECT 1").bind(&[])?.first(None).await }"#),
        0
    );
    assert_eq!(
        observed(r#"{ let s = db.prepare(SQL); s.run().await; (&s).all().await }"#),
        0
    );
    assert_eq!(
        observed(r#"{ D1Database::prepare(&db, "SELECT 1").raw().await }"#),
        0
    );
    assert_eq!(
        observed(r#"{ let s: Statement = db.prepare("SELECT 1"); s.run().await }"#),
        0
    );
    // Out of sight: a parameter, a field, a helper's, an index, a `mut` binding, a name
    // bound twice, a statement chosen by `if`, each execution of it.
    assert_eq!(observed("{ stmt.run().await }"), 1);
    assert_eq!(observed("{ self.stmt.first(None).await }"), 1);
    assert_eq!(observed("{ helper(db)?.all().await }"), 1);
    assert_eq!(observed("{ stmts[0].raw().await }"), 1);
    assert_eq!(
        observed(r#"{ let mut s = db.prepare("SELECT 1"); s.run().await }"#),
        1
    );
    assert_eq!(
        observed(r#"{ let s = db.prepare("SELECT 1"); let s = other(s); s.run().await }"#),
        1
    );
    assert_eq!(
        observed(r#"{ let s = if a { db.prepare("SELECT 1") } else { x }; s.run().await }"#),
        1
    );
    assert_eq!(
        observed("{ stmt.run().await; let f = stmt.first(None); f.await }"),
        2
    );
    assert_eq!(observed("{ make(db, SQL).run().await }"), 1);
    assert_eq!(observed("{ self.made(SQL).run().await }"), 1);
    assert_eq!(observed("{ db.prepare(SQL, extra).run().await }"), 1);
    assert_eq!(
        observed(r#"{ let s = db.prepare("SELECT 1"); <T>::s.run().await }"#),
        1
    );
    assert_eq!(observed("{ join!(a.run(), b.first(None)) }"), 2);
    // Each execution, and what is awaited, which may be a statement (here a future, whose
    // observation is nothing).
    assert_eq!(observed("{ join_all(vec![a.run(), b.run()]).await }"), 3);
    // A statement awaited (it runs), kept or made out of sight.
    assert_eq!(observed("{ self.held.clone().await }"), 1);
    assert_eq!(observed("{ statement(db, SQL)?.await }"), 1);
    assert_eq!(observed(r#"{ db.prepare("SELECT 1").await }"#), 0);
    assert_eq!(observed("{ let f = stmt.run(); f.await }"), 1);
    // An execution called by its path, or handed on as a function.
    assert_eq!(
        observed("{ D1PreparedStatement::run(&self.held).await }"),
        1
    );
    assert_eq!(
        observed("{ <D1PreparedStatement>::first(s, None).await }"),
        1
    );
    assert_eq!(
        observed("{ join_all(stmts.iter().map(D1PreparedStatement::run)).await }"),
        2
    );
    assert_eq!(
        observed("{ join_all(stmts.iter().map(Job::run)).await }"),
        1
    );
    // A `prepare` whose receiver the probe reaches is in sight, the probe telling the
    // attempt of one that is not D1's; any other is read where its statement runs.
    let probes = |body: &str| {
        found_in(body, read_only, &[])
            .1
            .matches("d1_retry_prepare ()")
            .count()
    };
    assert_eq!(
        probes(r#"{ self.archive.prepare("SELECT 1").run().await }"#),
        1
    );
    assert_eq!(
        observed(r#"{ self.archive.prepare("SELECT 1").run().await }"#),
        0
    );
    assert_eq!(
        probes(r#"{ env.d1("DB")?.prepare("SELECT 1").run().await }"#),
        1
    );
    assert_eq!(
        observed(r#"{ env.d1("DB")?.prepare("SELECT 1").run().await }"#),
        0
    );
    assert_eq!(
        probes(r#"{ self.state().db.prepare("SELECT 1").run().await }"#),
        0
    );
    assert_eq!(
        observed(r#"{ self.state().db.prepare("SELECT 1").run().await }"#),
        1
    );
    assert_eq!(
        observed(r#"{ let s = self.archive.prepare("SELECT 1"); s.run().await }"#),
        0
    );
    // The `prepare`'s receiver, and the `batch`'s: a type of the user's with a `batch` of
    // its own may write whatever it is handed.
    assert_eq!(
        probes(r#"{ db.batch(vec![db.prepare("SELECT 1")]).await }"#),
        2
    );
    assert_eq!(observed("{ [a.run()] }"), 1);
    // A macro not known to take expressions keeps its tokens as written.
    assert_eq!(observed("{ my_macro!(stmt.run().await) }"), 0);
    // A batch's list not written out of statements made in sight.
    let batches = |body: &str| {
        let (_, body) = found_in(body, read_only, &[]);
        body.matches("HeldBatch (& __d1_retry_list)").count()
    };
    assert_eq!(batches("{ db.batch(statements).await }"), 1);
    // Called by its path: the list is its second argument.
    assert_eq!(batches("{ D1Database::batch(&db, statements).await }"), 1);
    assert_eq!(
        batches(r#"{ D1Database::batch(&db, vec![db.prepare("SELECT 1")]).await }"#),
        0
    );
    assert_eq!(
        batches("{ db.batch(vec![stmt, db.prepare(SQL)]).await }"),
        1
    );
    assert_eq!(batches("{ db.batch([helper()]).await }"), 1);
    assert_eq!(
        batches(r#"{ db.batch(vec![db.prepare("SELECT 1")]).await }"#),
        0
    );
    assert_eq!(
        batches("{ let s = db.prepare(SQL); db.batch([s.clone()]).await }"),
        0
    );
    assert_eq!(batches("{ spawn(async move { db.batch(list).await }) }"), 1);
    assert_eq!(
        batches(r#"{ db.batch((vec![db.prepare("SELECT 1")])).await }"#),
        0
    );
    assert_eq!(
        batches(r#"{ db.batch(other![db.prepare("SELECT 1")]).await }"#),
        1
    );
    let (_, body) = found_in("{ db.batch(list).await }", Mode::PerCall, &[]);
    assert!(!body.contains("__d1_retry_list"), "{body}");
    // An `async` block or a closure may have to own all it holds, or become a `fn`
    // pointer: it must not borrow the attempt's record, so it counts on the thread.
    let borrowing = |body: &str| {
        let (_, body) = found_in(body, read_only, &[]);
        (
            body.matches("d1_retry_site () . observe (").count(),
            body.matches("d1_retry_site () . observe_unborrowed (")
                .count(),
            body.matches("observe_held (").count(),
            body.matches("record_held (").count(),
        )
    };
    // Each observed execution's output is judged too, where its receiver is not D1's
    // (`unseen_output.rs`): told through the record in the body, on the thread beyond it.
    assert_eq!(borrowing("{ stmt.run().await }"), (1, 0, 1, 0));
    assert_eq!(
        borrowing("{ async { stmt.run().await }.await }"),
        (0, 1, 0, 1)
    );
    assert_eq!(
        borrowing("{ spawn(async move { stmt.run().await }) }"),
        (0, 1, 0, 1)
    );
    assert_eq!(borrowing("{ spawn(move || stmt.run()) }"), (0, 1, 0, 1));
    // What the closure's call returns is awaited in the body, and observed there too (a
    // future, here).
    assert_eq!(
        borrowing("{ let f = |s| s.run(); f(stmt).await }"),
        (1, 1, 0, 1)
    );
    assert_eq!(
        borrowing("{ stmt.run().await; (|| stmt.run())().await }"),
        (2, 1, 1, 1)
    );
    // A `batch`: its list and its receiver, probed for a `batch` of the user's.
    assert_eq!(borrowing("{ db.batch(list).await }"), (0, 0, 2, 0));
    assert_eq!(
        borrowing("{ spawn(async move { db.batch(list).await }) }"),
        (0, 0, 0, 2)
    );
    assert_eq!(
        borrowing("{ (|list| async move { db.batch(list).await })(l).await }"),
        (1, 0, 0, 2)
    );
    // Not a statement's execution, or not `read_only`.
    assert_eq!(
        observed("{ db.batch(statements).await; db.exec(sql).await }"),
        0
    );
    let (_, body) = found_in(
        "{ stmt.run().await }",
        Mode::WholeBody { read_only: false },
        &[],
    );
    assert!(!body.contains("observe"), "{body}");
}

/// A statement or a batch's list a `macro_rules!` macro hands over as `$e:expr` comes in
/// an invisible group: it is seen through.
#[test]
fn invisible_groups_are_seen_through() {
    let observed = |receiver: TokenStream| {
        let group = proc_macro2::Group::new(proc_macro2::Delimiter::None, receiver);
        let mut block: Block = syn::parse2(quote!({ #group.run().await })).unwrap();
        let mode = Mode::WholeBody { read_only: true };
        rewrite(&mut block, mode, &names_in(mode), &[], &[]);
        block
            .to_token_stream()
            .to_string()
            .matches("d1_retry_site () . observe (")
            .count()
    };
    assert_eq!(observed(quote!(db.prepare("SELECT 1"))), 0);
    assert_eq!(observed(quote!(stmt)), 1);
    // A batch's list in an invisible group: written out, so not read where it runs in a
    // `read_only` body, and read per call only where its access comes out unseen.
    let batch = |mode: Mode, list: TokenStream| {
        let group = proc_macro2::Group::new(proc_macro2::Delimiter::None, list);
        let mut block: Block = syn::parse2(quote!({ db.batch(#group).await })).unwrap();
        rewrite(&mut block, mode, &names_in(mode), &[], &[]);
        let code = block.to_token_stream().to_string();
        code.contains("HeldBatch")
    };
    let read_only = Mode::WholeBody { read_only: true };
    assert!(!batch(read_only, quote!(vec![db.prepare("SELECT 1")])));
    assert!(batch(read_only, quote!(statements)));
    assert!(batch(Mode::PerCall, quote!(vec![db.prepare("SELECT 1")])));
    assert!(batch(Mode::PerCall, quote!(statements)));
}

#[test]
fn nested_items_and_foreign_macros_are_skipped() {
    assert_eq!(
        per_call(
            r#"{
            fn helper(db: &Db) { db.prepare("DELETE FROM t").run(); }
            my_macro!(db.prepare("DELETE FROM t").run().await);
            dbg!(db.prepare("DELETE FROM t").run().await);
            println!("{:?}", db.prepare("SELECT 1").first(None).await);
        }"#
        ),
        ["first retried read"]
    );
}

#[test]
fn mut_statement_bindings_are_not_followed() {
    // `mem::replace(&mut s, ..)`, `(s, n) = ..` or `*r = ..` could swap in a write.
    assert_eq!(
        per_call(
            r#"{
            let mut s = db.prepare("SELECT 1");
            std::mem::replace(&mut s, db.prepare("DELETE FROM t"));
            s.run().await?;
        }"#
        ),
        ["run retried unseen"]
    );
}

#[test]
fn returned_futures_are_left_as_written() {
    assert_eq!(
        per_call(
            r#"{
            let early = stmt.first(None);
            if done { return Ok(stmt.run()); }
            Ok(stmt.all())
        }"#
        ),
        [
            "first retried unseen",
            "run as written unseen",
            "all as written unseen",
        ]
    );
    // An async block in the returned value, `move` or not, has a schedule of its own.
    for returned in [
        "{ Ok(async move { stmt.run().await }) }",
        "{ Ok(async { stmt.run().await }) }",
    ] {
        assert_eq!(per_call(returned), ["run retried unseen"], "{returned}");
        let (_, code) = found_in(returned, Mode::PerCall, &[]);
        let own = code.find("let call = & CALL ;").expect(&code);
        assert!(own < code.find("d1_retry_site").expect(&code), "{code}");
    }
}

/// A name bound once to an execution's future is awaited as it is: the execution was
/// retried where it was made, and the future is not a statement.
#[test]
fn an_execution_s_future_is_awaited_as_it_is() {
    assert_eq!(
        per_call("{ let pending = stmt.first(None); pending.await }"),
        ["first retried unseen"]
    );
    assert_eq!(
        per_call("{ let mut pending: F = (stmt.run()); (pending).await }"),
        ["run retried unseen"]
    );
    // A statement, or a name bound again, is still awaited as a statement.
    assert_eq!(
        per_call("{ let s = stmt.bind(&[])?; s.await }"),
        [".await retried unseen"]
    );
    assert_eq!(
        per_call("{ let p = stmt.run(); let p = other; p.await }"),
        ["run retried unseen", ".await retried unseen"]
    );
    assert_eq!(
        per_call("{ let p = stmt.run().await; p.await }"),
        ["run retried unseen", ".await retried unseen"]
    );
}

#[test]
fn borrowed_places_are_borrowed_not_moved() {
    let (found, body) = found_in(
        "{ v[0].run().await?; (*r).run().await?; self.state().db.exec(sql).await }",
        Mode::PerCall,
        &[],
    );
    assert_eq!(
        found,
        [
            "run retried unseen",
            "run retried unseen",
            "exec retried dynamic"
        ]
    );
    assert_eq!(body.matches("match & ").count(), 3, "{body}");
    assert!(!body.contains("match (* r)"), "{body}");
}

/// What a macro the walk does not read as expressions may run: D1's calls with D1's
/// arguments, at any depth, by method or by path; not `Iterator::all(|..| ..)` or
/// `slice::first()`.
#[test]
fn a_foreign_macro_s_tokens_are_searched_for_d1_calls() {
    use super::vocabulary::may_make_d1_call;
    let runs = |tokens: &str| may_make_d1_call(tokens.parse().unwrap());
    for d1 in [
        "r = stmt.run() => {}",
        "r = async { held.all().await } => {}",
        "stmt.raw::<Vec<u8>>()",
        "stmt.raw_js_value()",
        "stmt.clone().into_future()",
        "stmt.first(None)",
        "db.batch(list)",
        "db.exec(sql)",
        "D1PreparedStatement::run(&stmt)",
        "x => { D1Database::batch(&db, list) }",
    ] {
        assert!(runs(d1), "{d1}");
    }
    for other in [
        "rows.iter().all(|r| r.ok)",
        "rows.first()",
        "run()",
        "let all = 1",
        "job.run",
        "format!(\"run()\")",
        "D1PreparedStatement::run",
    ] {
        assert!(!runs(other), "{other}");
    }
}

/// In a `read_only` body, such a macro tells the attempt of a statement out of sight, as it
/// begins, in statement and in expression position; an expression macro the walk reads is
/// observed inside instead, and per-call mode leaves all of it as written.
#[test]
fn a_read_only_body_tells_its_attempt_of_a_foreign_macro_that_may_run_d1() {
    let read_only = Mode::WholeBody { read_only: true };
    let unseen = |body: &str, mode| {
        let (_, body) = found_in(body, mode, &[]);
        body.matches("Access :: Unseen").count()
    };
    let select = "{ select! { r = stmt.run() => r, }; n }";
    assert_eq!(unseen(select, read_only), 1);
    assert_eq!(
        unseen("{ let r = select! { r = stmt.run() => r, }; r }", read_only),
        1
    );
    assert_eq!(
        unseen(
            "{ async { select! { r = stmt.run() => r, } }.await }",
            read_only
        ),
        1
    );
    assert_eq!(unseen("{ info!(\"{}\", rows.first()); n }", read_only), 0);
    assert_eq!(unseen("{ join!(stmt.run(), other.run()) }", read_only), 0);
    assert_eq!(unseen(select, Mode::PerCall), 0);
    assert_eq!(unseen(select, Mode::WholeBody { read_only: false }), 0);
    // Nested foreign macros: told once, by the outermost.
    assert_eq!(unseen("{ outer! { inner! { stmt.run() } } }", read_only), 1);
    // In expression position, told as a statement before the one it is in: the macro's
    // value stays where it was (`pin!`'s temporary lives as long as the `let`).
    let (_, body) = found_in("{ let f = pin!(stmt.run()); f.await }", read_only, &[]);
    assert!(body.contains("let f = pin !"), "{body}");
    assert_eq!(body.matches("Access :: Unseen").count(), 1, "{body}");
    let told = body.find("Access :: Unseen").unwrap_or(usize::MAX);
    assert!(told < body.find("let f").unwrap_or(0), "{body}");
}

/// In a `read_only` body, D1's function called by its path is judged by its output too,
/// for an argument that reached it through `Deref`; a user's `first()` without D1's
/// argument is not (its result type may be inferred later).
#[test]
fn a_read_only_body_judges_path_calls_and_d1_shaped_calls_by_their_output() {
    let read_only = Mode::WholeBody { read_only: true };
    let judged = |body: &str| {
        let (_, body) = found_in(body, read_only, &[]);
        body.matches("unseen_output (").count()
    };
    assert_eq!(judged("{ D1PreparedStatement::run(&held).await }"), 1);
    assert_eq!(judged("{ held.run().await }"), 1);
    assert_eq!(judged("{ held.first(None).await }"), 1);
    assert_eq!(judged("{ let v = cache.first(); v }"), 0);
    // `into_future()` runs the statement when awaited, as its `.await` does; a database's
    // `dump()` holds no statement.
    assert_eq!(judged("{ held.clone().into_future().await }"), 1);
    assert_eq!(judged("{ held.into_future(x) }"), 0);
    assert_eq!(judged("{ db.dump().await }"), 0);
}

/// Why an execution is left as written, which the doc paragraph tells: made on a value that
/// is no variable or field and not awaited there, returned or made in a `move` closure
/// (it may outlive the schedule), or one type with another site's future.
#[test]
fn why_an_execution_is_left_as_written() {
    let left = |body: &str| {
        let mut block: Block = syn::parse_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let found = rewrite(&mut block, Mode::PerCall, &names(), &[], &[]);
        found
            .executions
            .iter()
            .map(|execution| execution.left)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        left("{ let pending = db.prepare(SQL).run(); pending.await?; stmt.run().await }"),
        [Left::NotAPlace, Left::No]
    );
    assert_eq!(left("{ return stmt.run(); }"), [Left::Outlives]);
    assert_eq!(
        left("{ let later = move || stmt.all(); later().await }"),
        [Left::Outlives]
    );
    assert_eq!(
        left("{ let pending = if c { a.all() } else { b.all() }; pending.await }"),
        // The name's `.await` is listed too, as a statement's would be.
        [Left::Meets, Left::Meets, Left::No]
    );
}
