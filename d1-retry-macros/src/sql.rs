//! What can be told about a statement's SQL before the program runs.

use proc_macro2::{Ident, Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, Token, UnOp};

/// What is known about one statement's SQL.
#[derive(Clone)]
pub(crate) enum Sql {
    /// Read at expansion time: a literal, a raw string, `concat!` of literals.
    Literal {
        text: String,
        read_only: bool,
        span: Span,
    },
    /// A constant expression (a path to a `const &str`, a `concat!` with macros in it),
    /// judged by the compiler through the `const fn` scanner where it is handed to
    /// `prepare` or `exec`, so that a function-local `const` or a shadowing one is the one
    /// judged.
    Const(Expr, Handed),
    /// A constant expression judged where its statement was bound
    /// (`let stmt = db.prepare(SQL);`), into the local named here: a statement run in a
    /// block where `SQL` names another constant runs the SQL it was prepared with, so it
    /// must not be judged by the name where it runs.
    Bound(Expr, Ident),
    /// Computed at run time: scanned where it is handed to `prepare` or `exec`.
    Dynamic,
    /// Out of sight (a statement built by a helper, passed in, collected into a `Vec`,
    /// or prepared inside a macro): counted as a write.
    Unseen,
}

impl Sql {
    /// A literal that may write: where `read_only` is refused at compile time.
    pub(crate) fn literal_write(&self) -> Option<Span> {
        match self {
            Sql::Literal {
                read_only: false,
                span,
                ..
            } => Some(*span),
            _ => None,
        }
    }
}

/// Where SQL is handed, which decides how it is judged.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Handed {
    /// To `prepare`: D1 sends the statement to SQLite whole.
    Prepare,
    /// To `exec`: D1 runs each line as a query of its own.
    Exec,
}

impl Handed {
    fn read_only(self, text: &str) -> bool {
        match self {
            Handed::Prepare => d1_retry_runtime::is_read_only_prepared(text),
            Handed::Exec => d1_retry_runtime::is_read_only(text),
        }
    }

    /// The runtime's `const fn` scanner for SQL handed here, named at `span`.
    pub(crate) fn scanner(self, span: Span) -> Ident {
        let name = match self {
            Handed::Prepare => "is_read_only_prepared",
            Handed::Exec => "is_read_only",
        };
        Ident::new(name, span)
    }

    /// The method of the run-time record (`SqlSlot::scan*`, `Attempt::observe*`, or the
    /// function `record_sql*` where the record cannot be borrowed) that judges dynamic SQL
    /// handed here, named at `span`.
    pub(crate) fn recorder(self, base: &str, span: Span) -> Ident {
        let name = match self {
            Handed::Prepare => format!("{base}_prepared"),
            Handed::Exec => base.to_owned(),
        };
        Ident::new(&name, span)
    }
}

/// Judges the SQL argument `sql`, handed to `handed`.
pub(crate) fn judge(sql: &Expr, handed: Handed) -> Sql {
    match sql {
        Expr::Group(group) => judge(&group.expr, handed),
        Expr::Paren(paren) => judge(&paren.expr, handed),
        Expr::Reference(reference) => match judge(&reference.expr, handed) {
            // `&CONST` judged as `CONST`.
            Sql::Const(..) => Sql::Const((*reference.expr).clone(), handed),
            other => other,
        },
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => literal(text.value(), text.span(), handed),
        Expr::Macro(mac) if mac.mac.path.is_ident("concat") => {
            match concat_literals(&mac.mac.tokens) {
                Some(text) => literal(text, mac.span(), handed),
                None => Sql::Const(sql.clone(), handed),
            }
        }
        Expr::Path(path) if looks_constant(&path.path) => Sql::Const(sql.clone(), handed),
        _ => Sql::Dynamic,
    }
}

fn literal(text: String, span: Span, handed: Handed) -> Sql {
    Sql::Literal {
        read_only: handed.read_only(&text),
        text,
        span,
    }
}

