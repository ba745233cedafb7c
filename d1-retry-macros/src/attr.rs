//! The attribute's options: `#[d1_retry(read_only, max_attempts = 3, ...)]`.
//!
//! One setter per option; each setter refuses a duplicate and the options it conflicts
//! with, so every error points at the option that caused it. The options are plain data:
//! `expand` renders them.

use core::time::Duration;

use d1_retry_runtime::{PolicyError, RetryPolicy};
use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprUnary, Lit, LitInt, LitStr, Path, UnOp};

const VALID: &str = "read_only, idempotent, max_attempts = N, base_delay_ms = N, \
                     max_delay_ms = N, attempt_timeout_ms = N, deadline_ms = N, policy = PATH, \
                     name = \"...\", crate = \"...\"";

const KEYS: [&str; 10] = [
    "read_only",
    "idempotent",
    "max_attempts",
    "base_delay_ms",
    "max_delay_ms",
    "attempt_timeout_ms",
    "deadline_ms",
    "policy",
    "name",
    "crate",
];

/// A number given to one of the schedule knobs, with the span of its value.
#[derive(Clone, Copy)]
struct Knob<T> {
    value: T,
    span: Span,
}

#[derive(Default)]
pub(crate) struct Options {
    read_only: Option<Span>,
    idempotent: Option<Span>,
    max_attempts: Option<Knob<u32>>,
    base_delay_ms: Option<Knob<u64>>,
    max_delay_ms: Option<Knob<u64>>,
    attempt_timeout_ms: Option<Knob<u64>>,
    deadline_ms: Option<Knob<u64>>,
    policy: Option<Path>,
    name: Option<LitStr>,
    krate: Option<Path>,
}

impl Options {
    pub(crate) fn parse(args: TokenStream) -> syn::Result<Self> {
        let mut options = Options::default();
        syn::meta::parser(|meta| options.set(&meta)).parse2(args)?;
        options.validate_schedule()?;
        Ok(options)
    }

    pub(crate) fn read_only(&self) -> bool {
        self.read_only.is_some()
    }

    pub(crate) fn idempotent(&self) -> bool {
        self.idempotent.is_some()
    }

    pub(crate) fn name(&self) -> Option<&LitStr> {
        self.name.as_ref()
    }

    /// `crate = ".."`: where the runtime is reached from the user's crate.
    pub(crate) fn krate(&self) -> Option<&Path> {
        self.krate.as_ref()
    }

    /// `policy = PATH`.
    pub(crate) fn policy(&self) -> Option<&Path> {
        self.policy.as_ref()
    }

    /// `max_attempts = N`.
    pub(crate) fn max_attempts(&self) -> Option<u32> {
        self.max_attempts.map(|knob| knob.value)
    }

    /// `base_delay_ms = N`.
    pub(crate) fn base_delay_ms(&self) -> Option<u64> {
        self.base_delay_ms.map(|knob| knob.value)
    }

    /// `max_delay_ms = N`.
    pub(crate) fn max_delay_ms(&self) -> Option<u64> {
        self.max_delay_ms.map(|knob| knob.value)
    }

    /// `attempt_timeout_ms = N`, with the span of its value.
    pub(crate) fn attempt_timeout_ms(&self) -> Option<(u64, Span)> {
        self.attempt_timeout_ms.map(|knob| (knob.value, knob.span))
    }

    /// `deadline_ms = N`, with the span of its value.
    pub(crate) fn deadline_ms(&self) -> Option<(u64, Span)> {
        self.deadline_ms.map(|knob| (knob.value, knob.span))
    }

    /// Whether the attribute sets a time limit (`attempt_timeout_ms` or `deadline_ms`).
    pub(crate) fn has_time_limits(&self) -> bool {
        self.attempt_timeout_ms.is_some() || self.deadline_ms.is_some()
    }

