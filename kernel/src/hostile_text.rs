//! Every function of the kernel that reads cell text, fed hostile text: deep nesting of every
//! kind the limits count, random brackets, unicode and control characters, huge sizes, and
//! cursors past the end or inside a character. Each reader runs on a thread with the stack the
//! kernel gives it (`text_limits::EVALUATION_STACK`, `ANALYSIS_STACK`), so a stack overflow
//! here is one the kernel would have had: it aborts this test process, and the test fails.
//!
//! The readers: the limits themselves, `is_complete` (a scan, then syn), the session-command
//! parser, the cursor arithmetic of complete and inspect, the history search's glob, and, for
//! every text the limits admit, rust-analyzer's parser (the one evcxr splits cells with, the
//! first step of a cell, a completion and a hover) with a walk over the whole tree.
//! rust-analyzer's completion and hover themselves need a session: `tests/test_hostile.py`
//! drives them through the kernel.

use proptest::prelude::*;

use crate::engine::commands;
use crate::engine::text_limits::{self, Refusal, ANALYSIS_STACK, EVALUATION_STACK, MAX_NESTING};
use crate::protocol::completeness::is_complete;
use crate::protocol::history::glob;
use crate::protocol::requests::{byte_offset, char_offset, identifier_end};

/// Runs `f` on a fresh thread with `stack` bytes of stack, as the kernel runs its readers.
fn on_stack<T: Send + 'static>(stack: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(f)
        .expect("a thread")
        .join()
        .expect("a reader panicked")
}

/// Everything the kernel does with a cell's text before evcxr compiles it, and with a
/// completion or inspection request's cursor.
fn read_everything(code: String, cursor: usize) {
    let code_for_parse = code.clone();
    let admitted = on_stack(EVALUATION_STACK, move || {
        let cell = text_limits::check_cell(&code_for_parse);
        let analysis = text_limits::check_analysis(&code_for_parse);
        let _ = commands::parse(&code_for_parse);
        let byte = byte_offset(&code_for_parse, cursor);
        assert!(code_for_parse.is_char_boundary(byte));
        assert!(char_offset(&code_for_parse, byte) <= code_for_parse.chars().count());
        let end = identifier_end(&code_for_parse, byte);
        assert!(code_for_parse.is_char_boundary(end));
        let floor = text_limits::floor_char_boundary(&code_for_parse, cursor);
        assert!(code_for_parse.is_char_boundary(floor));
        if cell.is_ok() {
            parse_like_evcxr(&code_for_parse);
        }
        (cell, analysis)
    });
    let code_for_syn = code.clone();
    on_stack(ANALYSIS_STACK, move || {
        let _ = is_complete(&code_for_syn);
        // A history search pattern is request text too (bounded before it is matched).
        let pattern: String = code_for_syn.chars().take(4096).collect();
        let _ = glob(&pattern, &code_for_syn);
    });
    if let (Err(refusal), _) | (_, Err(refusal)) = admitted {
        let text = refusal.to_string();
        match refusal {
            Refusal::TooDeep { .. } => assert!(text.contains(&MAX_NESTING.to_string()), "{text}"),
            Refusal::TooLarge { limit, .. } => assert!(text.contains(&limit.to_string()), "{text}"),
        }
    }
}

/// What evcxr does first with a cell (and completion and hover with the cell around the
/// cursor): rust-analyzer's parser, then walks over the tree's items and statements.
fn parse_like_evcxr(code: &str) {
    let parsed = ra_ap_syntax::SourceFile::parse(code, ra_ap_syntax::Edition::Edition2021);
    let tree = parsed.syntax_node();
    let mut nodes = 0usize;
    for _ in tree.descendants() {
        nodes += 1;
    }
    assert!(nodes > 0);
    // A cell body as the wrapper function evcxr compiles it in.
    let wrapped = format!("fn evcxr_analysis_wrapper() {{\n{code}\n}}");
    let parsed = ra_ap_syntax::SourceFile::parse(&wrapped, ra_ap_syntax::Edition::Edition2021);
    let _ = parsed.errors().len();
    drop(parsed);
}