/// `SQL`, `queries::FIND`, `Self::FIND`, `E::FIND`, `<T as Queries>::FIND`: a constant by
/// Rust's naming, its last name in upper case. Anything else is dynamic, scanned at run
/// time: a variable, and paths to other values `prepare` accepts (`Query::CountOrders`, a
/// variant with `Into<String>`), which a `const` block judging a `&str` would not compile.
pub(crate) fn looks_constant(path: &syn::Path) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(sql: &str) -> &'static str {
        let expr: Expr = syn::parse_str(sql).unwrap_or_else(|e| panic!("{e}: {sql}"));
        match judge(&expr, Handed::Prepare) {
            Sql::Literal {
                read_only: true, ..
            } => "read",
            Sql::Literal { .. } => "write",
            Sql::Const(..) => "const",
            Sql::Bound(..) => unreachable!("judged where a statement is bound, not by `judge`"),
            Sql::Dynamic => "dynamic",
            Sql::Unseen => "unseen",
        }
    }

    #[test]
    fn literals_constants_and_variables() {
        assert_eq!(kind(r#""SELECT 1""#), "read");
        assert_eq!(kind(r#"r"DELETE FROM t""#), "write");
        assert_eq!(kind(r#"("DELETE FROM t")"#), "write");
        assert_eq!(kind(r#"concat!("SELECT ", 1, " FROM t")"#), "read");
        assert_eq!(kind(r#"concat!("SELECT ", env!("X"))"#), "const");
        assert_eq!(kind("SQL"), "const");
        assert_eq!(kind("queries::FIND"), "const");
        assert_eq!(kind("&Self::FIND"), "const");
        assert_eq!(kind("<E as Entity>::FIND"), "const");
        assert_eq!(kind("sql"), "dynamic");
        assert_eq!(kind("&sql"), "dynamic");
        assert_eq!(kind(r#"format!("SELECT {}", 1)"#), "dynamic");
    }

    /// SQL over several lines is a read handed to `prepare` (sent to SQLite whole), and
    /// may write handed to `exec` (run line by line); a constant carries where it goes.
    #[test]
    fn sql_is_judged_by_where_it_is_handed() {
        let multi_line: Expr = syn::parse_str(r#""SELECT 1 /* a\nDELETE FROM t;\n*/""#).unwrap();
        for (handed, read_only) in [(Handed::Prepare, true), (Handed::Exec, false)] {
            match judge(&multi_line, handed) {
                Sql::Literal { read_only: r, .. } => assert_eq!(r, read_only, "{handed:?}"),
                _ => panic!("a literal"),
            }
        }
        // A user's `macro_rules!` hands its `$sql:expr` over in an invisible group.
        let grouped = Expr::Group(syn::ExprGroup {
            attrs: Vec::new(),
            group_token: syn::token::Group::default(),
            expr: Box::new(multi_line.clone()),
        });
        assert!(matches!(
            judge(&grouped, Handed::Exec),
            Sql::Literal {
                read_only: false,
                ..
            }
        ));
        let constant: Expr = syn::parse_str("&queries::FIND").unwrap();
        for handed in [Handed::Prepare, Handed::Exec] {
            assert!(matches!(judge(&constant, handed), Sql::Const(_, h) if h == handed));
        }
        let span = Span::call_site();
        assert_eq!(Handed::Prepare.scanner(span), "is_read_only_prepared");
        assert_eq!(Handed::Exec.scanner(span), "is_read_only");
        assert_eq!(Handed::Prepare.recorder("scan", span), "scan_prepared");
        assert_eq!(Handed::Exec.recorder("observe", span), "observe");
    }

    #[test]
    fn constants_are_told_from_variables_by_their_names() {
        let path = |s: &str| syn::parse_str::<syn::Path>(s).unwrap_or_else(|e| panic!("{e}"));
        assert!(looks_constant(&path("SQL")));
        assert!(looks_constant(&path("FIND_BY_ID_2")));
        assert!(looks_constant(&path("queries::FIND")));
        assert!(!looks_constant(&path("queries::find")));
        assert!(!looks_constant(&path("Query::CountOrders")));
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
