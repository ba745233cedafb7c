//! Statement sites: where the body hands SQL to D1 (or sqlx), and what the macro can
//! tell about that SQL before the program runs.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, ExprCall, ExprLit, ExprMethodCall, Ident, Lit, Macro, Token, UnOp};

/// Methods (and, sqlx-style, functions and macros) whose first argument is SQL.
const STATEMENTS: [&str; 5] = ["prepare", "exec", "query", "query_as", "query_scalar"];
/// A method whose statements run together, atomically: one site.
const BATCH: &str = "batch";

/// What is known about one statement's SQL.
pub(crate) enum Sql {
    /// Read at expansion time: a literal, a raw string, `concat!` of literals.
    Literal { read_only: bool, span: Span },
    /// A constant expression (a path to a `const &str`, a `concat!` with macros in it),
    /// judged by the compiler through the `const fn` scanner.
    Const(Expr),
    /// Computed at run time: scanned by the attempt as it is passed in.
    Dynamic,
    /// Out of sight (a `batch` of statements prepared elsewhere, a statement macro
    /// without literal SQL, a call inside a macro the expansion cannot read).
    Unseen { span: Span },
}

/// One place that runs SQL: a statement, or a whole `batch`.
pub(crate) struct Site {
    pub(crate) sql: Vec<Sql>,
    /// The call is inside a loop or a closure, so it may run several times per attempt.
    pub(crate) repeated: bool,
}

/// Finds the sites of `block` and, when `observe` is set, rewrites each dynamic SQL
/// argument `ARG` into `#observe.observe(ARG)`, so the attempt scans it as it runs.
pub(crate) fn find(block: &mut Block, observe: Option<&Ident>) -> Vec<Site> {
    let mut finder = Finder {
        observe,
        repeat_depth: 0,
        batch: None,
        sites: Vec::new(),
        rewrites: 0,
    };
    finder.visit_block_mut(block);
    finder.sites
}

struct Finder<'a> {
    observe: Option<&'a Ident>,
    repeat_depth: usize,
    /// The statements of the `batch(...)` call being read, if any.
    batch: Option<Vec<Sql>>,
    sites: Vec<Site>,
    rewrites: usize,
}

