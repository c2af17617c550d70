// tensorbook patch (vendor/README.md, patch 8): the type of a variable bound to a literal,
// without asking rustc for it.
//
// Having rustc print a cell's MIR costs ~20 ms of a ~90 ms trivial build (printing
// types by visible path makes rustc map every crate's public items). A notebook binds plain
// literals all the time (`let n = 1000;`, `let lr = 0.01;`), and for those Rust's own rules
// give the type: an unsuffixed integer is `i32` and a float `f64` unless something constrains
// them, and the caller only asks when the variable's name occurs nowhere else in the cell.

use ra_ap_syntax::ast;
use ra_ap_syntax::ast::ArithOp;
use ra_ap_syntax::ast::BinaryOp;
use ra_ap_syntax::ast::LiteralKind;
use ra_ap_syntax::ast::UnaryOp;

/// The type of `expr` where it is built from literals alone, as rustc would infer it for a
/// binding that nothing else in the cell uses; `None` for anything else.
pub(crate) fn literal_type(expr: &ast::Expr) -> Option<String> {
    Some(match expr {
        ast::Expr::Literal(literal) => match literal.kind() {
            LiteralKind::IntNumber(number) => number.suffix().unwrap_or("i32").to_owned(),
            LiteralKind::FloatNumber(number) => number.suffix().unwrap_or("f64").to_owned(),
            LiteralKind::String(_) => "&str".to_owned(),
            LiteralKind::Bool(_) => "bool".to_owned(),
            LiteralKind::Char(_) => "char".to_owned(),
            LiteralKind::Byte(_) => "u8".to_owned(),
            LiteralKind::ByteString(_) | LiteralKind::CString(_) => return None,
        },
        ast::Expr::ParenExpr(paren) => literal_type(&paren.expr()?)?,
        ast::Expr::PrefixExpr(prefix) => {
            let inner = literal_type(&prefix.expr()?)?;
            match prefix.op_kind()? {
                UnaryOp::Neg if is_signed_number(&inner) => inner,
                UnaryOp::Not if inner == "bool" || is_integer(&inner) => inner,
                _ => return None,
            }
        }
        ast::Expr::BinExpr(binary) => {
            let left = literal_type(&binary.lhs()?)?;
            let right = literal_type(&binary.rhs()?)?;
            if left != right {
                // `1u8 + 2` would still be u8, but mixed operands are left to rustc.
                return None;
            }
            match binary.op_kind()? {
                BinaryOp::ArithOp(ArithOp::Add | ArithOp::Sub | ArithOp::Mul | ArithOp::Div)
                | BinaryOp::ArithOp(ArithOp::Rem)
                    if is_number(&left) =>
                {
                    left
                }
                BinaryOp::CmpOp(_) if left != "&str" => "bool".to_owned(),
                BinaryOp::LogicOp(_) if left == "bool" => left,
                _ => return None,
            }
        }
        _ => return None,
    })
}

fn is_integer(ty: &str) -> bool {
    matches!(
        ty,
        "i8" | "i16"
            | "i32"
            | "i64"
            | "i128"
            | "isize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "u128"
            | "usize"
    )
}

fn is_number(ty: &str) -> bool {
    is_integer(ty) || ty == "f32" || ty == "f64"
}

fn is_signed_number(ty: &str) -> bool {
    is_number(ty) && !ty.starts_with('u')
}

/// How many times `name` occurs in `code` as a whole identifier, strings and comments
/// included (a name inside `println!("{x}")` is a use).
pub(crate) fn occurrences(code: &str, name: &str) -> usize {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(name)
        .filter(|(at, _)| {
            let before = code[..*at].chars().next_back();
            let after = code[at + name.len()..].chars().next();
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ra_ap_syntax::AstNode;

    fn type_of(code: &str) -> Option<String> {
        let file = ra_ap_syntax::SourceFile::parse(
            &format!("fn f() {{ let x = {code}; }}"),
            crate::rust_analyzer::EDITION,
        )
        .tree();
        let expr = file
            .syntax()
            .descendants()
            .find_map(ast::LetStmt::cast)?
            .initializer()?;
        literal_type(&expr)
    }

    #[test]
    fn literals_take_rusts_default_types() {
        assert_eq!(type_of("3 + 1").as_deref(), Some("i32"));
        assert_eq!(type_of("-(2 * 4) % 3").as_deref(), Some("i32"));
        assert_eq!(type_of("1_000u64").as_deref(), Some("u64"));
        assert_eq!(type_of("0.01").as_deref(), Some("f64"));
        assert_eq!(type_of("1e-3f32 * 2.0f32").as_deref(), Some("f32"));
        assert_eq!(type_of("\"text\"").as_deref(), Some("&str"));
        assert_eq!(type_of("'c'").as_deref(), Some("char"));
        assert_eq!(type_of("b'c'").as_deref(), Some("u8"));
        assert_eq!(type_of("1 < 2 && !false").as_deref(), Some("bool"));
    }

    #[test]
    fn anything_else_is_left_to_rustc() {
        for code in [
            "a + 1",
            "1u8 + 2",
            "-1u8",
            "1 << 3",
            "f(1)",
            "b\"bytes\"",
            "\"a\" < \"b\"",
            "[1, 2]",
            "1.0 + 1",
        ] {
            assert_eq!(type_of(code), None, "{code}");
        }
    }

    #[test]
    fn counts_whole_identifiers() {
        assert_eq!(occurrences("let x = 1; let xy = x_1;", "x"), 1);
        assert_eq!(occurrences("let x = 1; println!(\"{x}\");", "x"), 2);
    }
}
