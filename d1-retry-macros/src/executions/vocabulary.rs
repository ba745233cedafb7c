//! The names the attribute knows without types: D1's executions, and the macros whose
//! arguments it walks as expressions or knows to bind nothing.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprMethodCall, Macro, Token};

/// The executions of a statement (not of a database), which hold their SQL.
pub(super) const STATEMENT_EXECUTIONS: [&str; 5] = ["first", "all", "run", "raw", "raw_js_value"];

/// Method names that run SQL on a D1 statement, session or database.
pub(super) const EXECUTIONS: [&str; 8] = [
    "first",
    "all",
    "run",
    "raw",
    "raw_js_value",
    "batch",
    "exec",
    "dump",
];

/// Macros whose arguments are expressions evaluated once, where executions are found as
/// anywhere else. `assert!` and `dbg!` are not among them: they print their argument's
/// tokens, which would show the rewrite.
pub(super) const EXPRESSION_MACROS: [&str; 11] = [
    "vec",
    "format",
    "format_args",
    "print",
    "println",
    "eprint",
    "eprintln",
    "write",
    "writeln",
    "join",
    "try_join",
];

/// Macros that, called as a statement, bind no name of the caller's but those in their tokens
/// (which [`Bindings`](super::bindings::Bindings) counts): std's printing, assertion and panicking
/// macros, `tracing`'s and `log`'s events, workers-rs's `console_*!`, anyhow's and eyre's `ensure!`
/// and `bail!`, and the [`EXPRESSION_MACROS`]. A `macro_rules!` macro can only bind a name it is
/// handed, but a procedural one may expand to a `let` of any name with the caller's hygiene: in a
/// body that calls any other macro as a statement, no statement variable is followed.
pub(super) const STATEMENT_MACROS: [&str; 24] = [
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "panic",
    "todo",
    "unimplemented",
    "unreachable",
    "dbg",
    "trace",
    "debug",
    "info",
    "warn",
    "error",
    "event",
    "log",
    "console_log",
    "console_debug",
    "console_warn",
    "console_error",
    "ensure",
    "bail",
];

/// Whether a macro called as a statement binds no name of the caller's but those in its
/// tokens: one of the [`STATEMENT_MACROS`] or the [`EXPRESSION_MACROS`].
pub(super) fn binds_nothing(mac: &Macro) -> bool {
    macro_name(mac).is_some_and(|name| {
        STATEMENT_MACROS.contains(&name.as_str()) || EXPRESSION_MACROS.contains(&name.as_str())
    })
}

/// Whether a macro awaits nothing but what its tokens show: one that binds nothing
/// ([`binds_nothing`]: std's printing, assertion and panicking macros, logging events, the
/// [`EXPRESSION_MACROS`]) or `matches!`, but not `join!` or `try_join!`, which await the
/// futures they are handed in code of their own. A `read_only` body is one D1 call only
/// beside such macros (`one_call.rs`), as it counts the `.await`s in their tokens.
pub(crate) fn awaits_only_in_its_tokens(mac: &Macro) -> bool {
    match macro_name(mac).as_deref() {
        Some("join" | "try_join") => false,
        Some("matches") => true,
        _ => binds_nothing(mac),
    }
}

/// The arguments of a macro call read as expressions: a comma-separated list, or
/// `vec!`'s `element; count`, or `matches!`'s expression before its pattern.
pub(super) enum MacroArguments {
    List(Punctuated<Expr, Token![,]>),
    Repeat(Box<Expr>, Token![;], Box<Expr>),
    /// `matches!(expression, pattern)`: the expression, evaluated once, then the comma and
    /// the pattern (with its guard, if any) as written, which is no expression.
    Scrutinee(Box<Expr>, Token![,], TokenStream),
}

impl MacroArguments {
    /// The arguments of a call of one of the [`EXPRESSION_MACROS`], or of `matches!`
    /// ([`is_expression_macro`]), when they parse.
    pub(super) fn of_expression_macro(mac: &Macro) -> Option<Self> {
        if !is_expression_macro(mac) {
            return None;
        }
        Self::of_macro(mac)
    }

    /// The arguments of a call of any macro, when they parse as those of an expression
    /// macro: `matches!`'s as its expression and pattern, any other's as a list or a
    /// repeat.
    pub(super) fn of_macro(mac: &Macro) -> Option<Self> {
        if macro_name(mac).as_deref() == Some("matches") {
            return Self::scrutinee(mac.tokens.clone());
        }
        Self::parse(mac.tokens.clone())
    }

    fn scrutinee(tokens: TokenStream) -> Option<Self> {
        let scrutinee = |input: syn::parse::ParseStream<'_>| {
            Ok(MacroArguments::Scrutinee(
                input.parse()?,
                input.parse()?,
                input.parse()?,
            ))
        };
        scrutinee.parse2(tokens).ok()
    }

    pub(super) fn parse(tokens: TokenStream) -> Option<Self> {
        if let Ok(args) = Punctuated::<Expr, Token![,]>::parse_terminated.parse2(tokens.clone()) {
            return Some(MacroArguments::List(args));
        }
        let repeat = |input: syn::parse::ParseStream<'_>| {
            Ok(MacroArguments::Repeat(
                input.parse()?,
                input.parse()?,
                input.parse()?,
            ))
        };
        repeat.parse2(tokens).ok()
    }
}