/// The constructs that make syntax trees deep, each `depth` levels deep.
fn deep(kind: usize, depth: usize) -> String {
    let rep = |s: &str| s.repeat(depth);
    match kind % 16 {
        0 => format!("let d = {}1{};", rep("("), rep(")")),
        1 => format!("let d = {}1{};", rep("["), rep("]")),
        2 => format!("let d = {}1{};", rep("{"), rep("}")),
        3 => format!("let d = {}1;", rep("-")),
        4 => format!("let d = {}true;", rep("!")),
        5 => format!("let d = {}x;", rep("&")),
        6 => format!("let d = 1{};", rep(" + 1")),
        7 => format!("let d = x{};", rep(".clone()")),
        8 => format!("let d = f{};", rep("()")),
        9 => format!("let d = a{};", rep("::b")),
        10 => format!("let d: {}i32{} = 1;", rep("Vec<"), rep(">")),
        11 => format!(
            "let d = if a {{ 1 }}{} else {{ 2 }};",
            rep(" else if b { 1 }")
        ),
        12 => format!("let d = {}1;", rep("|x| ")),
        13 => format!("fn f() {{ {}1 }}", rep("return ")),
        14 => format!("let d = x{};", rep("?")),
        _ => format!("let d = 1{};", rep(" as i64")),
    }
}

#[test]
fn trees_at_the_limit_are_read_and_past_it_refused() {
    for kind in 0..16 {
        // The deepest text of this kind the limits admit, and the shallowest they refuse.
        let mut low = 1;
        let mut high = MAX_NESTING + 1;
        assert!(
            text_limits::check_cell(&deep(kind, high)).is_err(),
            "kind {kind}: {} levels admitted",
            high
        );
        while high - low > 1 {
            let mid = (low + high) / 2;
            if text_limits::check_cell(&deep(kind, mid)).is_ok() {
                low = mid;
            } else {
                high = mid;
            }
        }
        let admitted = deep(kind, low);
        assert!(text_limits::check_cell(&admitted).is_ok());
        let cursor = admitted.chars().count() / 2;
        read_everything(admitted, cursor);
        read_everything(deep(kind, 20_000), 3);
    }
}

#[test]
fn the_issues_inputs_are_answered() {
    let nested = format!("let d = {}1{};", "(".repeat(3000), ")".repeat(3000));
    read_everything(nested, 10);
    read_everything("(".repeat(20_000), 20_000);
    read_everything("let big = 1;\n".repeat(400_000), 7);
    read_everything("let x = 1;".into(), 1_010);
    read_everything("let é = 1; é".into(), 12);
    read_everything("let s = \"a\u{0}b\";".into(), 9);
}

/// A nonterminal of the grammar below: the kinds of syntax that nest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A statement or an item (what a cell is made of).
    Item,
    /// An expression.
    Expr,
    /// A type.
    Type,
    /// A pattern.
    Pat,
    /// An `if` that can follow `else`.
    If,
}

/// One recursive production of Rust's grammar: `before`, then a `hole` of some kind, then
/// `after`, every other part of the production filled with a leaf.
struct Production {
    kind: Kind,
    before: &'static str,
    hole: Kind,
    after: &'static str,
}

const fn p(kind: Kind, before: &'static str, hole: Kind, after: &'static str) -> Production {
    Production {
        kind,
        before,
        hole,
        after,
    }
}

