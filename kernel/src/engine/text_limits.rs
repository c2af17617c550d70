//! What the kernel agrees to parse. The kernel process holds the session (the vault, the
//! default client), and everything that reads a cell inside it — completeness, evcxr's
//! splitting of a cell into items and statements, its literal tier, rust-analyzer's completion
//! and hover — is recursive descent over a syntax tree on a thread with a fixed stack. A tree
//! deep enough overflows that stack, and a stack overflow ends the process, not the request.
//!
//! So every cell text is measured here first, by a lexer that cannot recurse: its size, and an
//! upper estimate of its syntax tree's depth ([`nesting`]). Text past either limit is refused
//! with a [`Refusal`] that names the limit, before any parser sees it; text within them is
//! parsed on threads whose stacks ([`EVALUATION_STACK`], [`ANALYSIS_STACK`]) hold the deepest
//! tree the limit admits, with room to spare (the property test in `hostile_text` runs every
//! reader at those sizes on trees at the limit).

use std::fmt;

/// The deepest nesting a cell may have ([`nesting`]'s measure). Python refuses 200 nested
/// parentheses; rustc has no limit of its own. Code people write stays far below (a long
/// formula or method chain is a few dozen levels).
pub const MAX_NESTING: usize = 1_000;

/// The largest cell the kernel runs, in bytes. Past this rustc and the kernel's own analysis
/// take minutes (data belongs in a file: `tensorbook::data` reads NumPy and IDX files).
pub const MAX_CELL_BYTES: usize = 1 << 20;

/// The largest cell the kernel analyses for completion and inspection: rust-analyzer answers a
/// Tab key on a cell this size in about a second.
pub const MAX_ANALYSIS_BYTES: usize = 256 << 10;

/// The stack of the thread that runs evcxr (cells, completion, hover). Only the pages a deep
/// tree touches are ever committed.
pub const EVALUATION_STACK: usize = 256 << 20;

/// The stack of the threads that only parse (is_complete) and of evcxr's analysis worker.
pub const ANALYSIS_STACK: usize = 256 << 20;

/// Why a text is not parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Nested deeper than [`MAX_NESTING`].
    TooDeep {
        /// Where it was first exceeded: 1-based line and column (in characters).
        line: usize,
        /// See `line`.
        column: usize,
    },
    /// Larger than the limit for what was asked.
    TooLarge {
        /// The text's size in bytes.
        bytes: usize,
        /// The limit in bytes.
        limit: usize,
        /// What the limit is for ("runs", "analyses for completion").
        what: &'static str,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::TooDeep { line, column } => write!(
                f,
                "the cell nests more than {MAX_NESTING} levels deep at line {line}, column {column} \
                 (every bracket, operator character and keyword counts one); tensorbook \
                 parses at most {MAX_NESTING} levels, so that no cell can overflow the \
                 kernel's stack: split the expression with `let`s"
            ),
            Refusal::TooLarge { bytes, limit, what } => write!(
                f,
                "the cell is {} ({bytes} bytes); tensorbook {what} cells of at most {} \
                 ({limit} bytes): load data from a file (tensorbook::data reads .npy and IDX) \
                 or split the cell",
                human(*bytes),
                human(*limit)
            ),
        }
    }
}

impl std::error::Error for Refusal {}

impl Refusal {
    /// The error class a cell reports for it.
    pub fn ename(&self) -> &'static str {
        match self {
            Refusal::TooDeep { .. } => "CellTooDeep",
            Refusal::TooLarge { .. } => "CellTooLarge",
        }
    }
}

fn human(bytes: usize) -> String {
    const MIB: f64 = (1 << 20) as f64;
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else {
        format!("{:.0} KiB", bytes as f64 / 1024.0)
    }
}

/// Checks a cell before it runs.
pub fn check_cell(code: &str) -> Result<(), Refusal> {
    check(code, MAX_CELL_BYTES, "runs")
}

/// Checks a cell before completion or inspection analyses it.
pub fn check_analysis(code: &str) -> Result<(), Refusal> {
    check(
        code,
        MAX_ANALYSIS_BYTES,
        "analyses (completion, inspection)",
    )
}

fn check(code: &str, limit: usize, what: &'static str) -> Result<(), Refusal> {
    if code.len() > limit {
        return Err(Refusal::TooLarge {
            bytes: code.len(),
            limit,
            what,
        });
    }
    match nesting(code, MAX_NESTING) {
        Depth::Within(_) => Ok(()),
        Depth::Exceeds { at } => {
            let (line, column) = line_and_column(code, at);
            Err(Refusal::TooDeep { line, column })
        }
    }
}