    fn set(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let Some(key) = meta.path.get_ident().map(ToString::to_string) else {
            return Err(meta.error(format!(
                "unknown #[d1_retry] option; valid options: {VALID}"
            )));
        };
        match key.as_str() {
            "read_only" => self.set_read_only(meta),
            "idempotent" => self.set_idempotent(meta),
            "max_attempts" => self.set_max_attempts(meta),
            "base_delay_ms" => self.set_base_delay_ms(meta),
            "max_delay_ms" => self.set_max_delay_ms(meta),
            "attempt_timeout_ms" => self.set_attempt_timeout_ms(meta),
            "deadline_ms" => self.set_deadline_ms(meta),
            "policy" => self.set_policy(meta),
            "name" => self.set_name(meta),
            "crate" => self.set_crate(meta),
            unknown => Err(meta.error(unknown_key_message(unknown))),
        }
    }

    fn set_read_only(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let span = flag(meta, "read_only", self.read_only)?;
        if self.idempotent.is_some() {
            return Err(syn::Error::new(span, REDUNDANT));
        }
        self.read_only = Some(span);
        Ok(())
    }

    fn set_idempotent(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        let span = flag(meta, "idempotent", self.idempotent)?;
        if self.read_only.is_some() {
            return Err(syn::Error::new(span, REDUNDANT));
        }
        self.idempotent = Some(span);
        Ok(())
    }

    fn set_max_attempts(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        once(meta, "max_attempts", self.max_attempts.is_some())?;
        self.knob_beside_policy(meta, "max_attempts", "with_max_attempts(N)")?;
        self.max_attempts = Some(number(meta, "max_attempts", "attempts")?);
        Ok(())
    }

    fn set_base_delay_ms(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        once(meta, "base_delay_ms", self.base_delay_ms.is_some())?;
        self.knob_beside_policy(
            meta,
            "base_delay_ms",
            "with_base_delay(Duration::from_millis(N))",
        )?;
        self.base_delay_ms = Some(number(meta, "base_delay_ms", "milliseconds")?);
        Ok(())
    }

    fn set_max_delay_ms(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        once(meta, "max_delay_ms", self.max_delay_ms.is_some())?;
        self.knob_beside_policy(
            meta,
            "max_delay_ms",
            "with_max_delay(Duration::from_millis(N))",
        )?;
        self.max_delay_ms = Some(number(meta, "max_delay_ms", "milliseconds")?);
        Ok(())
    }

    // The time limits are not part of the schedule: they may go with `policy`, and add to it.
    fn set_attempt_timeout_ms(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        once(
            meta,
            "attempt_timeout_ms",
            self.attempt_timeout_ms.is_some(),
        )?;
        let knob = number(meta, "attempt_timeout_ms", "milliseconds")?;
        if knob.value == 0 {
            return Err(syn::Error::new(
                knob.span,
                "attempt_timeout_ms = 0 would cut every D1 call at once: give the time one \
                 call may take, e.g. attempt_timeout_ms = 2000, or leave it out to wait as \
                 long as D1 does",
            ));
        }
        self.attempt_timeout_ms = Some(knob);
        Ok(())
    }

    fn set_deadline_ms(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        once(meta, "deadline_ms", self.deadline_ms.is_some())?;
        let knob = number(meta, "deadline_ms", "milliseconds")?;
        if knob.value == 0 {
            return Err(syn::Error::new(
                knob.span,
                "deadline_ms = 0 would cut every call at once: give the time a whole call may \
                 take, retries included, e.g. deadline_ms = 10000 (under your proxy's limit), \
                 or leave it out",
            ));
        }
        self.deadline_ms = Some(knob);
        Ok(())
    }

    fn set_policy(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        once(meta, "policy", self.policy.is_some())?;
        let knob = [
            self.max_attempts.map(|_| "max_attempts"),
            self.base_delay_ms.map(|_| "base_delay_ms"),
            self.max_delay_ms.map(|_| "max_delay_ms"),
        ]
        .into_iter()
        .flatten()
        .next();
        if let Some(knob) = knob {
            return Err(meta.error(format!(
                "`policy` conflicts with `{knob}`: a policy already sets the schedule; \
                 set it on the policy constant (RetryPolicy::DEFAULT.with_...) or drop `policy`"
            )));
        }
        let value = meta.value()?;
        let mut expr: Expr = value.parse()?;
        // A path a `macro_rules!` of the user's passed on as `$policy:path` (or `:expr`)
        // arrives wrapped in an invisible group.
        while let Expr::Group(group) = expr {
            expr = *group.expr;
        }
        let Expr::Path(path) = expr else {
            return Err(syn::Error::new(
                expr.span(),
                "`policy` takes the path of a `const RetryPolicy`, \
                 e.g. `const FAST: RetryPolicy = RetryPolicy::DEFAULT.with_max_attempts(3);` \
                 and #[d1_retry(policy = FAST)]",
            ));
        };
        self.policy = Some(path.path);
        Ok(())
    }