/// The productions through which Rust's syntax nests: every way an expression, a type, a
/// pattern or an item holds another one (brackets, prefix, postfix and binary operators,
/// closures of every kind, `fn`/`impl`/`dyn` types, generic arguments, patterns, attributes,
/// items inside items, `else if`). Cells are generated from them by [`grammar_text`].
const GRAMMAR: &[Production] = {
    use Kind::*;
    &[
        // Statements and items.
        p(Item, "let ", Pat, " = 1;"),
        p(Item, "let x: ", Type, " = y;"),
        p(Item, "let x = ", Expr, ";"),
        p(Item, "", Expr, ";"),
        p(Item, "fn f(a: ", Type, ") {}"),
        p(Item, "fn f() -> ", Type, " { loop {} }"),
        p(Item, "fn f() { ", Item, " }"),
        p(Item, "fn f() -> i32 { ", Expr, " }"),
        p(Item, "fn f<T>() where T: Tr<", Type, "> {}"),
        p(Item, "const C: ", Type, " = 1;"),
        p(Item, "static S: i32 = ", Expr, ";"),
        p(Item, "#[a] ", Item, ""),
        p(Item, "#[a(", Expr, ")] fn f() {}"),
        p(Item, "pub(crate) ", Item, ""),
        p(Item, "mod m { ", Item, " }"),
        p(Item, "impl S { ", Item, " }"),
        p(Item, "impl<T: Tr<", Type, ">> S<T> {}"),
        p(Item, "trait Tr { fn f(&self) -> ", Type, "; }"),
        p(Item, "type A = ", Type, ";"),
        p(Item, "struct S { a: ", Type, " }"),
        p(Item, "struct S(", Type, ");"),
        p(Item, "enum En { A(", Type, "), B }"),
        p(Item, "macro_rules! m { () => { ", Expr, " } }"),
        p(Item, "extern \"C\" { fn f(a: ", Type, "); }"),
        p(Item, "{ ", Item, " }"),
        p(Item, "unsafe { ", Item, " }"),
        p(Item, "x.f(|| { ", Item, " });"),
        // Expressions.
        p(Expr, "(", Expr, ")"),
        p(Expr, "[", Expr, ", 1]"),
        p(Expr, "[1, ", Expr, "]"),
        p(Expr, "[", Expr, "; 3]"),
        p(Expr, "-", Expr, ""),
        p(Expr, "!", Expr, ""),
        p(Expr, "&", Expr, ""),
        p(Expr, "&&", Expr, ""),
        p(Expr, "&mut ", Expr, ""),
        p(Expr, "*", Expr, ""),
        p(Expr, "1 + ", Expr, ""),
        p(Expr, "", Expr, " + 1"),
        p(Expr, "a = ", Expr, ""),
        p(Expr, "a += ", Expr, ""),
        p(Expr, "1..", Expr, ""),
        p(Expr, "f(", Expr, ")"),
        p(Expr, "f(1, ", Expr, ")"),
        p(Expr, "x.f(", Expr, ")"),
        p(Expr, "", Expr, ".f()"),
        p(Expr, "", Expr, "?"),
        p(Expr, "", Expr, " as i64"),
        p(Expr, "", Expr, "[0]"),
        p(Expr, "", Expr, ".0"),
        p(Expr, "", Expr, ".await"),
        p(Expr, "|x| ", Expr, ""),
        p(Expr, "|a, b| ", Expr, ""),
        p(Expr, "|(", Pat, ")| 1"),
        p(Expr, "|a: ", Type, "| 1"),
        p(Expr, "|| -> ", Type, " { 1 }"),
        p(Expr, "move || ", Expr, ""),
        p(Expr, "static || ", Expr, ""),
        p(Expr, "async move || ", Expr, ""),
        p(Expr, "async move { ", Expr, " }"),
        p(Expr, "if ", Expr, " { 1 } else { 2 }"),
        p(Expr, "if a { ", Expr, " } else { 2 }"),
        p(Expr, "if a { 1 } else ", If, ""),
        p(Expr, "if let ", Pat, " = x { 1 }"),
        p(Expr, "if let Some(x) = a && let ", Pat, " = b { 1 }"),
        p(Expr, "match ", Expr, " { _ => 1 }"),
        p(Expr, "match x { ", Pat, " => 1, _ => 2 }"),
        p(Expr, "match x { _ => ", Expr, ", }"),
        p(Expr, "return ", Expr, ""),
        p(Expr, "break ", Expr, ""),
        p(Expr, "yield ", Expr, ""),
        p(Expr, "loop { ", Expr, " }"),
        p(Expr, "'a: loop { break 'a ", Expr, " }"),
        p(Expr, "while ", Expr, " {}"),
        p(Expr, "for x in ", Expr, " {}"),
        p(Expr, "unsafe { ", Expr, " }"),
        p(Expr, "const { ", Expr, " }"),
        p(Expr, "{ let y = 1; ", Expr, " }"),
        p(Expr, "f::<", Type, ">(1)"),
        p(Expr, "<", Type, " as Tr>::f()"),
        p(Expr, "S { a: ", Expr, " }"),
        p(Expr, "S { a: 1, b: ", Expr, ", ..d }"),
        p(Expr, "&raw const ", Expr, ""),
        p(Expr, "vec![", Expr, "]"),
        p(Expr, "x as ", Type, ""),
        p(If, "if b { 1 } else ", If, ""),
        // Types.
        p(Type, "&", Type, ""),
        p(Type, "&&", Type, ""),
        p(Type, "&'a ", Type, ""),
        p(Type, "&mut ", Type, ""),
        p(Type, "*const ", Type, ""),
        p(Type, "*mut ", Type, ""),
        p(Type, "[", Type, "]"),
        p(Type, "[", Type, "; 3]"),
        p(Type, "[u8; ", Expr, "]"),
        p(Type, "(", Type, ",)"),
        p(Type, "(i32, ", Type, ")"),
        p(Type, "Vec<", Type, ">"),
        p(Type, "HashMap<i32, ", Type, ">"),
        p(Type, "HashMap<", Type, ", i32>"),
        p(Type, "fn(", Type, ")"),
        p(Type, "fn() -> ", Type, ""),
        p(Type, "fn(i32, ", Type, ") -> i32"),
        p(Type, "unsafe extern \"C\" fn() -> ", Type, ""),
        p(Type, "impl Fn(", Type, ") -> i32"),
        p(Type, "impl Fn() -> ", Type, ""),
        p(Type, "dyn Fn() -> ", Type, ""),
        p(Type, "Box<dyn Fn(i32, ", Type, ")>"),
        p(Type, "&dyn Iterator<Item = ", Type, ">"),
        p(Type, "impl Iterator<Item = ", Type, "> + Send"),
        p(Type, "for<'a> fn(&'a ", Type, ")"),
        p(Type, "<", Type, " as Tr>::A"),
        p(Type, "Foo<{ ", Expr, " }>"),
        // Patterns.
        p(Pat, "&", Pat, ""),
        p(Pat, "&mut ", Pat, ""),
        p(Pat, "(", Pat, ",)"),
        p(Pat, "(x, ", Pat, ")"),
        p(Pat, "[", Pat, ", ..]"),
        p(Pat, "[x, ", Pat, "]"),
        p(Pat, "S { a: ", Pat, " }"),
        p(Pat, "S { a: 1, b: ", Pat, ", .. }"),
        p(Pat, "Some(", Pat, ")"),
        p(Pat, "Ok(x) | Err(", Pat, ")"),
        p(Pat, "A | ", Pat, ""),
        p(Pat, "x @ ", Pat, ""),
        p(Pat, "ref mut x @ ", Pat, ""),
        p(Pat, "box ", Pat, ""),
    ]
};

