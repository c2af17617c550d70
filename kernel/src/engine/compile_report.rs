//! rustc's errors as a cell's author reads them: at the cell's own line and column ("cell
//! line 3, column 9"), with the cell's own text under a caret, instead of rustc's rendering,
//! which points into `src/lib.rs` of the crate evcxr generates around the cell (a file the
//! user never wrote). Errors rustc places only in generated code keep its rendering.

/// One error, reduced to what the report shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellError {
    /// `error` or `warning`.
    pub level: String,
    /// `E0425`, when rustc gives one.
    pub code: Option<String>,
    /// rustc's message.
    pub message: String,
    /// Where in the cell, when rustc's span lies in the user's code.
    pub places: Vec<Place>,
    /// rustc's `help:` lines.
    pub help: Vec<String>,
    /// rustc's own rendering (its message alone for generated code), for an error with no
    /// place in the cell.
    pub rendered: String,
}

/// A span in the cell's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// 1-based line of the cell.
    pub line: usize,
    /// 1-based column (in characters) where the span starts.
    pub column: usize,
    /// 1-based column where it ends (exclusive) on its last line.
    pub end_column: usize,
    /// Whether the span ends on its first line.
    pub one_line: bool,
    /// The cell's lines the span covers.
    pub source: Vec<String>,
    /// rustc's label for the span (`not found in this scope`).
    pub label: String,
}

impl CellError {
    /// From evcxr's error, its spans already mapped to the cell by evcxr.
    pub fn from_evcxr(error: &evcxr::CompilationError) -> CellError {
        let places = error
            .spanned_messages()
            .iter()
            .filter_map(|m| {
                let span = m.span?;
                Some(Place {
                    line: span.start_line,
                    column: span.start_column,
                    end_column: span.end_column,
                    one_line: span.start_line == span.end_line,
                    source: m.lines.clone(),
                    label: m.label.clone(),
                })
            })
            .collect();
        CellError {
            level: error.level().to_string(),
            code: error.code().map(str::to_string),
            message: error.message(),
            places,
            help: error.help(),
            // An error of generated code alone: its message (the rendering shows only
            // code the user never wrote).
            rendered: if error.is_from_user_code() {
                error.rendered()
            } else {
                error.message()
            },
        }
    }

    /// The one-line summary: the message and where the first span starts.
    pub fn summary(&self) -> String {
        match self.places.first() {
            Some(p) => format!(
                "cell line {}, column {}: {}",
                p.line, p.column, self.message
            ),
            None => self.message.clone(),
        }
    }

    /// The report's lines, rustc's layout with the cell's own lines and numbers.
    pub fn report(&self) -> Vec<String> {
        if self.places.is_empty() {
            return self.rendered.lines().map(str::to_string).collect();
        }
        let code = self
            .code
            .as_ref()
            .map(|c| format!("[{c}]"))
            .unwrap_or_default();
        let mut out = vec![format!("{}{code}: {}", self.level, self.message)];
        let width = self
            .places
            .iter()
            .map(|p| p.line.saturating_add(p.source.len()).to_string().len())
            .max()
            .unwrap_or(1);
        let gutter = " ".repeat(width);
        for place in &self.places {
            out.push(format!(
                "{gutter}--> cell line {}, column {}",
                place.line, place.column
            ));
            out.push(format!("{gutter} |"));
            for (i, text) in place.source.iter().enumerate() {
                let number = place.line.saturating_add(i);
                out.push(format!("{number:>width$} | {text}"));
            }
            if place.one_line && place.source.len() == 1 {
                let start = place.column.saturating_sub(1);
                let carets = place.end_column.saturating_sub(place.column).max(1);
                out.push(format!(
                    "{gutter} | {}{} {}",
                    " ".repeat(start),
                    "^".repeat(carets),
                    place.label
                ));
            } else if !place.label.is_empty() {
                out.push(format!("{gutter} = {}", place.label));
            }
        }
        for help in &self.help {
            let mut lines = help.lines();
            if let Some(first) = lines.next() {
                out.push(format!("{gutter} = help: {first}"));
            }
            out.extend(lines.map(|l| format!("{gutter}   {l}")));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typo() -> CellError {
        CellError {
            level: "error".into(),
            code: Some("E0425".into()),
            message: "cannot find value `y` in this scope".into(),
            places: vec![Place {
                line: 2,
                column: 9,
                end_column: 10,
                one_line: true,
                source: vec!["let z = y + 1;".into()],
                label: "not found in this scope".into(),
            }],
            help: vec!["a local variable with a similar name exists: `x`".into()],
            rendered: "error[E0425]: ...\n --> src/lib.rs:41:9".into(),
        }
    }

    #[test]
    fn an_error_in_the_cell_is_reported_at_the_cells_line() {
        let e = typo();
        assert_eq!(
            e.summary(),
            "cell line 2, column 9: cannot find value `y` in this scope"
        );
        let report = e.report();
        assert_eq!(
            report,
            [
                "error[E0425]: cannot find value `y` in this scope",
                " --> cell line 2, column 9",
                "  |",
                "2 | let z = y + 1;",
                "  |         ^ not found in this scope",
                "  = help: a local variable with a similar name exists: `x`",
            ]
        );
        assert!(report.iter().all(|l| !l.contains("src/lib.rs")));
    }

    #[test]
    fn an_error_only_in_generated_code_keeps_rustcs_rendering() {
        let e = CellError {
            places: vec![],
            ..typo()
        };
        assert_eq!(e.summary(), "cannot find value `y` in this scope");
        assert_eq!(e.report()[1], " --> src/lib.rs:41:9");
    }
}
