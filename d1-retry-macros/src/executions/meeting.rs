//! The names of futures that meet another site's where Rust needs them to have one type:
//! `let fa = a.run(); let fb = b.run(); join_all(vec![fa, fb])`. Without the attribute
//! both are D1's future of `run`, one type; the runtime's future of a retried call has a
//! type of its own per site, so a stored execution bound to such a name is left as written
//! (made once, not retried), as one written at the meeting place already is (the finder's
//! one-type positions). Found before the walk, since the meeting comes after the `let`.

use std::collections::HashSet;

use syn::visit::{self, Visit};
use syn::{Expr, Macro, Stmt};

use super::bindings::name;
use super::syntax::{STORING_METHODS, method_by_path, strip_parens};
use super::vocabulary::MacroArguments;

/// The names used where a value must have one type with another: an element of an array
/// or a `vec!`, an `if`'s or a `match`'s arm value, a method's argument (`futures.push(fa)`,
/// `tx.send(fa)`, and by its path, `Vec::push(&mut futures, fa)`: `method_by_path`), the
/// slot a storing method or `mem::replace` puts it in (`slot.replace(fb)`), and either
/// side of an assignment (`f = fb;`).
#[derive(Default)]
pub(super) struct Meeting {
    names: HashSet<String>,
    /// Each `let` of one name, with its initialiser: a name that meets passes that on to
    /// what it was made of (`let mut slot = Some(fa); slot = Some(fb);`).
    lets: Vec<(String, Expr)>,
}

impl Meeting {
    /// Whether a `let` of `ident` must leave a stored execution as written.
    pub(super) fn contains(&self, ident: &syn::Ident) -> bool {
        self.names.contains(&name(ident))
    }

    /// Finds the names of `block` ([`Visit`]), then passes a meeting on from each `let`'s
    /// name to what it was made of, until nothing more meets.
    pub(super) fn of(block: &syn::Block) -> Meeting {
        let mut meeting = Meeting::default();
        meeting.visit_block(block);
        let lets = core::mem::take(&mut meeting.lets);
        let mut passed = vec![false; lets.len()];
        loop {
            let before = meeting.names.len();
            for ((bound, init), passed) in lets.iter().zip(&mut passed) {
                if !*passed && meeting.names.contains(bound) {
                    *passed = true;
                    meeting.meets(init);
                }
            }
            if meeting.names.len() == before {
                return meeting;
            }
        }
    }

    /// `expr` meets another value here: a name, or the names a value is made of
    /// (`Some(fa)`, `Box::pin(fa)`, `(fa, 1)`, `Pending { f: fa }`, `[fa]`, `vec![fa]`,
    /// a block's value).
    fn meets(&mut self, expr: &Expr) {
        match strip_parens(expr) {
            Expr::Path(path) if path.qself.is_none() => {
                if let Some(ident) = path.path.get_ident() {
                    self.names.insert(name(ident));
                }
            }
            Expr::Call(call) => call.args.iter().for_each(|e| self.meets(e)),
            Expr::Tuple(tuple) => tuple.elems.iter().for_each(|e| self.meets(e)),
            Expr::Reference(reference) => self.meets(&reference.expr),
            Expr::Array(array) => array.elems.iter().for_each(|e| self.meets(e)),
            Expr::Struct(value) => value.fields.iter().for_each(|f| self.meets(&f.expr)),
            Expr::Block(block) => {
                if let Some(Stmt::Expr(value, None)) = block.block.stmts.last() {
                    self.meets(value);
                }
            }
            Expr::Macro(mac) if mac.mac.path.is_ident("vec") => {
                if let Some(MacroArguments::List(args)) =
                    MacroArguments::parse(mac.mac.tokens.clone())
                {
                    args.iter().for_each(|e| self.meets(e));
                }
            }
            _ => {}
        }
    }
}

impl Visit<'_> for Meeting {
    fn visit_expr(&mut self, expr: &Expr) {
        match expr {
            Expr::Array(_) => self.meets(expr),
            // Any method's: a collection's `push`, but also a channel's `send`, an
            // `Option`'s `replace`, an entry's `or_insert`, and the attribute cannot tell
            // them from a method that only runs the future (`metrics.time(fa)`, which then
            // loses its retries rather than fail to compile).
            Expr::MethodCall(call) => {
                // What a storing method's receiver holds meets what it is handed
                // (`slot.replace(fb)` with `let mut slot = Some(fa)`).
                if STORING_METHODS.contains(&call.method.to_string().as_str()) {
                    self.meets(&call.receiver);
                }
                call.args.iter().for_each(|e| self.meets(e));
            }
            // The same methods called by their path, the place among what meets
            // (`Vec::push(&mut v, fa)`, `mem::replace(&mut slot, fb)`).
            Expr::Call(call) if method_by_path(call) => {
                call.args.iter().for_each(|e| self.meets(e));
            }
            Expr::Assign(assign) => {
                self.meets(&assign.left);
                self.meets(&assign.right);
            }
            Expr::If(_) | Expr::Match(_) => self.arm_values(expr),
            _ => {}
        }
        visit::visit_expr(self, expr);
    }

    fn visit_local(&mut self, local: &syn::Local) {
        let pat = match &local.pat {
            syn::Pat::Type(typed) => &*typed.pat,
            pat => pat,
        };
        if let (syn::Pat::Ident(ident), Some(init)) = (pat, &local.init) {
            self.lets.push((name(&ident.ident), (*init.expr).clone()));
        }
        visit::visit_local(self, local);
    }

    fn visit_macro(&mut self, mac: &Macro) {
        if let Some(MacroArguments::List(args)) = MacroArguments::of_expression_macro(mac) {
            if mac.path.is_ident("vec") {
                args.iter().for_each(|e| self.meets(e));
            }
            for arg in &args {
                self.visit_expr(arg);
            }
        }
    }

    fn visit_item(&mut self, _: &syn::Item) {}
}

