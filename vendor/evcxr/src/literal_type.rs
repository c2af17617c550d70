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
            LiteralKind::IntNumber(number) => known(number.suffix().unwrap_or("i32"))?,
            LiteralKind::FloatNumber(number) => known(number.suffix().unwrap_or("f64"))?,
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

/// `suffix` where it names a numeric type (rustc rejects any other, with its own error).
fn known(suffix: &str) -> Option<String> {
    is_number(suffix).then(|| suffix.to_owned())
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

/// A literal binding's value, computed here by Rust's rules for the literal tier (patch 11,
/// `crate::eval_context::literal_bindings`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// Any integer type, kept within that type's range at every step.
    Int(i128),
    F32(f32),
    F64(f64),
    Bool(bool),
    Char(char),
    Str(String),
}

impl Value {
    /// The value as the tier's setter library reads it back: integers in decimal, floats as
    /// their bits in hex (exact), chars as their code point, strings as hex of their UTF-8.
    pub(crate) fn encode(&self) -> String {
        match self {
            Value::Int(v) => v.to_string(),
            Value::F32(v) => format!("{:x}", v.to_bits()),
            Value::F64(v) => format!("{:x}", v.to_bits()),
            Value::Bool(v) => v.to_string(),
            Value::Char(v) => u32::from(*v).to_string(),
            Value::Str(v) => v.bytes().map(|b| format!("{b:02x}")).collect(),
        }
    }
}

/// The type and value of `expr` where `literal_type` gives a type and the value can be
/// computed exactly as the compiled cell would have it; `None` (compile instead) for anything
/// rustc would reject or that would panic: overflow at any step, division by zero, a literal
/// out of its type's range (`-128i8` included, which rustc accepts: it is left to rustc).
pub(crate) fn literal_value(expr: &ast::Expr) -> Option<(String, Value)> {
    let ty = literal_type(expr)?;
    let value = evaluate(expr, &ty)?;
    Some((ty, value))
}

fn evaluate(expr: &ast::Expr, ty: &str) -> Option<Value> {
    match expr {
        ast::Expr::Literal(literal) => match literal.kind() {
            LiteralKind::IntNumber(number) => {
                let value = number.value().ok()?;
                match ty {
                    "f32" if number.radix() as u32 == 10 => Some(Value::F32(value as f32)),
                    "f64" if number.radix() as u32 == 10 => Some(Value::F64(value as f64)),
                    _ => int(i128::try_from(value).ok()?, ty),
                }
            }
            LiteralKind::FloatNumber(number) => {
                let text = number.value_string();
                match ty {
                    "f32" => text.parse().ok().map(Value::F32),
                    "f64" => text.parse().ok().map(Value::F64),
                    _ => None,
                }
            }
            LiteralKind::String(string) => Some(Value::Str(string.value().ok()?.into_owned())),
            LiteralKind::Bool(value) => Some(Value::Bool(value)),
            LiteralKind::Char(c) => Some(Value::Char(c.value().ok()?)),
            LiteralKind::Byte(byte) => Some(Value::Int(i128::from(byte.value().ok()?))),
            LiteralKind::ByteString(_) | LiteralKind::CString(_) => None,
        },
        ast::Expr::ParenExpr(paren) => evaluate(&paren.expr()?, ty),
        ast::Expr::PrefixExpr(prefix) => {
            let operand_type = literal_type(&prefix.expr()?)?;
            let operand = evaluate(&prefix.expr()?, &operand_type)?;
            match (prefix.op_kind()?, operand) {
                (UnaryOp::Neg, Value::Int(v)) => int(v.checked_neg()?, ty),
                (UnaryOp::Neg, Value::F32(v)) => Some(Value::F32(-v)),
                (UnaryOp::Neg, Value::F64(v)) => Some(Value::F64(-v)),
                (UnaryOp::Not, Value::Bool(v)) => Some(Value::Bool(!v)),
                (UnaryOp::Not, Value::Int(v)) if ty.starts_with('i') => int(!v, ty),
                (UnaryOp::Not, Value::Int(v)) => int(range(ty)?.1.checked_sub(v)?, ty),
                _ => None,
            }
        }
        ast::Expr::BinExpr(binary) => {
            let operand_type = literal_type(&binary.lhs()?)?;
            let left = evaluate(&binary.lhs()?, &operand_type)?;
            let right = evaluate(&binary.rhs()?, &operand_type)?;
            match binary.op_kind()? {
                BinaryOp::ArithOp(op) => arithmetic(op, left, right, ty),
                BinaryOp::CmpOp(op) => {
                    let ordering = match (&left, &right) {
                        (Value::Int(a), Value::Int(b)) => a.partial_cmp(b),
                        (Value::F32(a), Value::F32(b)) => a.partial_cmp(b),
                        (Value::F64(a), Value::F64(b)) => a.partial_cmp(b),
                        (Value::Bool(a), Value::Bool(b)) => a.partial_cmp(b),
                        (Value::Char(a), Value::Char(b)) => a.partial_cmp(b),
                        _ => return None,
                    };
                    use ra_ap_syntax::ast::CmpOp;
                    use std::cmp::Ordering as O;
                    Some(Value::Bool(match (op, ordering) {
                        (CmpOp::Eq { negated }, o) => (o == Some(O::Equal)) != negated,
                        // NaN compares false with everything.
                        (CmpOp::Ord { .. }, None) => false,
                        (CmpOp::Ord { ordering, strict }, Some(o)) => match ordering {
                            ast::Ordering::Less => o == O::Less || (!strict && o == O::Equal),
                            ast::Ordering::Greater => o == O::Greater || (!strict && o == O::Equal),
                        },
                    }))
                }
                BinaryOp::LogicOp(op) => match (left, right) {
                    (Value::Bool(a), Value::Bool(b)) => Some(Value::Bool(match op {
                        ast::LogicOp::And => a && b,
                        ast::LogicOp::Or => a || b,
                    })),
                    _ => None,
                },
                BinaryOp::Assignment { .. } => None,
            }
        }
        _ => None,
    }
}