fn line_and_column(code: &str, byte: usize) -> (usize, usize) {
    let before = &code[..floor_char_boundary(code, byte)];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

/// The largest char boundary of `code` at or below `at` (clamped to its length).
pub fn floor_char_boundary(code: &str, at: usize) -> usize {
    let mut at = at.min(code.len());
    while !code.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The result of measuring a text's nesting against a limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// The deepest point was this deep.
    Within(usize),
    /// The limit was first passed at this byte offset.
    Exceeds {
        /// Byte offset of the token that passed it.
        at: usize,
    },
}

/// An upper estimate of how deep a parser's syntax tree for `code` gets, measured without
/// recursion, stopping at the first point deeper than `limit`.
///
/// The estimate is sound by construction rather than by a list of constructs: every token
/// that is not a name, a literal, a lifetime or a closing bracket counts one level (each
/// character of an operator, every keyword, every opening bracket), because each production
/// of Rust's grammar that can nest (expressions, types, patterns, closures, `fn`/`impl`/`dyn`
/// types, attributes, items) consumes at least one such token per level. Levels are only
/// given back where no production can still be open:
///
/// - a closing bracket returns to the level its opening bracket had (plus the group's one);
/// - `;` and `=>` end everything inside the innermost bracket (a statement, an array type's
///   element, a match arm's pattern);
/// - `,` ends everything since the innermost bracket *or* the last unbracketed list opener
///   (`<`, a single `|`, `where`) inside it, whichever came later, since generic arguments,
///   closure parameters and where-clauses are comma lists that stay open across the comma
///   (`|a, b| |c, d| ...`, `A<B, A<B, ...`);
/// - a name or literal right after a closed `{ }` starts the next statement (`if a { } x`),
///   unless it is `else` or `as`, which continue the expression.
///
/// It over-counts (a sum of many terms counts each `+`), which costs only a refusal of text
/// far past what people write. Strings, chars, comments and lifetimes are skipped as the Rust
/// lexer would, and unterminated ones end the text.
pub fn nesting(code: &str, limit: usize) -> Depth {
    let b = code.as_bytes();
    // Per open bracket: the depth below it and the comma floor of the bracket around it.
    let mut below: Vec<(usize, usize)> = Vec::new();
    let mut base = 0usize;
    let mut chain = 0usize;
    // Where a `,` leaves the chain: 0, or the chain just after the last list opener.
    let mut floor = 0usize;
    let mut deepest = 0usize;
    // A `{ }` group just closed: the next token decides whether the chain goes on.
    let mut after_block = false;
    let mut i = 0usize;
    macro_rules! level {
        ($at:expr) => {{
            let depth = base.saturating_add(chain);
            if depth > limit {
                return Depth::Exceeds { at: $at };
            }
            deepest = deepest.max(depth);
        }};
    }
    while i < b.len() {
        let c = b[i];
        let start = i;
        // Comments, whitespace and control characters are not tokens.
        if c.is_ascii_whitespace() || c.is_ascii_control() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut open = 1usize;
            i += 2;
            while i < b.len() && open > 0 {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    open += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    open -= 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
            continue;
        }
        let block_just_closed = std::mem::take(&mut after_block);
        if block_just_closed && starts_statement_after_block(code, i) {
            chain = 0;
            floor = 0;
        }
        match c {
            b'(' | b'[' | b'{' => {
                chain = chain.saturating_add(1);
                level!(start);
                below.push((base, floor));
                base = base.saturating_add(chain);
                chain = 0;
                floor = 0;
                i += 1;
            }
            b')' | b']' | b'}' => {
                // A stray closer is the parser's error to report, not a level.
                if let Some((outer, outer_floor)) = below.pop() {
                    chain = base - outer;
                    base = outer;
                    floor = outer_floor;
                }
                after_block = c == b'}';
                i += 1;
            }
            b';' => {
                chain = 0;
                floor = 0;
                i += 1;
            }
            b',' => {
                chain = floor;
                i += 1;
            }
            b'=' if b.get(i + 1) == Some(&b'>') => {
                chain = 0;
                floor = 0;
                i += 2;
            }
            b'"' => i = skip_string(b, i + 1),
            b'\'' => i = skip_char_or_lifetime(code, i),
            b'0'..=b'9' => {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                // A fraction, not a range or a method call on an integer; after a `.` it is a
                // tuple index (`x.0.1` is two field accesses, which the parser splits).
                let tuple_index = start > 0 && b[start - 1] == b'.';
                if !tuple_index
                    && b.get(i) == Some(&b'.')
                    && b.get(i + 1).is_some_and(u8::is_ascii_digit)
                {
                    i += 1;
                    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                        i += 1;
                    }
                }
            }
            _ if c == b'_' || c.is_ascii_alphabetic() || c >= 0x80 => {
                // Raw and byte strings start like identifiers.
                if let Some(end) = prefixed_string(b, i) {
                    i = end;
                    continue;
                }
                if c == b'r' && b.get(i + 1) == Some(&b'#') {
                    i += 2;
                }
                while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric() || b[i] >= 0x80)
                {
                    i += 1;
                }
                let word = &code[start..i];
                if is_keyword(word) {
                    chain = chain.saturating_add(1);
                    level!(start);
                    if word == "where" {
                        floor = chain;
                    }
                }
            }
            _ => {
                // Operators and other punctuation (ASCII): one level each character.
                i += 1;
                chain = chain.saturating_add(1);
                level!(start);
                // `<` and `|` alone (not `<<`, `<=`, `||`, `|=`) may open a comma list.
                let single = start.checked_sub(1).is_none_or(|p| b[p] != c)
                    && b.get(i) != Some(&c)
                    && b.get(i) != Some(&b'=');
                if (c == b'<' || c == b'|') && single {
                    floor = chain;
                }
            }
        }
    }
    Depth::Within(deepest)
}

