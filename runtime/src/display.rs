//! How a tensor shows itself: the Nx text form with its placement line, and an HTML card
//! (dtype, shape, placement badge, table preview) for notebooks. A preview reads only the
//! elements it prints, so showing a large (or remote) tensor stays cheap.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::buffer::Buffer;
use crate::error::Error;
use crate::shape::strides;
use crate::tensor::Tensor;

static PRINT_LIMIT: AtomicUsize = AtomicUsize::new(10);

/// Sets how many entries per axis a tensor prints before `...` (default 10).
pub fn set_print_limit(per_axis: usize) {
    PRINT_LIMIT.store(per_axis.max(1), Ordering::Relaxed);
}

/// The current per-axis print limit.
pub fn print_limit() -> usize {
    PRINT_LIMIT.load(Ordering::Relaxed)
}

/// At most this many lists and values are printed in all: with the per-axis limit alone, a
/// tensor of rank 20 and size 2 per axis would print a million values, and an empty tensor of
/// shape `[2, 2, ..., 2, 0]` would print 2^63 empty lists.
const MAX_PRINTED_NODES: usize = 20_000;

/// A piece of a tensor's printed form: text, or the element at a row-major index.
enum Piece {
    Text(String),
    Value(usize),
}

/// The printed form of a tensor of `shape` with the values left as indices, so that only the
/// elements that will be shown are gathered (from a device, only they cross to the host).
struct Layout {
    pieces: Vec<Piece>,
    budget: usize,
}

impl Layout {
    fn of(shape: &[usize], limit: usize) -> Layout {
        let mut layout = Layout {
            pieces: Vec::new(),
            budget: MAX_PRINTED_NODES,
        };
        layout.walk(shape, &strides(shape), 0, limit, 2);
        layout
    }

    fn text(&mut self, s: impl Into<String>) {
        self.pieces.push(Piece::Text(s.into()));
    }

    fn walk(
        &mut self,
        shape: &[usize],
        strides: &[usize],
        base: usize,
        limit: usize,
        indent: usize,
    ) {
        let Some((&d, rest)) = shape.split_first() else {
            self.budget = self.budget.saturating_sub(1);
            self.pieces.push(Piece::Value(base));
            return;
        };
        self.budget = self.budget.saturating_sub(1);
        let shown = d.min(limit);
        let step = strides.first().copied().unwrap_or(0);
        if rest.is_empty() {
            self.text("[");
            for i in 0..shown {
                if i > 0 {
                    self.text(", ");
                }
                if self.budget == 0 {
                    self.text("...");
                    break;
                }
                self.walk(
                    rest,
                    &[],
                    base.saturating_add(i.saturating_mul(step)),
                    limit,
                    indent,
                );
            }
            if d > limit && self.budget > 0 {
                self.text(", ...");
            }
            self.text("]");
            return;
        }
        let pad = " ".repeat(indent);
        self.text("[\n");
        for i in 0..shown {
            if self.budget == 0 {
                self.text(format!("{pad}  ...\n"));
                break;
            }
            self.text(format!("{pad}  "));
            let at = base.saturating_add(i.saturating_mul(step));
            self.walk(rest, &strides[1..], at, limit, indent + 2);
            if i + 1 < shown || d > limit {
                self.text(",");
            }
            self.text("\n");
        }
        if d > limit && self.budget > 0 {
            self.text(format!("{pad}  ...\n"));
        }
        self.text(format!("{pad}]"));
    }

    /// The indices of the values shown, in print order (none for an empty tensor).
    fn indices(&self, size: usize) -> Vec<usize> {
        if size == 0 {
            return Vec::new();
        }
        self.pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Value(i) => Some(*i),
                Piece::Text(_) => None,
            })
            .collect()
    }

    /// The text with `values` (formatted, in print order) in place.
    fn render(&self, values: &[String]) -> String {
        let mut next = values.iter();
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Value(_) => out.push_str(next.next().map(String::as_str).unwrap_or("")),
            }
        }
        out
    }
}

