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
