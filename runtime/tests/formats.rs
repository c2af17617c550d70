//! The formats weights travel in: `.safetensors` and `.npz` written by Python (the
//! `safetensors` package and NumPy in `.venv`) read here bit for bit, the reverse, every dtype
//! round-tripped, Nx's `from_binary`/`to_binary`, and corrupt files (truncated, lying headers,
//! offsets outside the file, overlapping tensors, huge shapes, random damage) as errors naming
//! the file, never a panic or a huge allocation.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use tensorbook::data::{npz, safetensors};
use tensorbook::{on, DType, Device, Error, Tensor};

fn host() -> tensorbook::Factory {
    on(Device::host(0))
}

/// One tensor of each dtype, with values at the edges of their range (NaN and infinities for
/// floats), in several shapes (a scalar and an empty tensor among them).
fn every_dtype() -> Vec<(String, Tensor)> {
    let h = host();
    vec![
        (
            "u8".into(),
            h.from_vec(vec![0u8, 1, 255, 7, 8, 9], &[2, 3]).unwrap(),
        ),
        ("u16".into(), h.from_vec(vec![0u16, 65535], &[2]).unwrap()),
        (
            "u32".into(),
            h.from_vec(vec![u32::MAX, 3], &[1, 2]).unwrap(),
        ),
        ("u64".into(), h.from_vec(vec![u64::MAX], &[]).unwrap()),
        (
            "s8".into(),
            h.from_vec(vec![-128i8, 127, 0, -1], &[2, 2]).unwrap(),
        ),
        (
            "s16".into(),
            h.from_vec(vec![i16::MIN, i16::MAX], &[2]).unwrap(),
        ),
        (
            "s32".into(),
            h.from_vec(vec![i32::MIN, -1, 0, i32::MAX], &[4]).unwrap(),
        ),
        (
            "s64".into(),
            h.from_vec(vec![i64::MIN, i64::MAX], &[2, 1]).unwrap(),
        ),
        (
            "f32".into(),
            h.from_vec(
                vec![f32::NAN, f32::INFINITY, -0.0, 1e-45, f32::MAX, -1.5],
                &[3, 2],
            )
            .unwrap(),
        ),
        (
            "f64".into(),
            h.from_vec(vec![f64::NEG_INFINITY, 5e-324, 0.1], &[3])
                .unwrap(),
        ),
        (
            "f16".into(),
            h.from_vec(vec![f64::NAN, -65504.0, 6e-8, 0.1], &[2, 2])
                .unwrap()
                .as_type(DType::F16)
                .unwrap(),
        ),
        ("empty".into(), h.zeros(DType::F32, &[0, 4]).unwrap()),
    ]
}

fn same(a: &Tensor, b: &Tensor, what: &str) {
    assert_eq!(a.dtype(), b.dtype(), "{what}");
    assert_eq!(a.shape(), b.shape(), "{what}");
    assert_eq!(a.to_bytes().unwrap(), b.to_bytes().unwrap(), "{what}");
}