/// Whether the token at `i`, right after a closed `{ }`, starts the next statement: a name, a
/// literal or a keyword other than `else` and `as` (which continue an `if` or a cast).
fn starts_statement_after_block(code: &str, i: usize) -> bool {
    let b = code.as_bytes();
    let c = b[i];
    let word_start = c == b'_' || c.is_ascii_alphanumeric() || c >= 0x80 || c == b'"';
    if !word_start {
        return false;
    }
    let end = (i..b.len())
        .find(|&j| !(b[j] == b'_' || b[j].is_ascii_alphanumeric() || b[j] >= 0x80))
        .unwrap_or(b.len());
    let word = &code[i..floor_char_boundary(code, end)];
    word != "else" && word != "as"
}

/// Rust's keywords (strict, reserved and the weak ones that open a production), each a level:
/// any of them can begin or continue a construct that nests (`fn() -> fn() -> ..`,
/// `static || static || ..`, `&mut &mut ..`, `else if ..`, `impl Fn() -> impl Fn() ..`).
fn is_keyword(word: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "as",
        "async",
        "await",
        "become",
        "box",
        "break",
        "const",
        "continue",
        "crate",
        "do",
        "dyn",
        "else",
        "enum",
        "extern",
        "final",
        "fn",
        "for",
        "gen",
        "if",
        "impl",
        "in",
        "let",
        "loop",
        "macro",
        "macro_rules",
        "match",
        "mod",
        "move",
        "mut",
        "override",
        "priv",
        "pub",
        "raw",
        "ref",
        "return",
        "safe",
        "static",
        "struct",
        "super",
        "trait",
        "try",
        "type",
        "typeof",
        "union",
        "unsafe",
        "unsized",
        "use",
        "virtual",
        "where",
        "while",
        "yield",
    ];
    KEYWORDS.contains(&word)
}