impl Tensor {
    /// The previewed elements, formatted, in print order; `Err` with what to show instead
    /// (`Deallocated`, or a device's failure).
    fn preview_values(&self, layout: &Layout) -> std::result::Result<Vec<String>, String> {
        let shown = |e: Error| match e {
            Error::Deallocated { .. } => "Deallocated".to_string(),
            Error::Traced { .. } => {
                "(a placeholder of a jit trace: values exist when the compiled function runs)"
                    .to_string()
            }
            other => format!("(values unavailable: {other})"),
        };
        let memory = self.memory().map_err(shown)?;
        let indices = layout.indices(self.size());
        if indices.is_empty() {
            return Ok(Vec::new());
        }
        let picked: Buffer = memory.gather(&indices).map_err(shown)?;
        Ok((0..picked.len()).map(|i| picked.format_at(i)).collect())
    }

    /// The placement line: `Backend<host:0>`.
    #[doc(hidden)]
    pub fn backend_line(&self) -> String {
        format!("Backend<{}>", self.device())
    }

    /// The Nx-style text form, with an explicit per-axis limit.
    pub fn to_text(&self, limit: usize) -> String {
        let mut s = format!(
            "#Tensor<{}{}\n  {}\n  ",
            self.dtype(),
            self.shape_text(),
            self.backend_line()
        );
        let layout = Layout::of(self.shape(), limit);
        match self.preview_values(&layout) {
            Err(why) => s.push_str(&why),
            Ok(values) => s.push_str(&layout.render(&values)),
        }
        s.push('>');
        s
    }

    /// An HTML card: header with dtype, shape and a placement badge; a table preview for 1-D
    /// and 2-D tensors, the text form otherwise.
    pub fn to_html(&self) -> String {
        let limit = print_limit();
        let device = self.device();
        let mut h = format!(
            "<div class=\"tensorbook-tensor\" style=\"font-family:monospace\">\
             <div class=\"tb-header\"><b>{}{}</b> \
             <span class=\"tb-badge tb-{}\" style=\"border-radius:4px;padding:0 4px;background:#e0e7ff\">Backend&lt;{}&gt;</span> \
             <span class=\"tb-size\">{} elements, {} bytes</span></div>",
            self.dtype(),
            self.shape_text(),
            device.client,
            device,
            self.size(),
            self.byte_size()
        );
        let layout = Layout::of(self.shape(), limit);
        match (self.preview_values(&layout), self.rank()) {
            (Err(why), _) => h.push_str(&format!(
                "<div class=\"tb-deallocated\">{}</div>",
                html_escape(&why)
            )),
            (Ok(values), 1 | 2) => {
                let (rows, cols) = if self.rank() == 1 {
                    (1, self.shape()[0])
                } else {
                    (self.shape()[0], self.shape()[1])
                };
                let (shown_rows, shown_cols) = (rows.min(limit), cols.min(limit));
                h.push_str("<table class=\"tb-table\">");
                let mut it = values.into_iter();
                for _ in 0..shown_rows {
                    h.push_str("<tr>");
                    for _ in 0..shown_cols {
                        h.push_str(&format!("<td>{}</td>", it.next().unwrap_or_default()));
                    }
                    if cols > limit {
                        h.push_str("<td>…</td>");
                    }
                    h.push_str("</tr>");
                }
                if rows > limit {
                    h.push_str("<tr><td>⋮</td></tr>");
                }
                h.push_str("</table>");
            }
            (Ok(_), _) => {
                h.push_str(&format!("<pre>{}</pre>", html_escape(&self.to_text(limit))));
            }
        }
        h.push_str("</div>");
        h
    }

    /// The mime bundle a notebook shows: `text/plain` and `text/html`.
    #[doc(hidden)]
    pub fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        vec![
            ("text/plain", self.to_text(print_limit())),
            ("text/html", self.to_html()),
        ]
    }
}

pub(crate) fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text(print_limit()))
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