/// What ends a spine of productions of each kind.
fn leaf(kind: Kind) -> &'static str {
    match kind {
        Kind::Item => "struct L;",
        Kind::Expr => "1",
        Kind::Type => "i32",
        Kind::Pat => "x",
        Kind::If => "if c { 1 } else { 2 }",
    }
}

/// The shortest way from a cell's items to a hole of `kind`.
fn entry(kind: Kind) -> Vec<&'static Production> {
    let step = |from: Kind, to: Kind| {
        GRAMMAR
            .iter()
            .find(|p| p.kind == from && p.hole == to)
            .expect("the grammar reaches every kind")
    };
    match kind {
        Kind::Item => Vec::new(),
        Kind::If => vec![step(Kind::Item, Kind::Expr), step(Kind::Expr, Kind::If)],
        other => vec![step(Kind::Item, other)],
    }
}

/// A cycle of one to four productions (each one's hole the next one's kind, the last one's
/// the first one's), or `None` when the random walk from `seed` did not close.
fn cycle(rng: &mut fastrand::Rng) -> Option<Vec<&'static Production>> {
    let kinds = [Kind::Item, Kind::Expr, Kind::Type, Kind::Pat, Kind::If];
    let start = kinds[rng.usize(0..kinds.len())];
    let mut kind = start;
    let mut cycle = Vec::new();
    for _ in 0..rng.usize(1..=4) {
        let choices: Vec<&Production> = GRAMMAR.iter().filter(|p| p.kind == kind).collect();
        let production = choices[rng.usize(0..choices.len())];
        kind = production.hole;
        cycle.push(production);
    }
    (kind == start).then_some(cycle)
}