    fn set_name(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        once(meta, "name", self.name.is_some())?;
        let name = string(meta, "name", "name = \"users.find\"")?;
        if name.value().trim().is_empty() {
            return Err(syn::Error::new(
                name.span(),
                "`name` is the `d1.operation` log field and must not be empty: \
                 write e.g. name = \"users.find\", or drop it to log the function's name",
            ));
        }
        self.name = Some(name);
        Ok(())
    }

    fn set_crate(&mut self, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
        once(meta, "crate", self.krate.is_some())?;
        let path = string(meta, "crate", "crate = \"my_d1_retry\"")?;
        self.krate = Some(path.parse_with(Path::parse_mod_style).map_err(|_| {
            syn::Error::new(
                path.span(),
                "`crate` takes the path under which d1-retry is reachable, \
                 e.g. crate = \"my_d1_retry\" for a dependency renamed to `my_d1_retry`",
            )
        })?);
        Ok(())
    }

    fn knob_beside_policy(
        &self,
        meta: &ParseNestedMeta<'_>,
        knob: &str,
        builder: &str,
    ) -> syn::Result<()> {
        if self.policy.is_some() {
            return Err(meta.error(format!(
                "`{knob}` conflicts with `policy`: the policy already sets the schedule; \
                 set it on the policy constant (`.{builder}`) or drop `policy`"
            )));
        }
        Ok(())
    }

    /// Refuses a schedule the runtime would refuse, pointing at the number to change.
    fn validate_schedule(&self) -> syn::Result<()> {
        let mut policy = RetryPolicy::DEFAULT;
        if let Some(knob) = self.max_attempts {
            policy = policy.with_max_attempts(knob.value);
        }
        if let Some(knob) = self.base_delay_ms {
            policy = policy.with_base_delay(Duration::from_millis(knob.value));
        }
        if let Some(knob) = self.max_delay_ms {
            policy = policy.with_max_delay(Duration::from_millis(knob.value));
        }
        match policy.validate() {
            Ok(()) => Ok(()),
            Err(PolicyError::ZeroAttempts) => Err(syn::Error::new(
                self.max_attempts
                    .map_or_else(Span::call_site, |knob| knob.span),
                "max_attempts = 0 would never call the function: a call is always tried \
                 at least once; write max_attempts = 1 to turn retries off",
            )),
            Err(PolicyError::BaseAboveCap) => {
                let base = policy.base_delay().as_millis();
                let cap = policy.max_delay().as_millis();
                let span = self
                    .base_delay_ms
                    .or(self.max_delay_ms)
                    .map_or_else(Span::call_site, |knob| knob.span);
                Err(syn::Error::new(
                    span,
                    format!(
                        "base_delay_ms ({base} ms) is above max_delay_ms ({cap} ms; the default \
                         base is 200 ms and the default cap 2000 ms): lower base_delay_ms or \
                         raise max_delay_ms"
                    ),
                ))
            }
            Err(other) => Err(syn::Error::new(Span::call_site(), other.message())),
        }
    }
}

const REDUNDANT: &str = "`read_only` and `idempotent` together are redundant: \
     `idempotent` already retries everything `read_only` does; keep `read_only` if the \
     function only reads (its SQL is then checked), or `idempotent` if running it twice is safe";

fn once(meta: &ParseNestedMeta<'_>, key: &str, already: bool) -> syn::Result<()> {
    if already {
        return Err(meta.error(format!("`{key}` is given twice; keep one")));
    }
    Ok(())
}

/// A flag such as `read_only`: no value allowed.
fn flag(meta: &ParseNestedMeta<'_>, key: &str, already: Option<Span>) -> syn::Result<Span> {
    once(meta, key, already.is_some())?;
    if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
        return Err(meta.error(format!(
            "`{key}` takes no value: write #[d1_retry({key})], or leave it out"
        )));
    }
    Ok(meta.path.span())
}

