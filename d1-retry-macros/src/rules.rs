//! The retry table's compile-time half: which functions are refused, and the `Plan`
//! the runtime half decides with.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::attr::Options;
use crate::sites::{Site, Sql};

/// What the expansion needs from the sites.
pub(crate) struct Verdict {
    /// `Plan::many_sites`.
    pub(crate) many_sites: bool,
    /// `Plan::static_write`: a `bool` expression, with `const` blocks for constant SQL.
    pub(crate) static_write: TokenStream,
    /// `const { .. }` assertions that constant SQL reads, where the rules require it.
    pub(crate) const_checks: Vec<TokenStream>,
}

pub(crate) fn decide(
    sites: &[Site],
    options: &Options,
    sig: &syn::Signature,
    krate: &TokenStream,
) -> syn::Result<Verdict> {
    let function = &sig.ident;
    let read_only = options.read_only();
    let idempotent = options.idempotent();
    let name = function.to_string();
    if sites.is_empty() && !read_only && !idempotent {
        return Err(syn::Error::new(function.span(), no_site(&name)));
    }
    let many_sites = sites.len() > 1 || sites.iter().any(|site| site.repeated);
    let all_sql = || sites.iter().flat_map(|site| site.sql.iter());

    if read_only {
        if let Some(span) = all_sql().find_map(literal_write) {
            return Err(syn::Error::new(span, READ_ONLY_WRITE));
        }
    } else if !idempotent && many_sites {
        for site in sites {
            for sql in &site.sql {
                let message = match sql {
                    Sql::Literal {
                        read_only: false, ..
                    } if sites.len() == 1 => repeated_write(&name),
                    Sql::Literal {
                        read_only: false, ..
                    } => several_writes(&name),
                    Sql::Unseen { .. } => unseen_among_several(&name),
                    _ => continue,
                };
                let span = match sql {
                    Sql::Literal { span, .. } | Sql::Unseen { span } => *span,
                    _ => continue,
                };
                return Err(syn::Error::new(span, message));
            }
        }
    }

    let constants: Vec<&syn::Expr> = all_sql()
        .filter_map(|sql| match sql {
            Sql::Const(expr) => Some(expr),
            _ => None,
        })
        .collect();
    let judge = |expr: &syn::Expr| {
        let krate = crate::expand::respan(krate, expr.span());
        quote_spanned! {expr.span()=> #krate::__private::is_read_only(#expr)}
    };
    let required = if read_only {
        Some(CONST_READ_ONLY_WRITE)
    } else if !idempotent && many_sites {
        Some(CONST_SEVERAL_WRITES)
    } else {
        None
    };
    let const_checks = match required {
        Some(message) => constants
            .iter()
            .map(|expr| assert_reads(expr, &judge(expr), message, sig))
            .collect(),
        None => Vec::new(),
    };

    let static_write = if idempotent || read_only {
        // `idempotent` decides alone; under `read_only` literal writes were refused and
        // constants asserted, and SQL out of sight is what the user vouched for.
        quote!(false)
    } else if all_sql().any(|sql| literal_write(sql).is_some() || matches!(sql, Sql::Unseen { .. }))
    {
        quote!(true)
    } else if constants.is_empty() {
        quote!(false)
    } else {
        let writes = constants.iter().map(|expr| {
            let judged = judge(expr);
            quote_spanned! {expr.span()=> !const { #judged }}
        });
        quote!(#(#writes)||*)
    };

    Ok(Verdict {
        many_sites,
        static_write,
        const_checks,
    })
}

fn literal_write(sql: &Sql) -> Option<Span> {
    match sql {
        Sql::Literal {
            read_only: false,
            span,
        } => Some(*span),
        _ => None,
    }
}

/// A compile-time assertion that constant SQL reads.
///
/// Where the constant can be named outside the function, the assertion is a `const _`
/// item, which the compiler evaluates even under `cargo check` and even if the function is
/// never called. `Self::SQL` or a generic parameter's constant can only be named inside
/// the body: there an inline `const` block is evaluated when the function is compiled.
fn assert_reads(
    expr: &syn::Expr,
    judged: &TokenStream,
    message: &str,
    sig: &syn::Signature,
) -> TokenStream {
    if nameable_outside(expr, sig) {
        quote_spanned! {expr.span()=>
            const _: () = {
                if !#judged {
                    ::core::panic!(#message);
                }
            };
        }
    } else {
        quote_spanned! {expr.span()=>
            const {
                if !#judged {
                    ::core::panic!(#message);
                }
            };
        }
    }
}

/// Whether `expr` means the same in an item nested in the body: no `Self`, no generic
/// parameter of the function, no qualified self type.
pub(crate) fn nameable_outside(expr: &syn::Expr, sig: &syn::Signature) -> bool {
    match expr {
        syn::Expr::Path(path) => {
            path.qself.is_none()
                && path.path.segments.first().is_none_or(|first| {
                    first.ident != "Self"
                        && !sig.generics.params.iter().any(|param| match param {
                            syn::GenericParam::Type(ty) => ty.ident == first.ident,
                            syn::GenericParam::Const(c) => c.ident == first.ident,
                            syn::GenericParam::Lifetime(_) => false,
                        })
                })
        }
        syn::Expr::Macro(_) => true,
        _ => false,
    }
}

fn no_site(name: &str) -> String {
    format!(
        "#[d1_retry] found no D1 statement in `{name}`, so it cannot tell whether a retry is \
         safe; it looks for calls to `prepare`, `exec`, `query`, `query_as`, `query_scalar` \
         and `batch` in the body (not in other functions it calls). If `{name}` only reads, \
         write #[d1_retry(read_only)]; if running it twice is safe, write \
         #[d1_retry(idempotent)]"
    )
}

const READ_ONLY_WRITE: &str = "this SQL may write, but the function is marked \
     #[d1_retry(read_only)], and retrying after D1 may have run it would run the write twice; \
     remove `read_only` (a function whose only statement writes is then retried only when D1 \
     was not reached), or, if running the write twice is safe (an upsert, INSERT OR IGNORE), \
     write #[d1_retry(idempotent)] instead";

fn several_writes(name: &str) -> String {
    format!(
        "`{name}` runs several D1 statements and this one may write: if a later statement \
         fails, retrying `{name}` would run this write a second time; split the function so \
         that each write is retried alone, run the statements together in one `batch(...)` \
         (a batch is atomic), or, if running the whole body twice is safe, write \
         #[d1_retry(idempotent)]"
    )
}

fn repeated_write(name: &str) -> String {
    format!(
        "this statement may write and sits in a loop or a closure, so `{name}` may run it \
         several times: if a later run fails, retrying `{name}` would repeat the writes that \
         succeeded; run the statements together in one `batch(...)` (a batch is atomic), or, \
         if running the whole body twice is safe, write #[d1_retry(idempotent)]"
    )
}

fn unseen_among_several(name: &str) -> String {
    format!(
        "#[d1_retry] cannot see the SQL run here (statements prepared outside this \
         `batch(...)` call, or a statement inside a macro), so it counts as a write, and \
         `{name}` runs several D1 statements: a retry could run it a second time; prepare the \
         statements inside the `batch(...)` call, split the function, or, if running the \
         whole body twice is safe, write #[d1_retry(idempotent)]"
    )
}

const CONST_READ_ONLY_WRITE: &str = "#[d1_retry(read_only)]: this SQL constant may write; \
     remove `read_only`, or, if running the write twice is safe, write \
     #[d1_retry(idempotent)] instead";

const CONST_SEVERAL_WRITES: &str = "#[d1_retry]: this SQL constant may write and the \
     function runs several D1 statements, so a retry could run the write a second time; split \
     the function, run the statements in one `batch(...)`, or write #[d1_retry(idempotent)]";
