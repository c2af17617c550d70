//! NumPy `.npy` files (format versions 1 to 3): any endianness, C or Fortran order on read;
//! little-endian C order on write.
//!
//! Written here rather than taken from `npyz`: npyz parses the header with a full Python-literal
//! grammar (`py_literal`: pest, num-bigint), and every notebook cell sees the runtime's whole
//! dependency graph through rust-analyzer inside evcxr, where those crates cost each session's
//! first cell about 2 s of analysis on two cores. The header is a small, fixed dictionary.

use std::io::{BufWriter, Read, Write};
use std::path::Path;

use super::io_error;
use crate::buffer::with_dtype;
use crate::create::Factory;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const MAGIC: &[u8] = b"\x93NUMPY";

/// The dtype of a header's `descr` kind and byte size (`'<f4'` is `('f', "4")`); `b1`
/// (NumPy's bool) reads as u8, as Nx's comparisons give.
fn npy_dtype(kind: char, size: &str) -> Option<DType> {
    Some(match (kind, size) {
        ('u', "1") | ('b', "1") => DType::U8,
        ('u', "2") => DType::U16,
        ('u', "4") => DType::U32,
        ('u', "8") => DType::U64,
        ('i', "1") => DType::S8,
        ('i', "2") => DType::S16,
        ('i', "4") => DType::S32,
        ('i', "8") => DType::S64,
        ('f', "2") => DType::F16,
        ('f', "4") => DType::F32,
        ('f', "8") => DType::F64,
        ('c', "8") => DType::C64,
        ('c', "16") => DType::C128,
        _ => return None,
    })
}

/// What a `.npy` header says about the array that follows it.
#[derive(Debug, PartialEq)]
struct Header {
    element: DType,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// A value in the header dictionary: the only three kinds NumPy writes there.
#[derive(Debug, PartialEq)]
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

/// Reads the Python dictionary literal of a header, e.g.
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
struct DictParser<'a> {
    rest: &'a str,
}

