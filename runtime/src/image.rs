//! Tensors as pictures: one image (`t.to_image()`), a grid of a batch with optional titles
//! (`show_images`, fast.ai's helper), and Nx's text heatmap (`t.to_heatmap()`). Images go to
//! the notebook as `image/png` (encoded by the `png` crate) with a text fallback that says how
//! values became grey levels; a grid with titles adds an HTML figure per image.
//!
//! Layouts: `[h, w]` is grey; `[h, w, c]` (channels last, preferred when both read) or
//! `[c, h, w]` with `c` 1 (grey), 3 (RGB) or 4 (RGBA). u8 values are the levels; any other
//! type is mapped from its `[min, max]` onto 0..=255 (NaN is 0), as matplotlib's `imshow`.

use base64::Engine;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::notebook::Displayable;
use crate::tensor::Tensor;

/// The most images a grid draws; the rest are counted in its text ("first 100 of 10000").
pub const GRID_LIMIT: usize = 100;

/// The smallest side an image is scaled up to (by whole pixels), so a 28x28 digit is seen.
const MIN_SIDE: usize = 84;

/// Pixels of one picture: rows of `width * channels` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Pixels {
    width: usize,
    height: usize,
    channels: usize,
    bytes: Vec<u8>,
    /// How the values became levels, for the text form.
    mapping: String,
}

/// A tensor drawn as an image: the notebook shows the PNG.
#[derive(Clone, Debug)]
pub struct Image {
    png: Vec<u8>,
    text: String,
}

/// A batch of images in a grid, optionally titled.
#[derive(Clone, Debug)]
pub struct ImageGrid {
    png: Vec<u8>,
    html: Option<String>,
    text: String,
}

fn refuse(op: &'static str, message: String) -> Error {
    Error::InvalidArgument { op, message }
}

/// `(height, width, channels, channels_first)` of an image tensor's shape.
fn layout(op: &'static str, shape: &[usize]) -> Result<(usize, usize, usize, bool)> {
    let is_channels = |c: usize| matches!(c, 1 | 3 | 4);
    match *shape {
        [h, w] => Ok((h, w, 1, false)),
        [h, w, c] if is_channels(c) => Ok((h, w, c, false)),
        [c, h, w] if is_channels(c) => Ok((h, w, c, true)),
        _ => Err(refuse(
            op,
            format!(
                "an image is [h, w], [h, w, c] or [c, h, w] with c 1, 3 or 4, got {}",
                crate::shape::fmt_shape(shape)
            ),
        )),
    }
}

/// Levels of `values`: u8 as they are, anything else mapped from its range onto 0..=255.
fn levels(dtype: DType, values: &[f64]) -> (Vec<u8>, String) {
    if dtype == DType::U8 {
        return (
            values.iter().map(|&v| v as u8).collect(),
            "u8 levels".into(),
        );
    }
    let finite = values.iter().copied().filter(|v| v.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (0.0, 0.0) };
    let span = if hi > lo { hi - lo } else { 1.0 };
    let bytes = values
        .iter()
        .map(|&v| match v {
            v if v.is_nan() => 0,
            v => (((v.clamp(lo, hi) - lo) / span) * 255.0).round() as u8,
        })
        .collect();
    (bytes, format!("{dtype} mapped from [{lo}, {hi}] to 0..255"))
}

/// The pixels of one image tensor (read to the host).
fn pixels(op: &'static str, t: &Tensor) -> Result<Pixels> {
    let (height, width, channels, channels_first) = layout(op, t.shape())?;
    let (flat, mapping) = levels(t.dtype(), &t.to_f64_vec()?);
    Ok(Pixels {
        width,
        height,
        channels,
        bytes: interleaved(&flat, channels, channels_first),
        mapping,
    })
}

/// One image's levels with its channels interleaved (a PNG's layout), from planes when
/// `channels_first`.
fn interleaved(levels: &[u8], channels: usize, channels_first: bool) -> Vec<u8> {
    if !channels_first || channels == 1 {
        return levels.to_vec();
    }
    let plane = levels.len() / channels;
    (0..levels.len())
        .map(|i| levels[(i % channels) * plane + i / channels])
        .collect()
}