#[test]
fn every_dtype_round_trips_through_safetensors_and_npz() {
    let dir = tempfile::tempdir().unwrap();
    let tensors = every_dtype();
    let pairs: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let st = dir.path().join("all.safetensors");
    safetensors::write(pairs.clone(), &st).unwrap();
    let back = host().read_safetensors(&st).unwrap();
    assert_eq!(back.len(), tensors.len());
    for (name, t) in &tensors {
        same(&back[name], t, name);
    }
    for compressed in [false, true] {
        let path = dir.path().join(format!("all-{compressed}.npz"));
        npz::write(pairs.clone(), &path, compressed).unwrap();
        let back = host().read_npz(&path).unwrap();
        for (name, t) in &tensors {
            same(&back[name], t, name);
        }
    }
    // Nx's from_binary and to_binary.
    for (name, t) in &tensors {
        let bytes = t.to_binary().unwrap();
        let flat = host().from_binary(&bytes, t.dtype()).unwrap();
        same(&flat.reshape(t.shape()).unwrap(), t, name);
    }
    let e = host()
        .from_binary(&[1, 2, 3], DType::S16)
        .unwrap_err()
        .to_string();
    assert!(e.contains("3 bytes") && e.contains("s16"), "{e}");
    // A name given twice is refused rather than one of the two silently kept.
    let t = &tensors[0].1;
    let e = safetensors::write([("w", t), ("w", t)], dir.path().join("twice.safetensors"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("`w`") && e.contains("twice"), "{e}");
}

/// What Python wrote: for each array, its name, dtype, shape and its little-endian C-order
/// bytes in hex, one line each.
const WRITE_FROM_PYTHON: &str = r#"
import sys, numpy as np
from safetensors.numpy import save_file
d = sys.argv[1]
rng = np.random.default_rng(7)
arrays = {
    "bool": np.array([True, False, True]),
    "u8": np.arange(6, dtype=np.uint8).reshape(2, 3),
    "i8": np.array([-128, 127], dtype=np.int8),
    "u16": np.array([65535, 1], dtype=np.uint16),
    "i16": np.array([-32768], dtype=np.int16),
    "u32": np.array([4294967295], dtype=np.uint32),
    "i32": rng.integers(-1000, 1000, size=(3, 4)).astype(np.int32),
    "u64": np.array([2**64 - 1], dtype=np.uint64),
    "i64": np.array([[-(2**63)], [2**63 - 1]], dtype=np.int64),
    "f32": np.array([np.nan, np.inf, -0.0, 1e-45, 3.5], dtype=np.float32),
    "f64": rng.standard_normal((2, 3, 2)),
    "f16": np.array([np.nan, -np.inf, 65504, 6e-8, 0.1], dtype=np.float16),
    "scalar": np.array(2.5),
}
save_file(arrays, d + "/py.safetensors")
np.savez(d + "/py.npz", **arrays)
# NumPy's other layouts: Fortran order and big-endian, compressed.
np.savez_compressed(d + "/pyc.npz", fortran=np.asfortranarray(rng.standard_normal((3, 4))),
                    big=np.arange(5, dtype=">i4"), **arrays)
for name, a in sorted(arrays.items()):
    a = a.astype(a.dtype.newbyteorder("<"), order="C")
    print(name, a.dtype.str, "x".join(map(str, a.shape)) or "scalar", a.tobytes().hex())
"#;

#[test]
fn files_python_wrote_are_read_bit_for_bit_and_python_reads_ours() {
    let Some(python) = common::python_with("numpy, safetensors") else {
        println!("skipped: .venv has no numpy and safetensors (run install/python-env.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let listing = common::run_python(&python, WRITE_FROM_PYTHON, dir.path());
    let st = host()
        .read_safetensors(dir.path().join("py.safetensors"))
        .unwrap();
    let stored = host().read_npz(dir.path().join("py.npz")).unwrap();
    let deflated = host().read_npz(dir.path().join("pyc.npz")).unwrap();
    let mut checked = 0;
    for line in listing.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        let (name, hex) = (parts[0], parts[parts.len() - 1]);
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        for (from, found) in [
            ("safetensors", &st),
            ("npz", &stored),
            ("npz deflated", &deflated),
        ] {
            let t = &found[name];
            assert_eq!(t.to_bytes().unwrap(), bytes, "{name} from {from}");
            let shape: Vec<String> = t.shape().iter().map(usize::to_string).collect();
            let shape = if shape.is_empty() {
                "scalar".to_string()
            } else {
                shape.join("x")
            };
            assert_eq!(shape, parts[2], "{name} from {from}");
        }
        checked += 1;
    }
    assert_eq!(checked, 13);
    // Fortran order and big-endian arrays come back in C order and native values.
    assert_eq!(deflated["big"].to_vec::<i32>().unwrap(), [0, 1, 2, 3, 4]);
    assert_eq!(deflated["fortran"].shape(), &[3, 4]);

    // The reverse: ours, read by Python.
    let tensors = every_dtype();
    let pairs: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    safetensors::write(pairs.clone(), dir.path().join("ours.safetensors")).unwrap();
    npz::write(pairs.clone(), dir.path().join("ours.npz"), true).unwrap();
    let listing = common::run_python(
        &python,
        r#"
import sys, numpy as np
from safetensors.numpy import load_file
d = sys.argv[1]
st = load_file(d + "/ours.safetensors")
nz = np.load(d + "/ours.npz")
for name in sorted(st):
    a, b = st[name], nz[name]
    assert a.dtype == b.dtype and a.shape == b.shape, name
    assert a.tobytes() == b.tobytes(), name
    print(name, a.dtype.str, "x".join(map(str, a.shape)) or "scalar", a.tobytes().hex())
"#,
        dir.path(),
    );
    let by_name: BTreeMap<&str, &str> = listing
        .lines()
        .map(|l| (l.split(' ').next().unwrap(), l.rsplit(' ').next().unwrap()))
        .collect();
    assert_eq!(by_name.len(), tensors.len());
    for (name, t) in &tensors {
        let hex: String = t
            .to_bytes()
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(by_name[name.as_str()], hex, "{name}");
    }
}

/// A valid safetensors file's bytes, built by hand so each corruption knows where it cuts.
fn safetensors_bytes(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn read_st(bytes: &[u8], dir: &Path) -> Result<BTreeMap<String, Tensor>, Error> {
    let path = dir.join("case.safetensors");
    std::fs::write(&path, bytes).unwrap();
    host().read_safetensors(&path)
}

fn read_npz(bytes: &[u8], dir: &Path) -> Result<BTreeMap<String, Tensor>, Error> {
    let path = dir.join("case.npz");
    std::fs::write(&path, bytes).unwrap();
    host().read_npz(&path)
}

#[test]
fn corrupt_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = [0u8; 16];
    let ok = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[2],"data_offsets":[8,16]}}"#;
    assert_eq!(read_st(&safetensors_bytes(ok, &data), d).unwrap().len(), 2);
    let cases = [
        // Offsets past the data.
        r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[2],"data_offsets":[8,24]}}"#,
        // Overlapping tensors.
        r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[2],"data_offsets":[4,12]}}"#,
        // A shape that does not fit its bytes.
        r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[2],"data_offsets":[8,16]}}"#,
        // A huge shape (its element count overflows).
        r#"{"a":{"dtype":"F64","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,16]}}"#,
        // A dtype tensorbook has no type for.
        r#"{"a":{"dtype":"F8_E4M3","shape":[16],"data_offsets":[0,16]}}"#,
        // Not JSON.
        r#"{"a":"#,
    ];
    for header in cases {
        let e = read_st(&safetensors_bytes(header, &data), d).unwrap_err();
        assert!(e.to_string().contains("case.safetensors"), "{e}");
    }
    // A header length far past the file, an empty file, a file of 3 bytes.
    let mut lying = u64::MAX.to_le_bytes().to_vec();
    lying.extend_from_slice(b"{}");
    for bytes in [lying, Vec::new(), vec![1, 2, 3]] {
        let e = read_st(&bytes, d).unwrap_err();
        assert!(e.to_string().contains("case.safetensors"), "{e}");
    }
    let e = read_st(&safetensors_bytes(cases[4], &data), d)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`a`") && e.contains("F8_E4M3"), "{e}");

    // npz: a member whose header promises far more than it holds, a member that is no .npy,
    // a truncated archive, no archive at all.
    let a = host().from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let good = d.join("good.npz");
    npz::write([("a", &a)], &good, false).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let header_at = bytes
        .windows(5)
        .position(|w| w == b"(2,),")
        .expect("the shape in the member's header");
    let mut huge = bytes.clone();
    huge[header_at..header_at + 5].copy_from_slice(b"(9999");
    let e = read_npz(&huge, d).unwrap_err().to_string();
    assert!(
        e.contains("case.npz") && e.contains("member `a.npy`"),
        "{e}"
    );
    for bytes in [
        bytes[..bytes.len() / 2].to_vec(),
        b"PK\x03\x04nonsense".to_vec(),
        Vec::new(),
    ] {
        let e = read_npz(&bytes, d).unwrap_err().to_string();
        assert!(e.contains("case.npz"), "{e}");
    }
}