impl<'a> DictParser<'a> {
    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        match self.rest.strip_prefix(c) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, c: char) -> std::result::Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{c}` at `{}`", self.excerpt()))
        }
    }

    fn excerpt(&self) -> &str {
        let end = self
            .rest
            .char_indices()
            .nth(20)
            .map_or(self.rest.len(), |(i, _)| i);
        &self.rest[..end]
    }

    fn string(&mut self) -> std::result::Result<String, String> {
        self.skip_space();
        let quote = match self.rest.chars().next() {
            Some(q @ ('\'' | '"')) => q,
            _ => return Err(format!("expected a string at `{}`", self.excerpt())),
        };
        let body = &self.rest[1..];
        let end = body
            .find(quote)
            .ok_or_else(|| "unterminated string".to_string())?;
        self.rest = &body[end + 1..];
        Ok(body[..end].to_string())
    }

    fn integer(&mut self) -> std::result::Result<usize, String> {
        self.skip_space();
        let digits = self.rest.len()
            - self
                .rest
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .len();
        let value = self.rest[..digits]
            .parse()
            .map_err(|_| format!("expected a dimension at `{}`", self.excerpt()))?;
        // Python 2 wrote long integers with an `L` suffix.
        self.rest = self.rest[digits..]
            .strip_prefix('L')
            .unwrap_or(&self.rest[digits..]);
        Ok(value)
    }

    fn value(&mut self) -> std::result::Result<Value, String> {
        self.skip_space();
        for (word, value) in [("True", true), ("False", false)] {
            if let Some(rest) = self.rest.strip_prefix(word) {
                self.rest = rest;
                return Ok(Value::Bool(value));
            }
        }
        if self.eat('(') {
            let mut dims = Vec::new();
            while !self.eat(')') {
                dims.push(self.integer()?);
                if !self.eat(',') {
                    self.expect(')')?;
                    break;
                }
            }
            return Ok(Value::Tuple(dims));
        }
        if self.rest.starts_with('[') {
            return Err("structured arrays are not supported".into());
        }
        self.string().map(Value::Str)
    }

    fn entries(mut self) -> std::result::Result<Vec<(String, Value)>, String> {
        self.expect('{')?;
        let mut entries = Vec::new();
        while !self.eat('}') {
            let key = self.string()?;
            self.expect(':')?;
            entries.push((key, self.value()?));
            if !self.eat(',') {
                self.expect('}')?;
                break;
            }
        }
        Ok(entries)
    }
}

impl Header {
    fn parse(text: &str) -> std::result::Result<Header, String> {
        let (mut descr, mut fortran_order, mut shape) = (None, None, None);
        for (key, value) in (DictParser { rest: text }).entries()? {
            match (key.as_str(), value) {
                ("descr", Value::Str(s)) => descr = Some(s),
                ("fortran_order", Value::Bool(b)) => fortran_order = Some(b),
                ("shape", Value::Tuple(dims)) => shape = Some(dims),
                (key, value) => return Err(format!("unexpected header entry `{key}`: {value:?}")),
            }
        }
        let descr = descr.ok_or("the header has no `descr`")?;
        let mut chars = descr.chars();
        let (order, kind) = (chars.next(), chars.next());
        let big_endian = match order {
            Some('>') => true,
            Some('<' | '|') => false,
            Some('=') => cfg!(target_endian = "big"),
            _ => return Err(format!("element type `{descr}` has no byte order")),
        };
        let element = kind
            .and_then(|kind| npy_dtype(kind, chars.as_str()))
            .ok_or_else(|| {
                format!(
                    "element type `{descr}` has no tensorbook dtype (u1-u8, i1-i8, f2-f8, c8, c16)"
                )
            })?;
        Ok(Header {
            element,
            big_endian,
            fortran_order: fortran_order.ok_or("the header has no `fortran_order`")?,
            shape: shape.ok_or("the header has no `shape`")?,
        })
    }

    /// Reads the magic string, version and header from the start of a file.
    fn read(reader: &mut impl Read) -> std::result::Result<Header, String> {
        let mut preamble = [0u8; 8];
        reader
            .read_exact(&mut preamble)
            .map_err(|_| "too short for a .npy file".to_string())?;
        if &preamble[..6] != MAGIC {
            return Err("not a .npy file (no \\x93NUMPY magic)".into());
        }
        let len = match preamble[6] {
            1 => {
                let mut len = [0u8; 2];
                reader.read_exact(&mut len).map_err(|e| e.to_string())?;
                u16::from_le_bytes(len) as usize
            }
            2 | 3 => {
                let mut len = [0u8; 4];
                reader.read_exact(&mut len).map_err(|e| e.to_string())?;
                u32::from_le_bytes(len) as usize
            }
            v => return Err(format!("format version {v} is not supported (1 to 3 are)")),
        };
        let mut text = vec![0u8; len];
        reader
            .read_exact(&mut text)
            .map_err(|_| "the header is cut short".to_string())?;
        let text = String::from_utf8(text).map_err(|_| "the header is not text".to_string())?;
        Header::parse(&text)
    }

    /// The header NumPy itself writes for a little-endian, C-order array, padded so that the
    /// data starts on a 64-byte boundary.
    fn encode(descr: &str, shape: &[usize]) -> Vec<u8> {
        let dims = match shape {
            [d] => format!("({d},)"),
            _ => format!(
                "({})",
                shape
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let mut text = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
        let (version, len_bytes) = if text.len() + 11 < 65536 {
            (1u8, 2)
        } else {
            (2u8, 4)
        };
        let prefix = MAGIC.len() + 2 + len_bytes;
        while !(prefix + text.len() + 1).is_multiple_of(64) {
            text.push(' ');
        }
        text.push('\n');
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[version, 0]);
        if version == 1 {
            bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
        } else {
            bytes.extend_from_slice(&(text.len() as u32).to_le_bytes());
        }
        bytes.extend_from_slice(text.as_bytes());
        bytes
    }
}

/// Decodes `bytes` as elements of `N` bytes in the file's byte order.
pub(super) fn decode<const N: usize, T>(
    bytes: &[u8],
    big_endian: bool,
    from_le: fn([u8; N]) -> T,
    from_be: fn([u8; N]) -> T,
) -> Vec<T> {
    let convert = if big_endian { from_be } else { from_le };
    bytes
        .chunks_exact(N)
        .map(|chunk| {
            let mut raw = [0u8; N];
            raw.copy_from_slice(chunk);
            convert(raw)
        })
        .collect()
}

impl Factory {
    /// Reads a `.npy` file of `u1`/`u2`/`u4`/`u8`, `i1`/`i2`/`i4`/`i8`, `f2`, `f4` or `f8` elements
    /// (`b1` as u8) into a tensor of its shape and the matching dtype.
    pub fn read_npy(&self, path: impl AsRef<Path>) -> Result<Tensor> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
        self.npy_from(file, &path.display().to_string())
    }

    /// A `.npy` array read from `reader` (a file, or a member of an `.npz` archive); errors name
    /// `source`.
    pub(crate) fn npy_from(&self, mut reader: impl Read, source: &str) -> Result<Tensor> {
        let bad = |message: String| Error::Format {
            path: source.to_string(),
            format: "NPY",
            message,
        };
        let header = Header::read(&mut reader).map_err(bad)?;
        let mut shape = header.shape.clone();
        let count = shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .and_then(|n| n.checked_mul(header.element.size_in_bytes()))
            .ok_or_else(|| bad(format!("shape {shape:?} is too large")))?;
        // A size this machine cannot hold is refused before reading (a zip bomb in an .npz
        // stops here too); what it can hold is read no further than the header promises.
        drop(crate::allocate::try_reserve::<u8>(count, &shape)?);
        // Read no more than the header promises (plus one byte to see a longer file), so a
        // lying header costs no huge allocation: a short file ends the read early.
        let mut data = Vec::new();
        reader
            .take(count as u64 + 1)
            .read_to_end(&mut data)
            .map_err(|e| bad(format!("reading the data: {e}")))?;
        if data.len() != count {
            return Err(bad(format!(
                "shape {shape:?} of {:?} needs {count} bytes of data, {} {}",
                header.element,
                if data.len() > count {
                    "more than"
                } else {
                    "only"
                },
                data.len().min(count + 1)
            )));
        }
        // Fortran order is C order of the reversed shape: read that, then transpose back.
        if header.fortran_order {
            shape.reverse();
        }
        let be = header.big_endian;
        let tensor = with_dtype!(header.element, T => self.from_vec(
            decode(&data, be, T::from_le_bytes, T::from_be_bytes),
            &shape,
        ))?;
        if header.fortran_order && tensor.rank() > 1 {
            let axes: Vec<usize> = (0..tensor.rank()).rev().collect();
            tensor.transpose(&axes)
        } else {
            Ok(tensor)
        }
    }
}

/// Reads a `.npy` file onto the session default device (see [`Factory::read_npy`]).
pub fn read(path: impl AsRef<Path>) -> Result<Tensor> {
    Factory::session_default().read_npy(path)
}

/// A tensor as the bytes of a little-endian, C-order `.npy` file.
pub(crate) fn encode(tensor: &Tensor) -> Result<Vec<u8>> {
    let descr = match tensor.dtype() {
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::S8 => "|i1",
        DType::S16 => "<i2",
        DType::S32 => "<i4",
        DType::S64 => "<i8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::C64 => "<c8",
        DType::C128 => "<c16",
        DType::BF16 => {
            return Err(Error::InvalidArgument {
                op: "write_npy",
                message: "NPY has no bf16 type (NumPy's float16 is f16): cast the tensor to f32 \
                          or f16 first, or write it to .safetensors, which has bf16"
                    .into(),
            })
        }
    };
    let mut bytes = Header::encode(descr, tensor.shape());
    bytes.extend_from_slice(&tensor.to_bytes()?);
    Ok(bytes)
}

/// Writes a tensor as a little-endian, C-order `.npy` file (`np.load` reads it).
pub fn write(tensor: &Tensor, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let bytes = encode(tensor)?;
    let written = std::fs::File::create(path).and_then(|file| {
        let mut out = BufWriter::new(file);
        out.write_all(&bytes)?;
        out.flush()
    });
    written.map_err(|e| io_error(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{on, Device};

    #[test]
    fn round_trips_every_dtype() {
        let dir = tempfile::tempdir().unwrap();
        let host = on(Device::host(0));
        let tensors = [
            host.from_vec(vec![1u8, 2, 3, 4, 5, 6], &[2, 3]).unwrap(),
            host.from_vec(vec![-1i32, 2], &[2]).unwrap(),
            host.from_vec(vec![i64::MIN, 0], &[1, 2]).unwrap(),
            host.from_vec(vec![0.5f32; 8], &[2, 2, 2]).unwrap(),
            host.from_vec(vec![-0.25f64], &[]).unwrap(),
            host.from_vec(vec![1u16, 65535], &[2]).unwrap(),
            host.from_vec(vec![u32::MAX, 7], &[2, 1]).unwrap(),
            host.from_vec(vec![u64::MAX], &[1]).unwrap(),
            host.from_vec(vec![-128i8, 127], &[2]).unwrap(),
            host.from_vec(vec![-32768i16, 1, 2], &[3]).unwrap(),
        ];
        for (i, t) in tensors.iter().enumerate() {
            let path = dir.path().join(format!("t{i}.npy"));
            write(t, &path).unwrap();
            let back = host.read_npy(&path).unwrap();
            assert_eq!(back.shape(), t.shape());
            assert_eq!(back.dtype(), t.dtype());
            assert_eq!(back.to_bytes().unwrap(), t.to_bytes().unwrap());
        }
    }

    /// A file `np.save` wrote in Fortran order and big-endian: `np.asfortranarray(np.arange(6,
    /// dtype='>i4').reshape(2, 3))`.
    #[test]
    fn reads_fortran_order_big_endian() {
        let dir = tempfile::tempdir().unwrap();
        let header = "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }";
        let mut header = header.to_string();
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        // Column-major: 0 3 1 4 2 5.
        for v in [0i32, 3, 1, 4, 2, 5] {
            bytes.extend_from_slice(&v.to_be_bytes());
        }
        let path = dir.path().join("f.npy");
        std::fs::write(&path, bytes).unwrap();
        let t = on(Device::host(0)).read_npy(&path).unwrap();
        assert_eq!(t.shape(), &[2, 3]);
        assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3, 4, 5]);
    }

    /// Bytes `np.save` (NumPy 2.3) wrote for `np.arange(6, dtype='<f4').reshape(2, 3)`, header
    /// only: ours must be identical so that any reader of NumPy's files reads ours.
    #[test]
    fn writes_the_header_numpy_writes() {
        let mut numpy = b"\x93NUMPY\x01\x00v\x00".to_vec();
        numpy.extend_from_slice(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
        numpy.resize(127, b' ');
        numpy.push(b'\n');
        assert_eq!(Header::encode("<f4", &[2, 3]), numpy);
        let scalar = Header::encode("<f8", &[]);
        assert!(String::from_utf8_lossy(&scalar).contains("'shape': (), }"));
        let vector = Header::encode("|u1", &[2]);
        assert!(String::from_utf8_lossy(&vector).contains("'shape': (2,), }"));
        assert_eq!(vector.len() % 64, 0);
    }

    #[test]
    fn reads_python2_headers_and_rejects_structured_ones() {
        let header =
            Header::parse("{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 3L), }").unwrap();
        assert_eq!(header.shape, vec![2, 3]);
        assert_eq!(header.element, DType::S64);
        let err =
            Header::parse("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (1,), }")
                .unwrap_err();
        assert!(err.contains("structured"), "{err}");
        let err =
            Header::parse("{'descr': '<c4', 'fortran_order': False, 'shape': (1,), }").unwrap_err();
        assert!(
            err.contains("<c4") && err.contains("no tensorbook dtype"),
            "{err}"
        );
        let header =
            Header::parse("{'descr': '>c16', 'fortran_order': False, 'shape': (1,), }").unwrap();
        assert_eq!(header.element, DType::C128);
        assert!(header.big_endian);
    }

    #[test]
    fn short_data_is_a_format_error_naming_the_shape() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short.npy");
        let mut bytes = Header::encode("<f4", &[2, 3]);
        bytes.extend_from_slice(&[0u8; 20]);
        std::fs::write(&path, bytes).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(
            err.contains("short.npy") && err.contains("[2, 3]") && err.contains("24"),
            "{err}"
        );
    }

    #[test]
    fn garbage_is_a_format_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junk.npy");
        std::fs::write(&path, b"not numpy").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("junk.npy") && err.contains("NPY"), "{err}");
    }
}
