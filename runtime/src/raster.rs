//! SVG drawn to PNG, so a chart carries a picture beside its vector form as matplotlib's
//! inline backend does: JupyterLab draws no SVG from an untrusted notebook (one executed
//! elsewhere, by nbconvert in CI for instance), and nbviewer and GitHub prefer the PNG. Text
//! uses the system's fonts; without any, the picture has its lines and no labels.

use std::sync::{Arc, OnceLock};

use base64::Engine;
use resvg::usvg::{fontdb, Options, Tree};

/// The system's fonts, loaded once per process (a few milliseconds of directory scanning),
/// with `sans-serif` pointed at a family that exists (fontdb's default, Arial, rarely does
/// on Linux).
fn fonts() -> Arc<fontdb::Database> {
    static FONTS: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = fontdb::Database::new();
            db.load_system_fonts();
            let families: Vec<String> = db
                .faces()
                .flat_map(|face| face.families.iter().map(|(name, _)| name.clone()))
                .collect();
            let preferred = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial"];
            let sans = preferred
                .iter()
                .find(|p| families.iter().any(|f| f == *p))
                .map(|p| p.to_string())
                .or_else(|| families.iter().find(|f| f.contains("Sans")).cloned())
                .or_else(|| families.first().cloned());
            if let Some(family) = sans {
                db.set_sans_serif_family(family);
            }
            Arc::new(db)
        })
        .clone()
}

/// `svg` as PNG bytes at its own size; None when it does not parse or has no area.
pub fn svg_to_png(svg: &str) -> Option<Vec<u8>> {
    let options = Options {
        fontdb: fonts(),
        ..Options::default()
    };
    let tree = Tree::from_str(svg, &options).ok()?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().ok()
}

/// `svg` as base64 PNG, the form a Jupyter mime bundle carries `image/png` in.
pub fn svg_to_png_base64(svg: &str) -> Option<String> {
    svg_to_png(svg).map(|png| base64::engine::general_purpose::STANDARD.encode(png))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drawing_becomes_a_png_and_nonsense_does_not() {
        let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><rect width="20" height="10" fill="red"/></svg>"#;
        let png = svg_to_png(svg).expect("a PNG");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert!(svg_to_png("<svg").is_none());
        assert!(svg_to_png("not svg at all").is_none());
        assert!(svg_to_png_base64(svg).is_some_and(|b| b.starts_with("iVBORw0KGgo")));
    }
}