/// Whether the macro is one of the [`EXPRESSION_MACROS`], whose arguments are walked and
/// rewritten as any other expression, or `matches!`, whose expression is, when its pattern
/// and guard, which are not, make no D1 call ([`may_make_d1_call`]). `matches!` prints no
/// tokens, unlike `assert!`, which would show the rewrite.
pub(super) fn is_expression_macro(mac: &Macro) -> bool {
    match macro_name(mac).as_deref() {
        Some("matches") => matches!(
            MacroArguments::scrutinee(mac.tokens.clone()),
            Some(MacroArguments::Scrutinee(_, _, pattern)) if !may_make_d1_call(pattern.clone())
        ),
        Some(name) => EXPRESSION_MACROS.contains(&name),
        None => false,
    }
}

/// The macro's name, the last segment of its path (`join` for `tokio::join!`).
pub(super) fn macro_name(mac: &Macro) -> Option<String> {
    mac.path.segments.last().map(|last| last.ident.to_string())
}

/// Whether a macro's tokens, which the walk does not read as expressions, may make a D1
/// call: a method call named like one of D1's with D1's arguments (`.run()`, `.all()`,
/// `.raw()`, `.raw::<T>()`, `.raw_js_value()` and `.into_future()` with none; `.first(..)`,
/// `.batch(..)` and `.exec(..)` with some), or such a function called by its path with
/// arguments (`D1PreparedStatement::run(&stmt)`), at any depth. `Iterator::all(|..| ..)` and
/// `slice::first()` do not count: D1's `all` takes no argument, its `first` one.
pub(super) fn may_make_d1_call(tokens: TokenStream) -> bool {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    trees.iter().enumerate().any(|(index, tree)| match tree {
        TokenTree::Group(group) => may_make_d1_call(group.stream()),
        TokenTree::Ident(ident) => {
            let takes_arguments = match ident.to_string().as_str() {
                "run" | "all" | "raw" | "raw_js_value" | "into_future" => false,
                "first" | "batch" | "exec" => true,
                _ => return false,
            };
            let after = |c: char| {
                index > 0 && matches!(&trees[index - 1], TokenTree::Punct(p) if p.as_char() == c)
            };
            let (method, path) = (after('.'), after(':'));
            if !method && !path {
                return false;
            }
            let Some(TokenTree::Group(arguments)) = trees.get(past_turbofish(&trees, index + 1))
            else {
                return false;
            };
            let some = !arguments.stream().is_empty();
            arguments.delimiter() == Delimiter::Parenthesis
                && if path { some } else { some == takes_arguments }
        }
        _ => false,
    })
}

/// The index after a turbofish starting at `index` (`::<T>`), or `index` if there is none.
fn past_turbofish(trees: &[TokenTree], index: usize) -> usize {
    let punct =
        |at: usize, c: char| matches!(trees.get(at), Some(TokenTree::Punct(p)) if p.as_char() == c);
    if !(punct(index, ':') && punct(index + 1, ':') && punct(index + 2, '<')) {
        return index;
    }
    let mut depth = 0_usize;
    for (at, tree) in trees.iter().enumerate().skip(index + 2) {
        if let TokenTree::Punct(p) = tree {
            match p.as_char() {
                '<' => depth += 1,
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        return at + 1;
                    }
                }
                _ => {}
            }
        }
    }
    trees.len()
}

pub(super) fn is_execution(call: &ExprMethodCall) -> bool {
    let method = call.method.to_string();
    if !EXECUTIONS.contains(&method.as_str()) {
        return false;
    }
    match method.as_str() {
        "batch" | "exec" => call.args.len() == 1,
        "first" => call.args.len() <= 1,
        _ => call.args.is_empty(),
    }
}

/// The execution a path to a function names, if its last segment is one of a statement's
/// [`STATEMENT_EXECUTIONS`], `batch` or `into_future` and it names a type's function, not a
/// local one (`D1PreparedStatement::run`, `<D1PreparedStatement>::first`,
/// `D1Database::batch`, `IntoFuture::into_future`, not `run`): what a `read_only` body observes when the function is called, or handed on.
pub(super) fn execution_path(expr: &Expr) -> Option<String> {
    let Expr::Path(path) = expr else {
        return None;
    };
    if path.qself.is_none() && path.path.segments.len() < 2 {
        return None;
    }
    let method = path.path.segments.last()?.ident.to_string();
    (STATEMENT_EXECUTIONS.contains(&method.as_str())
        || method == "batch"
        || method == "into_future")
        .then_some(method)
}
