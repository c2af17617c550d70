//! Where in the cell a run-time failure happened: a panic's location and a `?` error's (evcxr
//! patch 19 prints the `?`'s location before the error) point into the `src/lib.rs` evcxr
//! generates around the cell; evcxr maps them back to the cell's own line and column, and
//! this module words them as the compile report does ("cell line 3, column 9") with the
//! cell's line under it.

/// A location in the generated crate, as Rust prints it: `src/lib.rs:41:5`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneratedLocation {
    /// 1-based line of `src/lib.rs`.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl GeneratedLocation {
    /// The location in `text` when it is one of the cell's crate (`src/lib.rs:L:C`, possibly
    /// followed by more text, as in a panic's `panicked at src/lib.rs:3:1:`).
    pub fn find(text: &str) -> Option<GeneratedLocation> {
        let rest = &text[text.find("src/lib.rs:")? + "src/lib.rs:".len()..];
        let mut parts = rest.splitn(3, ':');
        let line = parts.next()?.parse().ok()?;
        let column = parts
            .next()?
            .trim_end_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .ok()?;
        Some(GeneratedLocation { line, column })
    }
}

/// "cell line 3, column 9: `let y = x.dot(&w)?;`": a place in the cell (1-based) with the
/// cell's text of that line, trimmed.
pub fn describe(cell: &str, line: usize, column: usize) -> String {
    match cell.lines().nth(line.saturating_sub(1)) {
        Some(text) if !text.trim().is_empty() => {
            format!("cell line {line}, column {column}: `{}`", text.trim())
        }
        _ => format!("cell line {line}, column {column}"),
    }
}

/// A panic's location line with its place in the cell: `thread 'main' panicked at cell line
/// 2, column 5: `v[9]``; the line as it was where the panic is not in the cell's code.
pub fn panic_location(line: &str, cell: &str, place: Option<(usize, usize)>) -> String {
    match (line.find(" panicked at "), place) {
        (Some(at), Some((l, c))) => {
            let head = &line[..at + " panicked at ".len()];
            format!("{head}{}", describe(cell, l, c))
        }
        _ => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_locations_are_found_where_rust_prints_them() {
        let at = |line, column| Some(GeneratedLocation { line, column });
        assert_eq!(GeneratedLocation::find("src/lib.rs:41:5"), at(41, 5));
        assert_eq!(
            GeneratedLocation::find("thread 'main' panicked at src/lib.rs:3:12:"),
            at(3, 12)
        );
        assert_eq!(
            GeneratedLocation::find("panicked at /work/runtime/src/ops.rs:3:1:"),
            None
        );
        assert_eq!(GeneratedLocation::find("src/lib.rs:x:1"), None);
    }

    #[test]
    fn places_are_worded_with_the_cells_own_line() {
        let cell = "let x = 1;\n  let y = x.dot(&w)?;\n";
        assert_eq!(
            describe(cell, 2, 11),
            "cell line 2, column 11: `let y = x.dot(&w)?;`"
        );
        assert_eq!(describe(cell, 9, 1), "cell line 9, column 1");
        assert_eq!(
            panic_location(
                "thread 'main' panicked at src/lib.rs:60:2:",
                cell,
                Some((1, 9))
            ),
            "thread 'main' panicked at cell line 1, column 9: `let x = 1;`"
        );
        assert_eq!(
            panic_location("thread 'main' panicked at src/lib.rs:60:2:", cell, None),
            "thread 'main' panicked at src/lib.rs:60:2:"
        );
    }
}