impl Meeting {
    /// The values of an `if`'s (with an `else`) or a `match`'s arms: an arm's expression,
    /// or a block arm's last one (`if c { log(); fa } else { fb }`).
    fn arm_values(&mut self, expr: &Expr) {
        let mut value = |arm: &Expr| match strip_parens(arm) {
            Expr::Block(block) => {
                if let Some(Stmt::Expr(value, None)) = block.block.stmts.last() {
                    self.meets(value);
                }
            }
            arm => self.meets(arm),
        };
        match expr {
            Expr::If(branch) => {
                if let Some((_, otherwise)) = &branch.else_branch {
                    if let Some(Stmt::Expr(then, None)) = branch.then_branch.stmts.last() {
                        value(then);
                    }
                    value(otherwise);
                }
            }
            Expr::Match(choice) => choice.arms.iter().for_each(|arm| value(&arm.body)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meeting(body: &str) -> Meeting {
        let block: syn::Block = syn::parse_str(body).expect("a block");
        Meeting::of(&block)
    }

    #[test]
    fn names_that_meet_another_value_where_one_type_is_needed() {
        let found = meeting(
            "{
                join_all(vec![va, vb]).await;
                let _ = [aa, (ab)];
                let _ = if c { ia } else { log(); ib };
                let _ = if c { ic } else if d { id } else { ie };
                let _ = match c { 1 => ma, _ => { log(); mb } };
                futures.push(pa);
                Vec::push(&mut futures, qa);
                <Vec<_>>::push(&mut (futures), qb);
                HashMap::insert(&mut map, key, qc);
                push_into(&mut futures, free_function_argument);
                metrics::timed(&mut calls, module_function_argument);
                Self::time(&mut calls, own_function_argument);
                Timed::new(label, constructor_argument);
                Repo::timed(&mut calls, type_function_argument);
                <Self>::timed(&mut calls, qualified_function_argument);
                Poller::drive(&mut driven, 1);
                Vec::push(by_value_first, by_value_argument);
                std::mem::replace(&mut replaced, replacement);
                slot.replace(method_replacement);
                untouched_receiver.map(mapper);
                sa = sb;
                let _ = if c { untouched_if_without_else };
                keep(call_argument);
                metrics.time(method_argument);
                let _ = (tuple_element, 1);
                if c { log(); statement_tail; }
            }",
        );
        for name in [
            "va",
            "vb",
            "aa",
            "ab",
            "ia",
            "ib",
            "ic",
            "id",
            "ie",
            "ma",
            "mb",
            "pa",
            "qa",
            "qb",
            "qc",
            "futures",
            "map",
            "by_value_first",
            "by_value_argument",
            "replaced",
            "replacement",
            "slot",
            "method_replacement",
            "sa",
            "sb",
            "method_argument",
        ] {
            let ident = syn::Ident::new(name, proc_macro2::Span::call_site());
            assert!(found.contains(&ident), "{name}");
        }
        // `r#va` is `va` to rustc.
        assert!(found.contains(&syn::parse_str::<syn::Ident>("r#va").unwrap()));
        for name in [
            "untouched_if_without_else",
            "call_argument",
            "tuple_element",
            "statement_tail",
            "free_function_argument",
            "module_function_argument",
            "own_function_argument",
            "constructor_argument",
            "type_function_argument",
            "qualified_function_argument",
            "driven",
            "untouched_receiver",
            "join_all",
            "c",
        ] {
            assert!(!found.names.contains(name), "{name}");
        }
    }

    /// A name that meets passes that on to what its `let` made it of, through each value
    /// that holds a future (`Some(..)`, a tuple, a struct, a block's value, `vec!`, a
    /// borrow), and through `let`s in turn; a qualified path is no name.
    #[test]
    fn a_meeting_passes_through_lets_to_what_they_were_made_of() {
        let found = meeting(
            "{
                let called = Some(in_call);
                let tupled = (in_tuple, 1);
                let built = Pending { f: in_struct };
                let blocked = { log(); in_block };
                let listed = vec![in_vec];
                let borrowed = &in_borrow;
                let chained = called_again;
                let called_again = Some(in_chain);
                let qualified = <T>::CONST;
                let untouched = Some(not_met);
                let rendered = my_macro![in_other_macro];
                let _ = [called, tupled, built, blocked, listed, borrowed, chained, qualified, rendered];
                helpers::replace(&mut count, module_replace_argument);
            }",
        );
        for name in [
            "in_call",
            "in_tuple",
            "in_struct",
            "in_block",
            "in_vec",
            "in_borrow",
            "in_chain",
        ] {
            let ident = syn::Ident::new(name, proc_macro2::Span::call_site());
            assert!(found.contains(&ident), "{name}");
        }
        for name in [
            "not_met",
            "untouched",
            "CONST",
            "module_replace_argument",
            "count",
            "in_other_macro",
        ] {
            assert!(!found.names.contains(name), "{name}");
        }
    }

    #[test]
    fn items_and_other_macros_are_not_read() {
        let found = meeting("{ fn f() { let _ = [inner, other]; } let _ = m![ma, mb]; }");
        assert!(found.names.is_empty(), "{:?}", found.names);
    }
}
