//! Pieces of generated code that several rewrites share.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote_spanned;
use syn::Expr;
use syn::spanned::Spanned;

use crate::executions::syntax::scrutinee;
use crate::sql::Handed;

/// `body`, once the receivers of its `prepare` calls are probed
/// ([`Statements::checks`](super::finder::Statements::checks)): before the statement is evaluated,
/// while each place still holds what it will be prepared on (a `prepare` of the user's own may
/// consume its receiver). Spanned at the execution (`span`), the expression whose type diagnostics
/// name.
pub(super) fn with_checks(
    body: TokenStream,
    checks: &[(Ident, TokenStream)],
    span: Span,
) -> TokenStream {
    if checks.is_empty() {
        return body;
    }
    let locals = checks.iter().map(|(local, _)| local);
    let probes = checks.iter().map(|(_, probe)| probe);
    quote_spanned! {span=>
        match (#(#probes,)*) {
            (#(#locals,)*) => #body
        }
    }
}

/// The `Access` of the statements a `batch`'s list holds, read when it runs
/// (`batch_sql.rs`): the probe's traits imported in a block of their own, so that no other
/// call of the body is checked against them.
pub(super) fn held_batch_access(
    private: &TokenStream,
    list: &TokenStream,
    span: Span,
) -> TokenStream {
    quote_spanned! {span=>
        {
            #[allow(unused_imports)]
            use #private::{ViaD1Statements as _, ViaOtherStatements as _};
            (&&#private::HeldBatch(&#list)).d1_retry_batch_access()
        }
    }
}

/// The `Access` of constant SQL handed to `handed`, judged by the compiler where this
/// expression stands (spanned at the constant, so its errors point there).
pub(super) fn const_access(private: &TokenStream, expr: &Expr, handed: Handed) -> TokenStream {
    let scanner = handed.scanner(expr.span());
    quote_spanned! {expr.span()=>
        #private::Access::judged(const { #private::#scanner(#expr) })
    }
}

/// `sql`, evaluated once, handed on unchanged after `record` saw its text (or `None` when
/// it is not text), followed by the arguments `more` holds (`, operation`).
pub(super) fn scanned(
    private: &TokenStream,
    sql: &Expr,
    record: &TokenStream,
    more: Option<TokenStream>,
    span: Span,
) -> TokenStream {
    let value = Ident::new("__d1_retry_sql_value", Span::mixed_site());
    let sql = scrutinee(sql);
    quote_spanned! {span=>
        match #sql {
            #value => {
                #[allow(unused_imports)]
                use #private::{ViaSqlOther as _, ViaSqlText as _};
                #record((&&#private::SqlProbe(&#value)).d1_retry_text() #more);
                #value
            }
        }
    }
}

/// The runtime's name of an execution's method, for the check that the receiver's type
/// has it as its own: a unit struct of `calls`, whose `D1Call::CALL` is its bit.
pub(super) fn own_call(private: &TokenStream, method: &str, span: Span) -> TokenStream {
    let name = match method {
        "first" => "First",
        "all" => "All",
        "run" => "Run",
        "raw" => "Raw",
        "raw_js_value" => "RawJsValue",
        "batch" => "Batch",
        "exec" => "Exec",
        "dump" => "Dump",
        _ => "Await",
    };
    let name = Ident::new(name, span);
    quote_spanned!(span=> #private::calls::#name)
}