impl Finder<'_> {
    fn record(&mut self, sql: Sql) {
        match &mut self.batch {
            Some(statements) => statements.push(sql),
            None => self.sites.push(Site {
                sql: vec![sql],
                repeated: self.repeat_depth > 0,
            }),
        }
    }

    /// Reads the SQL argument of a statement call, rewriting it if it is dynamic.
    fn statement(&mut self, sql: &mut Expr) {
        let judged = judge(sql);
        if let (Sql::Dynamic, Some(observe)) = (&judged, self.observe) {
            let span = sql.span();
            let attempt = Ident::new(&observe.to_string(), observe.span().located_at(span));
            let method = Ident::new("observe", span);
            *sql = Expr::Verbatim(quote!(#attempt.#method(#sql)));
            self.rewrites += 1;
        }
        self.record(judged);
    }

    fn repeated(&mut self, visit: impl FnOnce(&mut Self)) {
        self.repeat_depth += 1;
        visit(self);
        self.repeat_depth -= 1;
    }

    fn batch(&mut self, call: &mut ExprMethodCall) {
        self.visit_expr_mut(&mut call.receiver);
        let outer = self.batch.replace(Vec::new());
        // Inside a batch, loops and closures only build the list of statements.
        let depth = core::mem::take(&mut self.repeat_depth);
        for arg in &mut call.args {
            self.visit_expr_mut(arg);
        }
        self.repeat_depth = depth;
        let mut statements = core::mem::replace(&mut self.batch, outer).unwrap_or_default();
        if statements.is_empty() {
            statements.push(Sql::Unseen {
                span: call.method.span(),
            });
        }
        match &mut self.batch {
            Some(enclosing) => enclosing.extend(statements),
            None => self.sites.push(Site {
                sql: statements,
                repeated: self.repeat_depth > 0,
            }),
        }
    }

    fn statement_macro(&mut self, mac: &Macro) {
        let Ok(args) = Punctuated::<Expr, Token![,]>::parse_terminated.parse2(mac.tokens.clone())
        else {
            self.record(Sql::Unseen {
                span: mac.path.span(),
            });
            return;
        };
        let literal = args
            .iter()
            .map(judge)
            .find(|sql| matches!(sql, Sql::Literal { .. } | Sql::Const(_)));
        self.record(literal.unwrap_or(Sql::Unseen {
            span: mac.path.span(),
        }));
    }

    /// Reads inside macros whose input is plain expressions (`vec!`, `format!`, `dbg!`...);
    /// for any other macro, a statement-like call in its tokens is counted as unseen SQL.
    fn other_macro(&mut self, mac: &mut Macro) {
        let parsed = Punctuated::<Expr, Token![,]>::parse_terminated.parse2(mac.tokens.clone());
        if let Ok(mut args) = parsed {
            let before = self.rewrites;
            for arg in &mut args {
                self.visit_expr_mut(arg);
            }
            if self.rewrites != before {
                mac.tokens = args.into_token_stream();
            }
            return;
        }
        let repeat = (|input: syn::parse::ParseStream<'_>| {
            let element: Expr = input.parse()?;
            let semi: Token![;] = input.parse()?;
            let count: Expr = input.parse()?;
            Ok((element, semi, count))
        })
        .parse2(mac.tokens.clone());
        if let Ok((mut element, semi, count)) = repeat {
            let before = self.rewrites;
            self.repeated(|finder| finder.visit_expr_mut(&mut element));
            if self.rewrites != before {
                mac.tokens = quote!(#element #semi #count);
            }
            return;
        }
        for span in statement_like_calls(mac.tokens.clone()) {
            self.record(Sql::Unseen { span });
        }
    }
}

impl VisitMut for Finder<'_> {
    fn visit_expr_method_call_mut(&mut self, call: &mut ExprMethodCall) {
        let method = call.method.to_string();
        if method == BATCH && !call.args.is_empty() {
            self.batch(call);
            return;
        }
        visit_mut::visit_expr_method_call_mut(self, call);
        if STATEMENTS.contains(&method.as_str())
            && let Some(sql) = call.args.first_mut()
        {
            self.statement(sql);
        }
    }

    fn visit_expr_call_mut(&mut self, call: &mut ExprCall) {
        visit_mut::visit_expr_call_mut(self, call);
        let Expr::Path(func) = &*call.func else {
            return;
        };
        let is_statement = func
            .path
            .segments
            .last()
            .is_some_and(|last| STATEMENTS.contains(&last.ident.to_string().as_str()));
        if is_statement && let Some(sql) = call.args.first_mut() {
            self.statement(sql);
        }
    }

    fn visit_expr_for_loop_mut(&mut self, node: &mut syn::ExprForLoop) {
        // The iterator expression runs once; the body runs many times.
        self.visit_expr_mut(&mut node.expr);
        self.repeated(|finder| finder.visit_block_mut(&mut node.body));
    }

    fn visit_expr_while_mut(&mut self, node: &mut syn::ExprWhile) {
        self.repeated(|finder| visit_mut::visit_expr_while_mut(finder, node));
    }

    fn visit_expr_loop_mut(&mut self, node: &mut syn::ExprLoop) {
        self.repeated(|finder| visit_mut::visit_expr_loop_mut(finder, node));
    }

    fn visit_expr_closure_mut(&mut self, node: &mut syn::ExprClosure) {
        self.repeated(|finder| visit_mut::visit_expr_closure_mut(finder, node));
    }

    fn visit_macro_mut(&mut self, mac: &mut Macro) {
        let Some(name) = mac.path.segments.last().map(|last| last.ident.to_string()) else {
            return;
        };
        if name == "concat" {
            return;
        }
        if STATEMENTS.contains(&name.as_str()) {
            self.statement_macro(mac);
            return;
        }
        self.other_macro(mac);
    }

    // Nested items (fns, impls, consts) are not run by this body.
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// What can be told about `sql` without running it.
fn judge(sql: &Expr) -> Sql {
    match sql {
        Expr::Group(group) => judge(&group.expr),
        Expr::Paren(paren) => judge(&paren.expr),
        Expr::Reference(reference) => match judge(&reference.expr) {
            Sql::Dynamic => Sql::Dynamic,
            // `&CONST` judged as `CONST`.
            Sql::Const(_) => Sql::Const((*reference.expr).clone()),
            other => other,
        },
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => Sql::Literal {
            read_only: d1_retry_runtime::is_read_only(&text.value()),
            span: text.span(),
        },
        Expr::Macro(mac) if mac.mac.path.is_ident("concat") => {
            match concat_literals(&mac.mac.tokens) {
                Some(text) => Sql::Literal {
                    read_only: d1_retry_runtime::is_read_only(&text),
                    span: mac.span(),
                },
                None => Sql::Const(sql.clone()),
            }
        }
        Expr::Path(path) if path.qself.is_some() || looks_constant(&path.path) => {
            Sql::Const(sql.clone())
        }
        _ => Sql::Dynamic,
    }
}

/// `SQL`, `queries::FIND`, `Self::FIND`: a constant by Rust's naming, or a path that
/// cannot name a local variable. A lone lowercase name is a variable: dynamic.
fn looks_constant(path: &syn::Path) -> bool {
    if path.segments.len() > 1 || path.leading_colon.is_some() {
        return true;
    }
    path.segments.last().is_some_and(|last| {
        let name = last.ident.to_string();
        name.chars().any(|c| c.is_ascii_uppercase())
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

/// The text of `concat!(..)` when every argument is a literal.
fn concat_literals(tokens: &TokenStream) -> Option<String> {
    let args = Punctuated::<Expr, Token![,]>::parse_terminated
        .parse2(tokens.clone())
        .ok()?;
    let mut text = String::new();
    for arg in &args {
        let (negative, lit) = match arg {
            Expr::Lit(lit) => (false, &lit.lit),
            Expr::Unary(unary) if matches!(unary.op, UnOp::Neg(_)) => match &*unary.expr {
                Expr::Lit(lit) => (true, &lit.lit),
                _ => return None,
            },
            _ => return None,
        };
        if negative {
            text.push('-');
        }
        match lit {
            Lit::Str(s) => text.push_str(&s.value()),
            Lit::Int(i) => text.push_str(i.base10_digits()),
            Lit::Float(f) => text.push_str(f.base10_digits()),
            Lit::Bool(b) => text.push_str(if b.value { "true" } else { "false" }),
            Lit::Char(c) => text.push(c.value()),
            _ => return None,
        }
    }
    Some(text)
}

/// `prepare(`, `.exec(`, `batch(`... inside tokens that are not expressions.
fn statement_like_calls(tokens: TokenStream) -> Vec<Span> {
    let mut found = Vec::new();
    let mut previous: Option<Ident> = None;
    for tree in tokens {
        match tree {
            TokenTree::Group(group) => {
                if group.delimiter() == Delimiter::Parenthesis
                    && let Some(ident) = previous.take()
                {
                    let name = ident.to_string();
                    if STATEMENTS.contains(&name.as_str()) || name == BATCH {
                        found.push(ident.span());
                    }
                }
                found.extend(statement_like_calls(group.stream()));
                previous = None;
            }
            TokenTree::Ident(ident) => previous = Some(ident),
            _ => previous = None,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `find` reports for `body`: one line per site, and the rewritten body.
    fn sites_of(body: &str) -> (Vec<String>, String) {
        let mut block: Block = syn::parse_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let attempt = Ident::new("attempt", Span::call_site());
        let found = find(&mut block, Some(&attempt));
        let described = found
            .iter()
            .map(|site| {
                let sql: Vec<&str> = site
                    .sql
                    .iter()
                    .map(|sql| match sql {
                        Sql::Literal {
                            read_only: true, ..
                        } => "read",
                        Sql::Literal {
                            read_only: false, ..
                        } => "write",
                        Sql::Const(_) => "const",
                        Sql::Dynamic => "dynamic",
                        Sql::Unseen { .. } => "unseen",
                    })
                    .collect();
                let repeated = if site.repeated { " repeated" } else { "" };
                format!("{}{repeated}", sql.join("+"))
            })
            .collect();
        (described, block.into_token_stream().to_string())
    }

    fn sites(body: &str) -> Vec<String> {
        sites_of(body).0
    }

    #[test]
    fn statement_calls_and_their_sql() {
        assert_eq!(
            sites(
                r#"{
                db.prepare("SELECT 1").first().await?;
                db.exec(r"DELETE FROM t").await?;
                sqlx::query("SELECT 2").fetch_one(&pool).await?;
                sqlx::query_as::<_, User>("UPDATE t SET a = 1").execute(&pool).await?;
                db.prepare(concat!("SELECT ", 1, " FROM t")).run().await?;
                db.prepare(concat!("SELECT ", env!("X"))).run().await?;
                db.prepare(SQL).run().await?;
                db.prepare(queries::FIND).run().await?;
                db.prepare(&Self::FIND).run().await?;
                db.prepare(sql).run().await?;
                db.prepare(format!("SELECT {}", 1)).run().await
            }"#
            ),
            [
                "read", "write", "read", "write", "read", "const", "const", "const", "const",
                "dynamic", "dynamic"
            ]
        );
    }

    #[test]
    fn calls_without_sql_are_not_statements() {
        assert!(sites("{ url.query(); self.prepare; prepare(); }").is_empty());
    }

    #[test]
    fn dynamic_sql_is_observed_where_it_is_passed() {
        let (_, body) = sites_of("{ db.prepare(&sql).run().await }");
        assert!(body.contains("attempt . observe (& sql)"), "{body}");
        let (_, body) = sites_of(r#"{ db.prepare("SELECT 1").run().await }"#);
        assert!(!body.contains("observe"), "{body}");
    }

    #[test]
    fn nothing_is_observed_when_the_result_does_not_matter() {
        let mut block: Block =
            syn::parse_str("{ db.prepare(sql) }").unwrap_or_else(|e| panic!("{e}"));
        let found = find(&mut block, None);
        assert_eq!(found.len(), 1);
        assert!(!block.into_token_stream().to_string().contains("observe"));
    }

    #[test]
    fn loops_and_closures_repeat_their_statements() {
        assert_eq!(
            sites(
                r#"{
                for id in db.prepare("SELECT id FROM t").all().await? {
                    db.prepare("DELETE FROM t WHERE id = ?1");
                }
                while db.prepare("SELECT 1").first().await?.is_some() {}
                loop { db.exec("SELECT 2"); }
                ids.iter().map(|id| db.prepare("SELECT 3"));
                async { db.prepare("SELECT 4") };
            }"#
            ),
            [
                "read",
                "write repeated",
                "read repeated",
                "read repeated",
                "read repeated",
                "read"
            ]
        );
    }

    #[test]
    fn a_batch_is_one_site() {
        assert_eq!(
            sites(
                r#"{
                db.batch(vec![db.prepare("INSERT INTO a VALUES (1)"), db.prepare("SELECT 1")]).await?;
                db.batch(names.iter().map(|n| db.prepare("INSERT INTO b VALUES (?1)")).collect()).await?;
                db.batch(statements).await?;
                for _ in 0..2 { db.batch(vec![db.prepare(sql)]).await?; }
            }"#
            ),
            ["write+read", "write", "unseen", "dynamic repeated"]
        );
    }

    #[test]
    fn nested_items_are_skipped() {
        assert_eq!(
            sites(
                r#"{
                fn helper(db: &Db) { db.prepare("DELETE FROM t"); }
                impl Repo { fn other(&self) { self.db.exec("DELETE FROM t"); } }
                const X: () = ();
                db.prepare("SELECT 1")
            }"#
            ),
            ["read"]
        );
    }

    #[test]
    fn macros_are_read_when_they_hold_expressions() {
        let (found, body) = sites_of(
            r#"{
            dbg!(db.prepare(sql));
            let v = vec![db.prepare("SELECT 1"); 3];
            sqlx::query!("UPDATE t SET a = ?", a).execute(&pool).await?;
            sqlx::query_as!(User, "SELECT * FROM users").fetch_one(&pool).await?;
            sqlx::query!(dynamic_sql).execute(&pool).await?;
            tokio::select! { r = db.prepare("SELECT 2").run() => r, }
            tracing::info!(sql = %sql, "running");
        }"#,
        );
        assert_eq!(
            found,
            [
                "dynamic",
                "read repeated",
                "write",
                "read",
                "unseen",
                "unseen"
            ]
        );
        assert!(
            body.contains("dbg ! (db . prepare (attempt . observe (sql)))"),
            "{body}"
        );
    }

    #[test]
    fn repeated_vec_elements_are_observed() {
        let (found, body) = sites_of("{ db.batch(vec![db.prepare(sql); 2]).await }");
        assert_eq!(found, ["dynamic"]);
        assert!(body.contains("attempt . observe (sql)"), "{body}");
    }

    #[test]
    fn parentheses_and_invisible_groups_are_seen_through() {
        assert_eq!(sites(r#"{ db.prepare(("DELETE FROM t")) }"#), ["write"]);
        // `$sql:expr` passed on by a `macro_rules!` arrives in an invisible group.
        let sql = proc_macro2::Group::new(Delimiter::None, quote!("DELETE FROM t"));
        let mut block: Block =
            syn::parse2(quote!({ db.prepare(#sql) })).unwrap_or_else(|e| panic!("{e}"));
        let found = find(&mut block, None);
        assert!(matches!(
            found.first().and_then(|site| site.sql.first()),
            Some(Sql::Literal {
                read_only: false,
                ..
            })
        ));
    }

    #[test]
    fn constants_are_told_from_variables_by_their_names() {
        let path = |s: &str| syn::parse_str::<syn::Path>(s).unwrap_or_else(|e| panic!("{e}"));
        assert!(looks_constant(&path("SQL")));
        assert!(looks_constant(&path("FIND_BY_ID_2")));
        assert!(looks_constant(&path("queries::find")));
        assert!(looks_constant(&path("::app::SQL")));
        assert!(!looks_constant(&path("sql")));
        assert!(!looks_constant(&path("Sql")));
        assert!(!looks_constant(&path("s2")));
    }

    #[test]
    fn concat_of_literals_is_evaluated() {
        let tokens = |s: &str| s.parse::<TokenStream>().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            concat_literals(&tokens(r#""SELECT ", 1, " + ", -2.5, ' ', true"#)).as_deref(),
            Some("SELECT 1 + -2.5 true")
        );
        assert_eq!(concat_literals(&tokens(r#""a", env!("B")"#)), None);
        assert_eq!(concat_literals(&tokens(r#""a", !true"#)), None);
    }
}
