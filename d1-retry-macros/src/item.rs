//! The function under the attribute: parsed loosely enough to accept every place a
//! function can appear (free, inherent, trait, trait impl), then checked.

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{
    Attribute, Block, Expr, ExprAsync, GenericArgument, Local, Pat, PathArguments, ReturnType,
    Signature, Stmt, Token, Type, Visibility, braced,
};

/// `#(#attrs)* #vis #sig { #(#inner_attrs)* #(#stmts)* }`, or `#sig;` in a trait.
pub(crate) struct Function {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    pub(crate) body: Option<(Vec<Attribute>, Block)>,
    pub(crate) semi: Option<Token![;]>,
}

impl Parse for Function {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        if input.peek(Token![;]) {
            let semi = input.parse()?;
            return Ok(Function {
                attrs,
                vis,
                sig,
                body: None,
                semi: Some(semi),
            });
        }
        let content;
        let brace_token = braced!(content in input);
        let inner = content.call(Attribute::parse_inner)?;
        let stmts = content.call(Block::parse_within)?;
        Ok(Function {
            attrs,
            vis,
            sig,
            body: Some((inner, Block { brace_token, stmts })),
            semi: None,
        })
    }
}

/// How the function runs its body.
pub(crate) enum Shape {
    /// `async fn`: each attempt runs `block`.
    Async {
        inner_attrs: Vec<Attribute>,
        block: Block,
    },
    /// A method already rewritten by `#[async_trait]` (which, on the `impl` or `trait`,
    /// always expands before attributes on its methods):
    /// `fn f(..) -> Pin<Box<dyn Future<Output = R> ..>> { Box::pin(async move { .. }) }`.
    /// The argument rebindings stay outside the loop, each attempt runs the user's block.
    Boxed {
        /// `Box::pin`, as `#[async_trait]` wrote it.
        callee: Box<Expr>,
        /// The `async move` block, its statements replaced by the retry loop.
        future: ExprAsync,
        /// `let x = x;` and friends: moves of the arguments into the future.
        rebindings: Vec<Stmt>,
        block: Block,
    },
}

/// A function the attribute can rewrite.
pub(crate) struct Checked {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    pub(crate) shape: Shape,
    /// `Result<T, E>` (or an alias such as `worker::Result<T>`), the attempt's output.
    pub(crate) output: Type,
    /// Where error-type mistakes point: `E` when it is visible, else the whole output.
    pub(crate) error_span: Span,
    /// `E` of `Result<T, E>` when it is written out (not behind an alias).
    pub(crate) error_type: Option<Type>,
}

impl Function {
    pub(crate) fn check(self) -> syn::Result<Checked> {
        if let Some(constness) = &self.sig.constness {
            return Err(syn::Error::new(
                constness.span,
                "#[d1_retry] cannot go on a `const fn`: its retry loop waits between \
                 attempts; remove `const` and make it an `async fn`",
            ));
        }
        let Some((inner_attrs, block)) = self.body else {
            let span = self
                .semi
                .map_or_else(|| self.sig.ident.span(), |semi| semi.span);
            return Err(syn::Error::new(
                span,
                "#[d1_retry] needs a function body to retry, and this trait method has \
                 none; put #[d1_retry] on the method in each `impl` of the trait, or give \
                 the trait method a default body",
            ));
        };
        let (shape, output) = if self.sig.asyncness.is_some() {
            let output = match &self.sig.output {
                ReturnType::Type(_, ty) => (**ty).clone(),
                ReturnType::Default => {
                    return Err(not_result(self.sig.paren_token.span.close(), None));
                }
            };
            (Shape::Async { inner_attrs, block }, output)
        } else {
            boxed(&self.sig, block)?
        };
        let (error_span, error_type) = result_error(&output)?;
        Ok(Checked {
            attrs: self.attrs,
            vis: self.vis,
            sig: self.sig,
            shape,
            output,
            error_span,
            error_type,
        })
    }
}

fn not_result(span: Span, found: Option<&Type>) -> syn::Error {
    let found = found.map_or_else(|| "nothing".to_owned(), |ty| format!("`{}`", pretty(ty)));
    syn::Error::new(
        span,
        format!(
            "#[d1_retry] retries a function that returns `Result<T, E>` (its `Err` is how a \
             failed attempt is seen), but this one returns {found}; return a `Result`, such as \
             `worker::Result<T>` or `Result<T, worker::Error>`"
        ),
    )
}