/// A spine of productions from `seed`, starting at a cell's items. Half the time a short cycle
/// of productions repeated (deep trees of one construct, or of a few in turn, are the worst
/// case); otherwise a random walk in which each step picks a production of the kind the
/// previous one's hole asks for, and stays with it for a while.
fn spine(seed: u64, length: usize) -> Vec<&'static Production> {
    let mut rng = fastrand::Rng::with_seed(seed);
    if rng.bool() {
        for _ in 0..64 {
            if let Some(cycle) = cycle(&mut rng) {
                let mut spine = entry(cycle[0].kind);
                spine.extend(cycle.iter().cycle().take(length));
                return spine;
            }
        }
    }
    let mut kind = Kind::Item;
    let mut spine: Vec<&'static Production> = Vec::with_capacity(length);
    let stickiness = rng.u32(0..10);
    for _ in 0..length {
        let previous = spine.last().filter(|p| p.kind == kind && p.hole == kind);
        let production = match previous {
            Some(&previous) if rng.u32(0..10) < stickiness => previous,
            _ => {
                let choices: Vec<&Production> = GRAMMAR.iter().filter(|p| p.kind == kind).collect();
                choices[rng.usize(0..choices.len())]
            }
        };
        kind = production.hole;
        spine.push(production);
    }
    spine
}

/// The text of the first `n` productions of `spine`, closed with a leaf.
fn grammar_text(spine: &[&Production], n: usize) -> String {
    let used = &spine[..n.min(spine.len())];
    let kind = used.last().map_or(Kind::Item, |p| p.hole);
    let mut text: String = used.iter().map(|p| p.before).collect();
    text.push_str(leaf(kind));
    for production in used.iter().rev() {
        text.push_str(production.after);
    }
    text
}

/// Finds (by bisection, from `from` productions on) the longest prefix of `spine` the limits
/// admit, and has every reader read it at the kernel's stack sizes.
fn read_the_deepest_admitted(spine: &[&Production], from: usize) {
    let (mut low, mut high) = (from, spine.len());
    while high - low > 1 {
        let mid = (low + high) / 2;
        if text_limits::check_cell(&grammar_text(spine, mid)).is_ok() {
            low = mid;
        } else {
            high = mid;
        }
    }
    let admitted = grammar_text(spine, low);
    let cursor = admitted.len() / 2;
    read_everything(admitted, cursor);
}

/// The grammar's productions, each at least one level deep (so the measure of a spine of `n`
/// productions is at least `n`), and every kind reachable from a cell.
#[test]
fn the_grammar_covers_every_kind() {
    for kind in [Kind::Item, Kind::Expr, Kind::Type, Kind::Pat, Kind::If] {
        assert!(GRAMMAR.iter().any(|p| p.kind == kind && p.hole == kind));
        assert!(GRAMMAR.iter().any(|p| p.hole == kind));
    }
    for production in GRAMMAR {
        let once = grammar_text(&[production], 1);
        let twice = grammar_text(&[production, production], 2);
        let measure = |t: &str| match text_limits::nesting(t, usize::MAX) {
            text_limits::Depth::Within(d) => d,
            text_limits::Depth::Exceeds { .. } => unreachable!(),
        };
        if production.kind == production.hole {
            assert!(measure(&twice) > measure(&once), "{twice:?}");
        }
    }
}

/// Every production that nests in itself, repeated three times past the limit after the way
/// in from a cell: refused, with a measure of at least one level a production; its deepest
/// admitted prefix is read by every reader at the kernel's stack sizes.
#[test]
fn every_production_repeated_is_refused_past_the_limit() {
    for production in GRAMMAR.iter().filter(|p| p.kind == p.hole) {
        let mut spine = entry(production.kind);
        let way_in = spine.len();
        spine.extend(std::iter::repeat_n(production, 3 * MAX_NESTING));
        let full = grammar_text(&spine, spine.len());
        assert!(
            text_limits::check_cell(&full).is_err(),
            "{:?} repeated {} times admitted",
            production.before.to_string() + production.after,
            3 * MAX_NESTING
        );
        let over = grammar_text(&spine, way_in + MAX_NESTING + 1);
        assert!(
            text_limits::check_cell(&over).is_err(),
            "{:?}: {} levels admitted",
            production.before.to_string() + production.after,
            MAX_NESTING + 1
        );
        read_the_deepest_admitted(&spine, way_in);
    }
}

