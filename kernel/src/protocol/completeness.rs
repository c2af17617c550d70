//! `is_complete_request`: is a cell ready to run? A delimiter scan that understands strings,
//! raw strings, chars, lifetimes and nested comments finds open or mismatched brackets; syn then
//! parses balanced code as block statements, where running out of input means "incomplete".
//! syn recurses: balanced code goes to it only within the kernel's limits
//! ([`text_limits`]), which the kernel would refuse to run anyway ("invalid").

use syn::parse::Parser;

use crate::engine::text_limits;

/// The answer to `is_complete_request`.
#[derive(Debug, PartialEq, Eq)]
pub enum Completeness {
    /// Ready to run.
    Complete,
    /// More input is needed; the indent for the next line.
    Incomplete(String),
    /// It can never become valid.
    Invalid,
}

enum Scan {
    Open(usize),
    Mismatch,
    Unterminated,
}

fn scan(code: &str) -> Scan {
    let b = code.as_bytes();
    let mut stack = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 1;
                i += 2;
                while depth > 0 {
                    if i + 1 >= b.len() {
                        return Scan::Unterminated;
                    }
                    match (b[i], b[i + 1]) {
                        (b'/', b'*') => {
                            depth += 1;
                            i += 1;
                        }
                        (b'*', b'/') => {
                            depth -= 1;
                            i += 1;
                        }
                        _ => {}
                    }
                    i += 1;
                }
                continue;
            }
            b'r' if matches!(b.get(i + 1), Some(b'"') | Some(b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                match code[j + 1..].find(std::str::from_utf8(&close).unwrap_or("\"")) {
                    Some(end) => i = j + 1 + end + close.len(),
                    None => return Scan::Unterminated,
                }
                continue;
            }
            b'"' => {
                i += 1;
                loop {
                    match b.get(i) {
                        None => return Scan::Unterminated,
                        Some(b'\\') => i += 2,
                        Some(b'"') => break,
                        _ => i += 1,
                    }
                }
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a): skip only chars.
                if b.get(i + 1) == Some(&b'\\') {
                    if let Some(end) = code[i + 2..].find('\'') {
                        i += 2 + end;
                    }
                } else if let Some(c) = code[i + 1..].chars().next() {
                    if code[i + 1 + c.len_utf8()..].starts_with('\'') {
                        i += 1 + c.len_utf8();
                    }
                }
            }
            open @ (b'(' | b'[' | b'{') => stack.push(open),
            close @ (b')' | b']' | b'}') => {
                let want = match close {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                if stack.pop() != Some(want) {
                    return Scan::Mismatch;
                }
            }
            _ => {}
        }
        i += 1;
    }
    Scan::Open(stack.len())
}

/// The indent suggested for the next line stops growing here (a frontend pastes it).
const MAX_INDENT_LEVELS: usize = 16;

/// Decides whether `code` is a complete cell.
pub fn is_complete(code: &str) -> Completeness {
    let trimmed = code.trim();
    if trimmed.is_empty() || trimmed.starts_with(':') {
        return Completeness::Complete;
    }
    match scan(code) {
        Scan::Mismatch => Completeness::Invalid,
        Scan::Unterminated => Completeness::Incomplete(String::new()),
        Scan::Open(depth) if depth > 0 => {
            Completeness::Incomplete("    ".repeat(depth.min(MAX_INDENT_LEVELS)))
        }
        Scan::Open(_) if text_limits::check_cell(code).is_err() => Completeness::Invalid,
        Scan::Open(_) => {
            // Commands (`:dep ...`) may precede the code; syn only sees the Rust.
            let rust: String = code
                .lines()
                .filter(|l| !l.trim_start().starts_with(':'))
                .collect::<Vec<_>>()
                .join("\n");
            match syn::Block::parse_within.parse_str(&rust) {
                Ok(_) => Completeness::Complete,
                Err(e) if e.to_string().contains("end of input") => {
                    Completeness::Incomplete(String::new())
                }
                Err(_) => Completeness::Invalid,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(is_complete("let x = 1;"), Completeness::Complete);
        assert_eq!(is_complete("x + 1"), Completeness::Complete);
        assert_eq!(
            is_complete("fn f() {\n    1\n}\nf()"),
            Completeness::Complete
        );
        assert_eq!(is_complete(":dep rand = \"0.9\""), Completeness::Complete);
        assert_eq!(
            is_complete("fn f() {"),
            Completeness::Incomplete("    ".into())
        );
        assert_eq!(
            is_complete("let v = vec![(1,"),
            Completeness::Incomplete("        ".into())
        );
        assert_eq!(
            is_complete("let s = \"abc"),
            Completeness::Incomplete(String::new())
        );
        assert_eq!(
            is_complete("/* open"),
            Completeness::Incomplete(String::new())
        );
        assert_eq!(
            is_complete("let x ="),
            Completeness::Incomplete(String::new())
        );
        assert_eq!(is_complete("let x = );"), Completeness::Invalid);
        assert_eq!(is_complete("let x = 1 1;"), Completeness::Invalid);
        assert_eq!(
            is_complete("let c = '{'; let s = \"}\";"),
            Completeness::Complete
        );
        assert_eq!(
            is_complete("fn f<'a>(x: &'a str) -> &'a str { x }"),
            Completeness::Complete
        );
        assert_eq!(
            is_complete("let r = r#\"a \" }\"#;"),
            Completeness::Complete
        );
    }

    #[test]
    fn deep_or_huge_cells_are_answered_without_recursion() {
        let open = "(".repeat(20_000);
        assert_eq!(
            is_complete(&open),
            Completeness::Incomplete("    ".repeat(MAX_INDENT_LEVELS))
        );
        let balanced = format!("let d = {}1{};", "(".repeat(20_000), ")".repeat(20_000));
        assert_eq!(is_complete(&balanced), Completeness::Invalid);
        let huge = "let big = 1;\n".repeat(400_000);
        assert_eq!(is_complete(&huge), Completeness::Invalid);
    }
}