/// Accepts any path type whose last segment is `Result`: `Result<T, E>`,
/// `std::result::Result<T, E>`, `worker::Result<T>`, `anyhow::Result<T>`.
fn result_error(output: &Type) -> syn::Result<(Span, Option<Type>)> {
    let mut ty = output;
    while let Type::Group(group) = ty {
        ty = &group.elem;
    }
    if let Type::Paren(paren) = ty {
        ty = &paren.elem;
    }
    let Type::Path(path) = ty else {
        return Err(not_result(output.span(), Some(output)));
    };
    let Some(last) = path.path.segments.last() else {
        return Err(not_result(output.span(), Some(output)));
    };
    if last.ident != "Result" {
        return Err(not_result(output.span(), Some(output)));
    }
    if let PathArguments::AngleBracketed(args) = &last.arguments {
        let mut types = args.args.iter().filter_map(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        });
        if let (Some(_), Some(error)) = (types.next(), types.next()) {
            return Ok((error.span(), Some(error.clone())));
        }
    }
    Ok((output.span(), None))
}

/// Recognises `#[async_trait]`'s output; anything else that is not `async` is refused.
fn boxed(sig: &Signature, block: Block) -> syn::Result<(Shape, Type)> {
    let not_async = || {
        syn::Error::new(
            sig.fn_token.span,
            "#[d1_retry] goes on an `async fn`: each attempt awaits the body; write `async fn`",
        )
    };
    let mut stmts = block.stmts.into_iter();
    let (Some(Stmt::Expr(Expr::Call(call), None)), None) = (stmts.next(), stmts.next()) else {
        return Err(not_async());
    };
    let mut args = call.args.into_iter();
    let (Some(Expr::Async(future)), None) = (args.next(), args.next()) else {
        return Err(not_async());
    };
    if future.capture.is_none() || !is_box_pin(&call.func) {
        return Err(not_async());
    }
    let unrecognised = || {
        syn::Error::new(
            sig.fn_token.span,
            "#[d1_retry] does not recognise this `Box::pin(async move { .. })` body: it \
             supports the output of #[async_trait] on the `impl` or `trait`, or a plain \
             `async fn`; write `async fn` and let #[async_trait] do the boxing",
        )
    };
    let mut rebindings = Vec::new();
    let mut attempt = None;
    for stmt in &future.block.stmts {
        match stmt {
            Stmt::Local(local) if is_result_binding(local) => {
                attempt = Some(local.clone());
                break;
            }
            // `let _: () = { .. };`: an `async fn` without a return type.
            Stmt::Local(Local {
                pat: Pat::Type(typed),
                ..
            }) if matches!(*typed.pat, Pat::Wild(_)) => {
                return Err(not_result(sig.ident.span(), Some(&typed.ty)));
            }
            Stmt::Local(local) => rebindings.push(Stmt::Local(local.clone())),
            // `#[async_trait]`'s return-type hint; the expansion has its own.
            Stmt::Expr(Expr::If(_), _) => {}
            _ => return Err(unrecognised()),
        }
    }
    let Some(Local {
        pat: Pat::Type(typed),
        init: Some(init),
        ..
    }) = attempt
    else {
        return Err(unrecognised());
    };
    let Expr::Block(user) = *init.expr else {
        return Err(unrecognised());
    };
    let output = (*typed.ty).clone();
    let future = ExprAsync {
        block: Block {
            brace_token: future.block.brace_token,
            stmts: Vec::new(),
        },
        ..future
    };
    Ok((
        Shape::Boxed {
            callee: call.func,
            future,
            rebindings,
            block: user.block,
        },
        output,
    ))
}

fn is_box_pin(func: &Expr) -> bool {
    let Expr::Path(path) = func else {
        return false;
    };
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect();
    segments.ends_with(&["Box".to_owned(), "pin".to_owned()])
}

/// `let __ret: R = { .. };`
fn is_result_binding(local: &Local) -> bool {
    let Pat::Type(typed) = &local.pat else {
        return false;
    };
    let Pat::Ident(ident) = &*typed.pat else {
        return false;
    };
    ident.ident == "__ret"
        && local
            .init
            .as_ref()
            .is_some_and(|init| matches!(*init.expr, Expr::Block(_)))
}

/// Whether the function sits in an `impl` or `trait`, as far as its signature shows:
/// a receiver, or `Self` anywhere in the signature.
pub(crate) fn is_method(sig: &Signature) -> bool {
    struct FindSelf(bool);
    impl Visit<'_> for FindSelf {
        fn visit_ident(&mut self, ident: &proc_macro2::Ident) {
            if ident == "Self" {
                self.0 = true;
            }
        }
        fn visit_receiver(&mut self, _: &syn::Receiver) {
            self.0 = true;
        }
    }
    let mut find = FindSelf(false);
    find.visit_signature(sig);
    find.0
}

/// `Option < i64 >` as the user wrote it: `Option<i64>`.
fn pretty(ty: &Type) -> String {
    let mut text = quote::ToTokens::to_token_stream(ty).to_string();
    for (spaced, tight) in [
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ::", "::"),
        (":: ", "::"),
        (" ,", ","),
        ("& ", "&"),
    ] {
        text = text.replace(spaced, tight);
    }
    text
}
