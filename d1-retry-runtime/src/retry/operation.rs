//! The `d1.operation` log field, formatted only when a line is logged.

use core::fmt;

/// What a retried call is called in the logs.
///
/// A method's default name, `Type::method`, is kept as its two parts and joined only when a
/// line is written: the happy path never builds it. The type's part is the function that
/// names it (`core::any::type_name::<Self>`), not the name: a function pointer is a
/// constant, so the whole `OperationName` is one, which the expansion borrows as a
/// `'static` instead of keeping it in every call's future.
#[derive(Clone, Copy, Debug)]
pub enum OperationName<'a> {
    /// A name given in full (`name = "..."`, a free function, `Retry::new`).
    Named(&'a str),
    /// A method: the function naming its type, `core::any::type_name::<Self>`, and the
    /// method's name.
    Method {
        /// Returns `app::repo::UserRepo<app::Db>`; only its last path segment is logged.
        type_name: fn() -> &'static str,
        /// `find`.
        method: &'static str,
    },
}

impl fmt::Display for OperationName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OperationName::Named(name) => f.write_str(name),
            OperationName::Method { type_name, method } => {
                let short = short_type_name(type_name());
                if !short.is_empty() {
                    f.write_str(short)?;
                    f.write_str("::")?;
                }
                f.write_str(method)
            }
        }
    }
}

impl<'a> From<&'a str> for OperationName<'a> {
    fn from(name: &'a str) -> Self {
        OperationName::Named(name)
    }
}

/// The last segment of the type's path, without generic arguments, references, pointers,
/// `mut`, `const` or `dyn`: `app::repo::UserRepo<app::Db>` -> `UserRepo`,
/// `&mut dyn app::Repo + Send` -> `Repo`. A type that is not a path (a tuple, an array, a
/// slice) has no such segment and is kept whole, less its references:
/// `&(app::A, app::B)` -> `(app::A, app::B)`.
///
/// It scans bytes rather than searching with `&str` patterns (`rsplit("::")`,
/// `trim_start_matches("mut ")`), which would link `core`'s two-way string searcher into
/// every Worker. Every byte it cuts at is ASCII, so every cut is on a `char` boundary.
fn short_type_name(full: &str) -> &str {
    let mut rest = full.as_bytes();
    loop {
        rest = match rest {
            [b'&' | b'*', tail @ ..] => tail,
            [b'm', b'u', b't', b' ', tail @ ..] | [b'd', b'y', b'n', b' ', tail @ ..] => tail,
            [b'c', b'o', b'n', b's', b't', b' ', tail @ ..] => tail,
            _ => break,
        };
    }
    let start = full.len() - rest.len();
    // The path ends at its generic arguments, or at the ` + Send` of a `dyn`.
    let path = match rest
        .iter()
        .position(|&b| matches!(b, b'<' | b' ' | b'(' | b'['))
    {
        Some(0) => return full.get(start..).unwrap_or(full),
        Some(end) => &rest[..end],
        None => rest,
    };
    let segment = match path.iter().rposition(|&b| b == b':') {
        Some(colon) => colon + 1,
        None => 0,
    };
    full.get(start + segment..start + path.len())
        .unwrap_or(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_use_the_short_type_name() {
        let name = |type_name, method| OperationName::Method { type_name, method }.to_string();
        assert_eq!(name(|| "app::repo::UserRepo", "find"), "UserRepo::find");
        assert_eq!(name(|| "app::Repo<app::Db, u8>", "save"), "Repo::save");
        assert_eq!(name(|| "UserRepo", "find"), "UserRepo::find");
        assert_eq!(name(|| "&app::Repo", "find"), "Repo::find");
        assert_eq!(name(|| "&mut app::Repo", "find"), "Repo::find");
        assert_eq!(name(|| "dyn app::Repo", "find"), "Repo::find");
        assert_eq!(name(|| "", "find"), "find");
        struct Repo;
        assert_eq!(name(core::any::type_name::<Repo>, "find"), "Repo::find");
        assert_eq!(OperationName::from("users.find").to_string(), "users.find");
    }

    #[test]
    fn short_type_names() {
        let cases = [
            // Paths: the last segment, without generic arguments.
            ("app::repo::UserRepo", "UserRepo"),
            ("UserRepo", "UserRepo"),
            ("app::Repo<app::Db, u8>", "Repo"),
            ("a::B<c::D>", "B"),
            ("a::B<c::D<e::F>, g::H>", "B"),
            ("B<c::D>", "B"),
            ("app::inner::{{closure}}", "{{closure}}"),
            ("app::Répertoire<app::Db>", "Répertoire"),
            ("app::Répertoire", "Répertoire"),
            // References, pointers and trait objects: the type behind them.
            ("&app::Repo", "Repo"),
            ("&Repo", "Repo"),
            ("&&app::Repo", "Repo"),
            ("&mut app::Repo", "Repo"),
            ("&mut Repo", "Repo"),
            ("&mut &app::Repo<u8>", "Repo"),
            ("*const app::Repo", "Repo"),
            ("*const Repo", "Repo"),
            ("*mut Repo", "Repo"),
            ("dyn app::Repo", "Repo"),
            ("&dyn app::Repo", "Repo"),
            ("&mut dyn a::T", "T"),
            ("&mut dyn T", "T"),
            ("dyn a::T + core::marker::Send", "T"),
            ("&dyn a::T<u8> + core::marker::Send", "T"),
            // Not paths: kept whole, without the references in front.
            ("(a::B, c::D)", "(a::B, c::D)"),
            ("&(a::B, c::D)", "(a::B, c::D)"),
            ("()", "()"),
            ("[a::B; 4]", "[a::B; 4]"),
            ("&[a::B]", "[a::B]"),
            // Degenerate ones do not panic.
            ("", ""),
            ("&", ""),
            ("a::", ""),
            ("::", ""),
            ("<a::B as c::D>", "<a::B as c::D>"),
            ("mut", "mut"),
        ];
        for (full, short) in cases {
            assert_eq!(short_type_name(full), short, "{full}");
        }
    }
}