#[test]
fn randomly_damaged_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let tensors = every_dtype();
    let pairs: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let st = dir.path().join("all.safetensors");
    safetensors::write(pairs.clone(), &st).unwrap();
    let nz = dir.path().join("all.npz");
    npz::write(pairs, &nz, true).unwrap();
    let mut state = 0x2545F4914F6CDD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (path, read) in [
        (
            &st,
            read_st as fn(&[u8], &Path) -> Result<BTreeMap<String, Tensor>, Error>,
        ),
        (&nz, read_npz),
    ] {
        let clean = std::fs::read(path).unwrap();
        let mut failures = 0;
        for case in 0..600 {
            let mut bytes = clean.clone();
            if case % 3 == 0 {
                bytes.truncate((next() as usize) % clean.len());
            } else {
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % bytes.len();
                    bytes[at] = next() as u8;
                }
            }
            // Ok (damage in the data bytes reads as other values) or an error; never a panic.
            if read(&bytes, dir.path()).is_err() {
                failures += 1;
            }
        }
        assert!(
            failures > 100,
            "{} damaged files read without error",
            600 - failures
        );
    }
}

/// `Nx.serialize`/`Nx.deserialize`: every dtype (bf16 and c128 too, which .npz and
/// .safetensors each lack) with its axis names, on every device; Nx's documented examples;
/// bytes that are not serialized tensors, damaged ones included, as errors.
#[test]
fn serialized_tensors_round_trip_with_their_names() {
    use tensorbook::data::serialize;
    use tensorbook::{Complex32, Complex64};
    common::enable_sim();
    let h = host();
    let mut tensors = every_dtype();
    tensors.push((
        "bf16".into(),
        h.from_vec(vec![f64::INFINITY, -3.0, 1e-40], &[3])
            .unwrap()
            .as_type(DType::BF16)
            .unwrap(),
    ));
    tensors.push((
        "c64".into(),
        h.from_vec(
            vec![Complex32::new(1.0, -2.0), Complex32::new(f32::NAN, 0.5)],
            &[2, 1],
        )
        .unwrap(),
    ));
    tensors.push((
        "c128".into(),
        h.from_vec(
            vec![
                Complex64::new(0.1, 1e300),
                Complex64::new(-0.0, f64::NEG_INFINITY),
            ],
            &[1, 2],
        )
        .unwrap()
        .rename(vec!["row", "column"])
        .unwrap(),
    ));
    tensors.push((
        "named".into(),
        h.iota(DType::S32, &[2, 3], None)
            .unwrap()
            .rename(&[Some("batch"), None][..])
            .unwrap(),
    ));
    for (name, t) in &tensors {
        let back = Tensor::deserialize(&t.serialize().unwrap()).unwrap();
        same(t, &back, name);
        assert_eq!(t.names(), back.names(), "{name}");
    }
    let pairs: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let bytes = serialize::all(pairs).unwrap();
    for d in tensorbook::devices() {
        let back = on(d).deserialize_all(&bytes).unwrap();
        assert_eq!(back.len(), tensors.len());
        for (name, t) in &tensors {
            assert_eq!(back[name].device(), d, "{name}");
            same(t, &back[name], &format!("{name} on {d}"));
            assert_eq!(t.names(), back[name].names(), "{name} on {d}");
        }
    }

    // Nx's examples: a tensor, and a container of two.
    let a = h.from_vec(vec![1, 2, 3], &[3]).unwrap();
    let b = h.from_vec(vec![4, 5, 6], &[3]).unwrap();
    let back = Tensor::deserialize(&a.serialize().unwrap()).unwrap();
    assert_eq!(
        (back.dtype(), back.to_vec::<i32>().unwrap()),
        (DType::S32, vec![1, 2, 3])
    );
    let both = serialize::read_all(&serialize::all([("a", &a), ("b", &b)]).unwrap()).unwrap();
    assert_eq!(both["b"].to_vec::<i32>().unwrap(), [4, 5, 6]);

    let error = |bytes: &[u8]| Tensor::deserialize(bytes).unwrap_err().to_string();
    let several = error(&bytes);
    assert!(several.contains("several tensors"), "{several}");
    let other = ::safetensors::serialize(
        [(
            "w",
            ::safetensors::tensor::TensorView::new(::safetensors::Dtype::F32, vec![1], &[0; 4])
                .unwrap(),
        )],
        None,
    )
    .unwrap();
    let foreign = error(&other);
    assert!(foreign.contains("not written by `serialize`"), "{foreign}");
    let lone = a.serialize().unwrap();
    for cut in [0, 7, lone.len() / 2, lone.len() - 1] {
        let truncated = error(&lone[..cut]);
        assert!(truncated.contains("<serialized tensors>"), "{truncated}");
    }
    let mut state = 0x9E3779B97F4A7C15u64;
    for _ in 0..400 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut damaged = bytes.clone();
        let at = (state as usize) % damaged.len();
        damaged[at] = (state >> 32) as u8;
        // Ok (damage in the data reads as other values) or an error; never a panic.
        let _ = serialize::read_all(&damaged);
    }
}