/// The two cells that overflowed the kernel's stack through `is_complete_request` (an item
/// keyword ended the old measure's chain), and their relatives.
#[test]
fn item_keywords_inside_types_and_closures_count() {
    for (before, after) in [
        ("let f: ", "fn() -> "),
        ("let d = ", "static || "),
        ("let d = ", "|a, b| "),
        ("let d: ", "impl Fn() -> "),
        ("let d: ", "HashMap<i32, "),
        ("", "#[a] "),
        ("let ", "&mut "),
        ("let d = ", "const { "),
    ] {
        let text = format!("{before}{}i32 = g;", after.repeat(100_000));
        assert!(
            text_limits::check_cell(&text).is_err(),
            "{after:?} admitted"
        );
        read_everything(text, 5);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Cells generated from the grammar's recursive productions: the deepest prefix of a spine
    /// that the limits admit is read by every reader at the kernel's stack sizes, and a spine
    /// longer than the limit is refused.
    #[test]
    fn grammar_generated_cells_are_read_or_refused(
        seed in any::<u64>(),
        length in (MAX_NESTING / 2)..(3 * MAX_NESTING),
    ) {
        let spine = spine(seed, length);
        let full = grammar_text(&spine, spine.len());
        // Productions that open nothing before their hole (`X?`, `X + 1`, `X.f()`) are left
        // recursion, which parsers take in a loop; the measure gives their level back at the
        // next closer, so a cycle through one (`f(1, 1 + return X?)`, seed 15770876502330004074)
        // is three levels a turn, not four. Only the others must add up past the limit.
        let opening = spine.iter().filter(|p| !p.before.is_empty()).count();
        if opening > MAX_NESTING {
            prop_assert!(text_limits::check_cell(&full).is_err(), "admitted: {}", &full[..200]);
        }
        read_the_deepest_admitted(&spine, 0);
        read_everything(full, 3);
    }
}

/// Text built from pieces that stress lexers and parsers.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("(".to_string()),
        Just(")".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("r#\"".to_string()),
        Just("/*".to_string()),
        Just("*/".to_string()),
        Just("//".to_string()),
        Just("\n".to_string()),
        Just("-".to_string()),
        Just("!".to_string()),
        Just("&".to_string()),
        Just(" + ".to_string()),
        Just(".f()".to_string()),
        Just("?".to_string()),
        Just("::".to_string()),
        Just("<".to_string()),
        Just(">".to_string()),
        Just("|x|".to_string()),
        Just(" else if ".to_string()),
        Just("let x = ".to_string()),
        Just(";".to_string()),
        Just(",".to_string()),
        Just(":dep ".to_string()),
        Just(":client ".to_string()),
        Just("é".to_string()),
        Just("\u{1F600}".to_string()),
        Just("\u{0}".to_string()),
        Just("\u{7}\u{1b}[31m".to_string()),
        Just("\u{202E}".to_string()),
        "[a-z0-9_]{1,8}",
        any::<char>().prop_map(String::from),
    ];
    (
        proptest::collection::vec((piece, 1usize..400), 0..40),
        0usize..4,
    )
        .prop_map(|(pieces, scale)| {
            let mut text = String::new();
            for (piece, times) in pieces {
                // Now and then a run long enough to pass the limits.
                let times = if scale == 3 { times * 40 } else { times };
                text.push_str(&piece.repeat(times));
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn hostile_text_is_answered_by_every_reader(
        text in hostile_text(),
        cursor in prop_oneof![0usize..64, any::<usize>(), 0usize..200_000],
    ) {
        read_everything(text, cursor);
    }

    #[test]
    fn every_deep_construct_is_measured_before_it_is_parsed(
        kind in 0usize..16,
        depth in 0usize..(4 * MAX_NESTING),
    ) {
        let text = deep(kind, depth);
        // The measure never says less than the levels there are.
        if depth > MAX_NESTING {
            prop_assert!(text_limits::check_cell(&text).is_err());
        }
        read_everything(text, depth);
    }
}