/// The end of a `"..."` whose body starts at `i` (the end of the text if unterminated).
fn skip_string(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of a raw (`r"..."`, `r#"..."#`), byte (`b"..."`, `br"..."`) or C (`c"..."`) string
/// starting at `i`, or None when no string starts there.
fn prefixed_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if matches!(b.get(j), Some(b'b' | b'c')) {
        j += 1;
    }
    let raw = b.get(j) == Some(&b'r');
    if raw {
        j += 1;
    }
    if j == i {
        return None;
    }
    if !raw {
        return (b.get(j) == Some(&b'"')).then(|| skip_string(b, j + 1));
    }
    let mut hashes = 0usize;
    while b.get(j) == Some(&b'#') {
        hashes += 1;
        j += 1;
    }
    if b.get(j) != Some(&b'"') {
        return None;
    }
    j += 1;
    while j < b.len() {
        if b[j] == b'"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&b'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(b.len())
}

/// The end of a char literal (`'x'`, `'\n'`, `'\u{1F600}'`) or a lifetime/label (`'a`) at `i`.
fn skip_char_or_lifetime(code: &str, i: usize) -> usize {
    let b = code.as_bytes();
    if b.get(i + 1) == Some(&b'\\') {
        // An escape: the literal ends at the next quote (bounded: escapes are short).
        let end = (i + 3..b.len().min(i + 16)).find(|&j| b[j] == b'\'');
        return end.map_or(i + 2, |j| j + 1);
    }
    let rest = &code[floor_char_boundary(code, i + 1)..];
    if let Some(ch) = rest.chars().next() {
        let after = i + 1 + ch.len_utf8();
        if b.get(after) == Some(&b'\'') {
            return after + 1;
        }
    }
    // A lifetime or label: its name follows.
    let mut j = i + 1;
    while j < b.len() && (b[j] == b'_' || b[j].is_ascii_alphanumeric() || b[j] >= 0x80) {
        j += 1;
    }
    j.max(i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(code: &str) -> usize {
        match nesting(code, usize::MAX) {
            Depth::Within(d) => d,
            Depth::Exceeds { .. } => unreachable!("no limit"),
        }
    }

    #[test]
    fn ordinary_code_is_shallow() {
        assert!(depth("let x = 1;") <= 2);
        assert!(depth("fn f(a: i32) -> i32 { a + 1 }\nf(2)") <= 6);
        let items: String = (0..2000)
            .map(|i| format!("fn f{i}() -> i32 {{ if true {{ 1 }} else {{ 2 }} }}\n"))
            .collect();
        assert!(depth(&items) <= 10, "{}", depth(&items));
        let statements: String = (0..2000).map(|i| format!("if x {{ y({i}); }}\n")).collect();
        assert!(depth(&statements) <= 10, "{}", depth(&statements));
        let array = format!("let v = vec![{}];", "1.5, ".repeat(100_000));
        assert!(depth(&array) <= 4);
        // Brackets inside strings, chars and comments are not code.
        assert!(depth("let s = \"((((((((\"; let c = '('; // ((((\n/* ((( /* ( */ */") <= 2);
        assert!(depth("let r = r#\"(((\"#; let b = b\"(((\"; let l: &'a str = x;") <= 4);
    }

    #[test]
    fn every_kind_of_depth_counts() {
        for (open, close) in [("(", ")"), ("[", "]"), ("{", "}")] {
            let code = format!("{}1{}", open.repeat(3000), close.repeat(3000));
            assert!(depth(&code) >= 3000, "{open}");
        }
        for op in ["-", "!", "&", "*", "return ", "& mut "] {
            let code = format!("let x = {}1;", op.repeat(3000));
            assert!(depth(&code) >= 3000, "{op:?}");
        }
        for chain in [" + 1", ".f()", "?", "()", "[0]", "::a", " as i32"] {
            let code = format!("let x = a{};", chain.repeat(3000));
            assert!(depth(&code) >= 3000, "{chain:?}");
        }
        let else_ifs = format!(
            "if a {{ 1 }}{} else {{ 2 }}",
            " else if b { 1 }".repeat(3000)
        );
        assert!(depth(&else_ifs) >= 3000);
        let types = format!("let v: {}i32{} = x;", "Vec<".repeat(3000), ">".repeat(3000));
        assert!(depth(&types) >= 3000);
        // Unclosed brackets (a completion inside them) count as well.
        assert!(depth(&"(".repeat(20_000)) >= 20_000);
    }

    #[test]
    fn refusals_name_the_limit_and_the_place() {
        let deep = format!("let d = {}1{};", "(".repeat(3000), ")".repeat(3000));
        let refusal = check_cell(&deep).unwrap_err();
        assert_eq!(refusal.ename(), "CellTooDeep");
        let text = refusal.to_string();
        assert!(text.contains(&MAX_NESTING.to_string()), "{text}");
        assert!(text.contains("line 1"), "{text}");
        let big = "let big = 1;\n".repeat(400_000);
        let refusal = check_cell(&big).unwrap_err();
        assert_eq!(refusal.ename(), "CellTooLarge");
        assert!(refusal.to_string().contains("1.0 MiB"), "{refusal}");
        assert!(check_cell("let x = 1;").is_ok());
        assert!(check_analysis(&"x".repeat(MAX_ANALYSIS_BYTES + 1)).is_err());
        let near = format!(
            "{}1{}",
            "(".repeat(MAX_NESTING - 2),
            ")".repeat(MAX_NESTING - 2)
        );
        assert!(check_cell(&near).is_ok());
    }

    #[test]
    fn odd_text_never_panics() {
        for code in [
            "'",
            "'\\",
            "'\\u{",
            "r#",
            "r#\"",
            "br##\"x\"#",
            "b'",
            "\"\\",
            "/*",
            "/* /*",
            "é'",
            "'é",
            "'é'",
            "\u{0}\u{1}\u{7f}",
            "))))]]]}}}",
            "c\"",
            "1.",
            "1..2",
            "x.0.1",
        ] {
            let _ = nesting(code, MAX_NESTING);
            let _ = check_cell(code);
        }
        assert_eq!(line_and_column("ab\ncé(", 6), (2, 3));
    }
}