fn number<T>(meta: &ParseNestedMeta<'_>, key: &str, unit: &str) -> syn::Result<Knob<T>>
where
    T: core::str::FromStr,
    T::Err: core::fmt::Display,
{
    let expr: Expr = meta.value()?.parse()?;
    let positive = |span| {
        syn::Error::new(
            span,
            format!("`{key}` takes a whole number of {unit}, e.g. {key} = 3"),
        )
    };
    match &expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => parse_int(int, key, unit),
        Expr::Lit(ExprLit {
            lit: Lit::Float(float),
            ..
        }) => Err(syn::Error::new(
            float.span(),
            format!("`{key}` takes a whole number of {unit}, not a fraction"),
        )),
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => Err(syn::Error::new(
            text.span(),
            format!("`{key}` takes a number without quotes, e.g. {key} = 3"),
        )),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => Err(syn::Error::new(
            expr.span(),
            format!("`{key}` cannot be negative: give a whole number of {unit}, e.g. {key} = 3"),
        )),
        _ => Err(positive(expr.span())),
    }
}

fn parse_int<T>(int: &LitInt, key: &str, unit: &str) -> syn::Result<Knob<T>>
where
    T: core::str::FromStr,
    T::Err: core::fmt::Display,
{
    match int.base10_parse::<T>() {
        Ok(value) => Ok(Knob {
            value,
            span: int.span(),
        }),
        Err(_) => Err(syn::Error::new(
            int.span(),
            format!(
                "`{key}` = {} is too large for a number of {unit}",
                int.base10_digits()
            ),
        )),
    }
}

fn string(meta: &ParseNestedMeta<'_>, key: &str, example: &str) -> syn::Result<LitStr> {
    let expr: Expr = meta.value()?.parse()?;
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => Ok(text),
        other => Err(syn::Error::new(
            other.span(),
            format!("`{key}` takes a string literal, e.g. {example}"),
        )),
    }
}

fn unknown_key_message(unknown: &str) -> String {
    let close = KEYS.iter().find(|key| looks_like(unknown, key));
    match close {
        Some(key) => format!(
            "unknown #[d1_retry] option `{unknown}`; did you mean `{key}`? valid options: {VALID}"
        ),
        None => format!("unknown #[d1_retry] option `{unknown}`; valid options: {VALID}"),
    }
}

/// Catches `readonly`, `ReadOnly`, `max_attempt`, `idempotant`: the same letters ignoring
/// case and underscores, or at most two edits apart.
fn looks_like(written: &str, key: &str) -> bool {
    let squash = |s: &str| -> Vec<char> {
        s.chars()
            .filter(|c| *c != '_')
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    edit_distance(&squash(written), &squash(key)) <= 2
}

fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != cb);
            let insert = current[j] + 1;
            let delete = previous[j + 1] + 1;
            current.push(substitute.min(insert).min(delete));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_are_suggested() {
        assert!(looks_like("readonly", "read_only"));
        assert!(looks_like("ReadOnly", "read_only"));
        assert!(looks_like("idempotant", "idempotent"));
        assert!(looks_like("max_attempt", "max_attempts"));
        assert!(looks_like("deadlines_ms", "deadline_ms"));
        assert!(!looks_like("retries", "read_only"));
        assert!(!looks_like("timeout", "name"));
        // A prefix two keys share is a near miss of neither, nor is a longer word that holds
        // a key: nine letters too few, nine too many.
        assert!(!looks_like("max", "max_attempts"));
        assert!(!looks_like("operation_name", "name"));
    }

    /// `policy = $p` in a `macro_rules!`: the path arrives in an invisible group.
    #[test]
    fn a_policy_path_in_an_invisible_group_is_read() {
        use proc_macro2::{Delimiter, Group, TokenTree};
        use quote::quote;
        let path = Group::new(Delimiter::None, quote!(crate::config::POLICY));
        let mut args = quote!(policy =);
        args.extend([TokenTree::Group(path)]);
        let options = Options::parse(args).expect("a path in a group is a path");
        let read = options.policy().expect("the policy is read");
        assert_eq!(quote!(#read).to_string(), "crate :: config :: POLICY");
    }
}