fn arithmetic(op: ArithOp, left: Value, right: Value, ty: &str) -> Option<Value> {
    match (left, right) {
        (Value::Int(a), Value::Int(b)) => int(
            match op {
                ArithOp::Add => a.checked_add(b)?,
                ArithOp::Sub => a.checked_sub(b)?,
                ArithOp::Mul => a.checked_mul(b)?,
                ArithOp::Div => a.checked_div(b)?,
                ArithOp::Rem => a.checked_rem(b)?,
                _ => return None,
            },
            ty,
        ),
        (Value::F32(a), Value::F32(b)) => Some(Value::F32(match op {
            ArithOp::Add => a + b,
            ArithOp::Sub => a - b,
            ArithOp::Mul => a * b,
            ArithOp::Div => a / b,
            ArithOp::Rem => a % b,
            _ => return None,
        })),
        (Value::F64(a), Value::F64(b)) => Some(Value::F64(match op {
            ArithOp::Add => a + b,
            ArithOp::Sub => a - b,
            ArithOp::Mul => a * b,
            ArithOp::Div => a / b,
            ArithOp::Rem => a % b,
            _ => return None,
        })),
        _ => None,
    }
}

/// `value` as an integer of type `ty`, or `None` where it lies outside that type's range.
fn int(value: i128, ty: &str) -> Option<Value> {
    let (min, max) = range(ty)?;
    (min..=max).contains(&value).then_some(Value::Int(value))
}

/// The range of an integer type; `u128` above `i128::MAX` is left to rustc.
fn range(ty: &str) -> Option<(i128, i128)> {
    Some(match ty {
        "i8" => (i8::MIN.into(), i8::MAX.into()),
        "i16" => (i16::MIN.into(), i16::MAX.into()),
        "i32" => (i32::MIN.into(), i32::MAX.into()),
        "i64" => (i64::MIN.into(), i64::MAX.into()),
        "i128" => (i128::MIN, i128::MAX),
        "isize" => (isize::MIN as i128, isize::MAX as i128),
        "u8" => (0, u8::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        "u64" => (0, u64::MAX.into()),
        "u128" => (0, i128::MAX),
        "usize" => (0, usize::MAX as i128),
        _ => return None,
    })
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

    fn value_of(code: &str) -> Option<(String, Value)> {
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
        literal_value(&expr)
    }

    #[test]
    fn values_follow_rusts_arithmetic() {
        let int = |ty: &str, v: i128| Some((ty.to_owned(), Value::Int(v)));
        assert_eq!(value_of("3 + 1"), int("i32", 4));
        assert_eq!(value_of("-7 / 2"), int("i32", -3));
        assert_eq!(value_of("-7 % 2"), int("i32", -1));
        assert_eq!(value_of("0xff_u8"), int("u8", 255));
        assert_eq!(value_of("!0u8"), int("u8", 255));
        assert_eq!(value_of("!5"), int("i32", -6));
        assert_eq!(value_of("b'a'"), int("u8", 97));
        assert_eq!(
            value_of("0.1 + 0.2"),
            Some(("f64".into(), Value::F64(0.1 + 0.2)))
        );
        assert_eq!(
            value_of("0.1f32 * 3.0f32"),
            Some(("f32".into(), Value::F32(0.1f32 * 3.0f32)))
        );
        assert_eq!(value_of("2f64"), Some(("f64".into(), Value::F64(2.0))));
        assert_eq!(
            value_of("\"a\\tb\""),
            Some(("&str".into(), Value::Str("a\tb".into())))
        );
        assert_eq!(
            value_of("1.0 < 2.0 || false"),
            Some(("bool".into(), Value::Bool(true)))
        );
        assert_eq!(
            value_of("'\\u{e9}'"),
            Some(("char".into(), Value::Char('é')))
        );
    }

    #[test]
    fn what_rustc_would_reject_or_panic_on_is_left_to_it() {
        for code in [
            "2147483647 + 1",
            "(2_000_000_000 + 2_000_000_000) - 2_000_000_000",
            "1 / 0",
            "1 % 0",
            "-1u8",
            "256u8",
            "-128i8",
            "1u7",
            "340282366920938463463374607431768211455u128",
        ] {
            assert_eq!(value_of(code), None, "{code}");
        }
    }

    #[test]
    fn values_are_encoded_exactly() {
        assert_eq!(Value::Int(-3).encode(), "-3");
        assert_eq!(Value::F64(0.5).encode(), format!("{:x}", 0.5f64.to_bits()));
        assert_eq!(Value::Char('é').encode(), "233");
        assert_eq!(Value::Str("a\n".into()).encode(), "610a");
    }

    #[test]
    fn counts_whole_identifiers() {
        assert_eq!(occurrences("let x = 1; let xy = x_1;", "x"), 1);
        assert_eq!(occurrences("let x = 1; println!(\"{x}\");", "x"), 2);
    }
}