/// A zeroed buffer of `w * h * c` bytes, or the error for a picture too large to hold (a
/// refused allocation, never an abort).
fn picture_bytes(op: &'static str, w: usize, h: usize, c: usize, fill: u8) -> Result<Vec<u8>> {
    let len = w.checked_mul(h).and_then(|n| n.checked_mul(c));
    let mut bytes = Vec::new();
    match len {
        Some(len) if bytes.try_reserve_exact(len).is_ok() => {
            bytes.resize(len, fill);
            Ok(bytes)
        }
        _ => Err(refuse(
            op,
            format!("a {w}x{h} picture is too large to hold"),
        )),
    }
}

/// `p` scaled up by a whole factor until its longer side reaches [`MIN_SIDE`] (at most 8x).
fn enlarged(op: &'static str, p: &Pixels) -> Result<Pixels> {
    let side = p.width.max(p.height).max(1);
    let factor = MIN_SIDE.div_ceil(side).clamp(1, 8);
    if factor == 1 {
        return Ok(p.clone());
    }
    let (w, h, c) = (p.width * factor, p.height * factor, p.channels);
    let mut bytes = picture_bytes(op, w, h, c, 0)?;
    bytes.clear();
    for y in 0..h {
        for x in 0..w {
            let at = ((y / factor) * p.width + x / factor) * c;
            bytes.extend_from_slice(&p.bytes[at..at + c]);
        }
    }
    Ok(Pixels {
        width: w,
        height: h,
        bytes,
        ..p.clone()
    })
}

