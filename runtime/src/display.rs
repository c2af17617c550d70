//! How a tensor shows itself: the Nx text form with its placement line, and an HTML card
//! (dtype, shape, placement badge, table preview) for notebooks. A preview reads only the
//! elements it prints, so showing a large (or remote) tensor stays cheap.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::buffer::Buffer;
use crate::error::Error;
use crate::shape::{fmt_shape, strides};
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

/// The flat indices of the elements a preview shows, in print order.
fn preview_indices(shape: &[usize], limit: usize) -> Vec<usize> {
    fn walk(shape: &[usize], strides: &[usize], base: usize, limit: usize, out: &mut Vec<usize>) {
        match shape.split_first() {
            None => out.push(base),
            Some((&d, rest)) => {
                for i in 0..d.min(limit) {
                    walk(rest, &strides[1..], base + i * strides[0], limit, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(shape, &strides(shape), 0, limit, &mut out);
    out
}

fn write_nested(
    f: &mut String,
    shape: &[usize],
    values: &mut impl Iterator<Item = String>,
    limit: usize,
    indent: usize,
) {
    let pad = " ".repeat(indent);
    match shape {
        [] => f.push_str(&values.next().unwrap_or_default()),
        [d] => {
            let mut items: Vec<String> = values.take((*d).min(limit)).collect();
            if *d > limit {
                items.push("...".into());
            }
            f.push_str(&format!("[{}]", items.join(", ")));
        }
        [d, rest @ ..] => {
            f.push_str("[\n");
            let shown = (*d).min(limit);
            for i in 0..shown {
                f.push_str(&format!("{pad}  "));
                write_nested(f, rest, values, limit, indent + 2);
                if i + 1 < shown || *d > limit {
                    f.push(',');
                }
                f.push('\n');
            }
            if *d > limit {
                f.push_str(&format!("{pad}  ...\n"));
            }
            f.push_str(&format!("{pad}]"));
        }
    }
}

impl Tensor {
    /// The previewed elements, formatted, in print order; `Err` with what to show instead
    /// (`Deallocated`, or a device's failure).
    fn preview_values(&self, limit: usize) -> std::result::Result<Vec<String>, String> {
        let shown = |e: Error| match e {
            Error::Deallocated { .. } => "Deallocated".to_string(),
            other => format!("(values unavailable: {other})"),
        };
        let memory = self.memory().map_err(shown)?;
        let indices = preview_indices(self.shape(), limit);
        let picked: Buffer = memory.gather(&indices).map_err(shown)?;
        Ok((0..picked.len()).map(|i| picked.format_at(i)).collect())
    }

    /// The placement line: `Backend<host:0>`.
    pub fn backend_line(&self) -> String {
        format!("Backend<{}>", self.device())
    }

    /// The Nx-style text form, with an explicit per-axis limit.
    pub fn to_text(&self, limit: usize) -> String {
        let mut s = format!(
            "#Tensor<{}{}\n  {}\n  ",
            self.dtype(),
            fmt_shape(self.shape()),
            self.backend_line()
        );
        match self.preview_values(limit) {
            Err(why) => s.push_str(&why),
            Ok(values) => write_nested(&mut s, self.shape(), &mut values.into_iter(), limit, 2),
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
            fmt_shape(self.shape()),
            device.client,
            device,
            self.size(),
            self.byte_size()
        );
        match (self.preview_values(limit), self.rank()) {
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
    pub fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        vec![
            ("text/plain", self.to_text(print_limit())),
            ("text/html", self.to_html()),
        ]
    }

    /// evcxr's rich-display hook: prints the mime bundle in evcxr's content markers.
    pub fn evcxr_display(&self) {
        emit_evcxr_bundle(&self.mime_bundle());
    }
}

/// Prints a mime bundle between evcxr's content markers, which the kernel turns into the
/// cell's rich result.
pub(crate) fn emit_evcxr_bundle(bundle: &[(&'static str, String)]) {
    for (mime, content) in bundle {
        println!("EVCXR_BEGIN_CONTENT {mime}\n{content}\nEVCXR_END_CONTENT");
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