/// PNG bytes of `p`.
fn encode(op: &'static str, p: &Pixels) -> Result<Vec<u8>> {
    let color = match p.channels {
        1 => png::ColorType::Grayscale,
        3 => png::ColorType::Rgb,
        _ => png::ColorType::Rgba,
    };
    let (w, h) = (
        u32::try_from(p.width).map_err(|_| refuse(op, "image too wide".into()))?,
        u32::try_from(p.height).map_err(|_| refuse(op, "image too tall".into()))?,
    );
    if w == 0 || h == 0 {
        return Err(refuse(op, format!("an image needs pixels, got {w}x{h}")));
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(color);
    encoder.set_depth(png::BitDepth::Eight);
    let written = encoder
        .write_header()
        .and_then(|mut writer| writer.write_image_data(&p.bytes));
    written.map_err(|e| refuse(op, format!("PNG encoding failed: {e}")))?;
    Ok(out)
}

fn base64_png(png: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(png)
}

impl Tensor {
    /// This tensor as a picture for the notebook (`image/png`): `[h, w]` grey, `[h, w, c]` or
    /// `[c, h, w]` with 1, 3 or 4 channels; u8 values are grey levels, other types are mapped
    /// from their range (the text form says which). Small images are scaled up by whole pixels.
    pub fn to_image(&self) -> Result<Image> {
        let p = pixels("to_image", self)?;
        let png = encode("to_image", &enlarged("to_image", &p)?)?;
        let kind = match p.channels {
            1 => "grey",
            3 => "RGB",
            _ => "RGBA",
        };
        Ok(Image {
            png,
            text: format!("[image {}x{} {kind}, {}]", p.width, p.height, p.mapping),
        })
    }

    /// Nx's `to_heatmap` for plain text and terminals: each entry of a `[h, w]` tensor (or the
    /// last two axes of each leading entry) as a shade from ` ` (lowest) to `█` (highest),
    /// the range mapped as [`Tensor::to_image`] maps it.
    pub fn to_heatmap(&self) -> Result<String> {
        if self.rank() < 2 {
            return Err(refuse(
                "to_heatmap",
                format!(
                    "a heatmap needs at least two axes, got {}",
                    self.signature()
                ),
            ));
        }
        const SHADES: [char; 5] = [' ', '░', '▒', '▓', '█'];
        let (h, w) = (self.shape()[self.rank() - 2], self.shape()[self.rank() - 1]);
        let (bytes, mapping) = levels(self.dtype(), &self.to_f64_vec()?);
        let mut out = format!("{} heatmap, {mapping}\n", self.signature());
        for (i, plane) in bytes.chunks((h * w).max(1)).enumerate() {
            if i > 0 {
                out.push('\n');
            }
            for row in plane.chunks(w.max(1)) {
                out.extend(row.iter().map(|&b| SHADES[(b as usize * 5 / 256).min(4)]));
                out.push('\n');
            }
        }
        Ok(out)
    }
}

/// The titles of [`show_images`]: `()` for none, or a slice, array or `Vec` of `&str` or
/// `String` (so a cell's `Vec<String>` of labels goes in as it is: a notebook keeps its
/// variables, and a `Vec<&str>` borrowing another variable could not be kept).
pub trait Titles {
    /// The titles in order.
    fn titles(&self) -> Vec<&str>;
}

impl Titles for () {
    fn titles(&self) -> Vec<&str> {
        Vec::new()
    }
}

impl<S: AsRef<str>> Titles for [S] {
    fn titles(&self) -> Vec<&str> {
        self.iter().map(AsRef::as_ref).collect()
    }
}

impl<S: AsRef<str>, const N: usize> Titles for [S; N] {
    fn titles(&self) -> Vec<&str> {
        self.iter().map(AsRef::as_ref).collect()
    }
}

impl<S: AsRef<str>> Titles for Vec<S> {
    fn titles(&self) -> Vec<&str> {
        self.iter().map(AsRef::as_ref).collect()
    }
}

impl<T: Titles + ?Sized> Titles for &T {
    fn titles(&self) -> Vec<&str> {
        (**self).titles()
    }
}

/// A grid of the images in `batch` (`[n, h, w]`, `[n, h, w, c]` or `[n, c, h, w]`), fast.ai's
/// `show_images`: at most [`GRID_LIMIT`] of them, `columns` to a row (0 picks a square-ish
/// grid), each titled by the `titles` when given (`()` for none; an HTML figure per image, the
/// PNG of the grid there for frontends that show no HTML). Every image is mapped from the
/// batch's range.
pub fn show_images(batch: &Tensor, titles: impl Titles, columns: usize) -> Result<ImageGrid> {
    let op = "show_images";
    let titles = titles.titles();
    if batch.rank() < 3 {
        return Err(refuse(
            op,
            format!(
                "a batch of images has at least 3 axes, got {}",
                batch.signature()
            ),
        ));
    }
    let n = batch.shape()[0];
    let shown = n.min(GRID_LIMIT);
    if shown == 0 {
        return Err(refuse(op, "the batch holds no images".into()));
    }
    let first = batch.slice_along_axis(0, shown, 0)?;
    let (height, width, channels, channels_first) = layout(op, &batch.shape()[1..])?;
    let (flat, mapping) = levels(batch.dtype(), &first.to_f64_vec()?);
    let images: Vec<Pixels> = flat
        .chunks((height * width * channels).max(1))
        .map(|one| Pixels {
            width,
            height,
            channels,
            bytes: interleaved(one, channels, channels_first),
            mapping: mapping.clone(),
        })
        .collect();
    let images: Vec<Pixels> = images
        .iter()
        .map(|p| enlarged(op, p))
        .collect::<Result<_>>()?;
    let columns = match columns {
        0 => (shown as f64).sqrt().ceil() as usize,
        c => c,
    }
    .clamp(1, shown);
    let rows = shown.div_ceil(columns);
    let (tw, th, c) = (images[0].width, images[0].height, images[0].channels);
    let gap = 4;
    let (gw, gh) = (columns * (tw + gap) - gap, rows * (th + gap) - gap);
    let mut grid = Pixels {
        width: gw,
        height: gh,
        channels: c,
        bytes: picture_bytes(op, gw, gh, c, 255)?,
        mapping: images[0].mapping.clone(),
    };
    for (i, img) in images.iter().enumerate() {
        let (x0, y0) = ((i % columns) * (tw + gap), (i / columns) * (th + gap));
        for y in 0..th {
            let to = ((y0 + y) * gw + x0) * c;
            grid.bytes[to..to + tw * c].copy_from_slice(&img.bytes[y * tw * c..(y + 1) * tw * c]);
        }
    }
    let png = encode(op, &grid)?;
    let more = if n > shown {
        format!(", the first {shown} of {n}")
    } else {
        String::new()
    };
    let text = format!(
        "[{shown} images {width}x{height} in {rows} x {columns}{more}, {}]",
        grid.mapping
    );
    let html = if titles.is_empty() {
        None
    } else {
        let mut html = String::from("<div style=\"display:flex;flex-wrap:wrap;gap:6px\">");
        for (i, img) in images.iter().enumerate() {
            let title = titles.get(i).copied().unwrap_or_default();
            html.push_str(&format!(
                "<figure style=\"margin:0;text-align:center\"><img src=\"data:image/png;base64,{}\" \
                 style=\"image-rendering:pixelated\"/><figcaption>{}</figcaption></figure>",
                base64_png(&encode(op, img)?),
                escape(title)
            ));
        }
        if n > shown {
            html.push_str(&format!("<p>the first {shown} of {n}</p>"));
        }
        html.push_str("</div>");
        Some(html)
    };
    Ok(ImageGrid { png, html, text })
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Image {
    /// The PNG file's bytes (at the displayed size).
    pub fn png(&self) -> &[u8] {
        &self.png
    }
}

impl ImageGrid {
    /// The grid's PNG file's bytes.
    pub fn png(&self) -> &[u8] {
        &self.png
    }
}

impl Displayable for Image {
    fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        vec![
            ("text/plain", self.text.clone()),
            ("image/png", base64_png(&self.png)),
        ]
    }
}

impl Displayable for ImageGrid {
    fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        let mut bundle = vec![
            ("text/plain", self.text.clone()),
            ("image/png", base64_png(&self.png)),
        ];
        if let Some(html) = &self.html {
            bundle.push(("text/html", html.clone()));
        }
        bundle
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::create::on;
    use crate::device::Device;

    fn decoded(png: &[u8]) -> (u32, u32, png::ColorType, Vec<u8>) {
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (info.width, info.height, info.color_type, buf)
    }

    #[test]
    fn a_float_image_is_mapped_from_its_range_and_scaled_up() {
        let t = on(Device::BINARY)
            .from_slice(&[0.0f32, 0.5, 1.0, 0.25], &[2, 2])
            .unwrap();
        let image = t.to_image().unwrap();
        let (w, h, color, pixels) = decoded(image.png());
        // Scaled 8x (the most): the top-left block is 0, the top-right 0.5, the bottom-left 1.
        assert_eq!((w, h, color), (16, 16, png::ColorType::Grayscale));
        assert_eq!((pixels[0], pixels[15], pixels[16 * 15]), (0, 128, 255));
        assert!(image.text.contains("mapped from [0, 1]"), "{}", image.text);
    }

    #[test]
    fn channels_first_and_last_give_the_same_rgb_picture() {
        let place = on(Device::BINARY);
        let hwc = place.iota(DType::U8, &[2, 5, 3], None).unwrap();
        let chw = hwc.transpose([2, 0, 1]).unwrap();
        let a = decoded(hwc.to_image().unwrap().png());
        let b = decoded(chw.to_image().unwrap().png());
        assert_eq!(a, b);
        assert_eq!(a.2, png::ColorType::Rgb);
        assert_eq!(&a.3[..3], &[0, 1, 2]);
    }

    #[test]
    fn a_grid_shows_at_most_its_limit_and_says_so() {
        let batch = on(Device::BINARY)
            .zeros(DType::F32, &[150, 28, 28])
            .unwrap();
        let grid = show_images(&batch, ["a"; 150], 0).unwrap();
        assert!(grid.text.contains("the first 100 of 150"), "{}", grid.text);
        let (w, h, _, _) = decoded(grid.png());
        // 10 x 10 tiles of 84 pixels with 4-pixel gaps.
        assert_eq!((w, h), (10 * 88 - 4, 10 * 88 - 4));
        let html = grid.html.unwrap();
        assert_eq!(html.matches("<figcaption>a</figcaption>").count(), 100);
    }

    #[test]
    fn bad_shapes_are_errors() {
        let place = on(Device::BINARY);
        let t = place.zeros(DType::F32, &[5]).unwrap();
        assert!(t.to_image().is_err() && t.to_heatmap().is_err());
        let t = place.zeros(DType::F32, &[2, 5, 5, 5]).unwrap();
        assert!(t.to_image().is_err());
        let empty = place.zeros(DType::F32, &[0, 4]).unwrap();
        assert!(empty.to_image().is_err());
        assert!(show_images(&place.zeros(DType::F32, &[0, 4, 4]).unwrap(), (), 0).is_err());
    }

    #[test]
    fn a_heatmap_shades_from_low_to_high() {
        let t = on(Device::BINARY)
            .from_slice(&[0.0f32, 1.0, 2.0, 3.0], &[2, 2])
            .unwrap();
        let map = t.to_heatmap().unwrap();
        assert!(map.ends_with(" ░\n▓█\n"), "{map}");
    }
}
