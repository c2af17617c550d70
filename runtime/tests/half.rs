//! bf16 and f16: Nx's documented examples, Nx's type promotion, the rounding the reference
//! defines (compute in f64, round once to nearest even) on every device, accumulation in a
//! wide type, gradients and `jit`, and casts bit for bit against NumPy's `float16` and
//! `ml_dtypes.bfloat16` (in `.venv`) over every 16-bit pattern.

mod common;

use common::enable_sim;
use tensorbook::{bf16, f16, jit, on, tensor, value_and_grad, DType, Device, Tensor};

fn devices() -> Vec<Device> {
    enable_sim();
    tensorbook::devices()
}

fn values(dtype: DType, xs: &[f64], d: Device) -> Tensor {
    on(d)
        .from_vec(xs.to_vec(), &[xs.len()])
        .unwrap()
        .as_type(dtype)
        .unwrap()
}

fn body(t: &Tensor) -> String {
    let text = t.to_string();
    let lines: Vec<&str> = text.lines().collect();
    format!("{} {}", lines[0], lines[2..].join("").trim())
}

#[test]
fn nx_documented_examples() {
    let t = tensor![f16; 1, 2, 3].unwrap();
    assert_eq!(body(&t), "#Tensor<f16[3] [1.0, 2.0, 3.0]>");
    let t = tensor![bf16; 1, 2, 3].unwrap();
    assert_eq!(body(&t), "#Tensor<bf16[3] [1.0, 2.0, 3.0]>");
    // ~VEC[0.1 0.2 0.3 0.4]f16: each value printed in its shortest form for f16.
    let t = tensor![f16; 0.1, 0.2, 0.3, 0.4].unwrap();
    assert_eq!(body(&t), "#Tensor<f16[4] [0.1, 0.2, 0.3, 0.4]>");
    let t = tensor![0.0, 1.0, 2.0]
        .unwrap()
        .as_type(DType::BF16)
        .unwrap();
    assert_eq!(body(&t), "#Tensor<bf16[3] [0.0, 1.0, 2.0]>");
    let non_finite = tensor![f64; f64::INFINITY, f64::NAN].unwrap();
    let t = non_finite.as_type(DType::F16).unwrap();
    assert_eq!(body(&t), "#Tensor<f16[2] [Inf, NaN]>");
    assert_eq!(
        "bf16".parse::<String>().ok().and_then(|n| DType::parse(&n)),
        Some(DType::BF16)
    );
    assert_eq!(DType::F16.size_in_bytes(), 2);
}

#[test]
fn types_promote_as_in_nx() {
    let d = Device::BINARY;
    let h = values(DType::F16, &[1.0, 2.0], d);
    let b = values(DType::BF16, &[1.0, 2.0], d);
    let f = values(DType::F32, &[1.0, 2.0], d);
    let i = values(DType::S32, &[1.0, 2.0], d);
    let u = values(DType::U8, &[1.0, 2.0], d);
    assert_eq!(h.add(&f).unwrap().dtype(), DType::F32);
    assert_eq!(b.add(&f).unwrap().dtype(), DType::F32);
    // Nx.Type.merge ranks brain floats below floats: bf16 + f16 is f16.
    assert_eq!(b.add(&h).unwrap().dtype(), DType::F16);
    assert_eq!(i.add(&b).unwrap().dtype(), DType::BF16);
    assert_eq!(u.multiply(&h).unwrap().dtype(), DType::F16);
    // A number keeps a float tensor's type (merge_number).
    assert_eq!(h.add(1.5).unwrap().dtype(), DType::F16);
    assert_eq!(b.multiply(3).unwrap().dtype(), DType::BF16);
    // Float-only ops keep a half's type; integers still become f32.
    assert_eq!(h.exp().unwrap().dtype(), DType::F16);
    assert_eq!(b.divide(&b).unwrap().dtype(), DType::BF16);
    assert_eq!(u.exp().unwrap().dtype(), DType::F32);
    assert_eq!(h.sum(..).unwrap().dtype(), DType::F16);
    assert_eq!(b.mean(..).unwrap().dtype(), DType::BF16);
    assert_eq!(h.argmax(..).unwrap().dtype(), DType::S32);
    assert_eq!(h.less(&h).unwrap().dtype(), DType::U8);
    assert_eq!(h.dot(&h).unwrap().dtype(), DType::F16);
}

/// The rounding a half op gets: ties to even, overflow to infinity, gradual underflow, NaN
/// kept, on every device.
#[test]
fn arithmetic_rounds_once_on_every_device() {
    for d in devices() {
        let a = values(
            DType::F16,
            &[2048.0, 2048.0, 65504.0, 6e-8, 1.0, f64::NAN],
            d,
        );
        let b = values(DType::F16, &[1.0, 3.0, 65504.0, 2.0, 3.0, 1.0], d);
        let sum = a.add(&b).unwrap().to_f64_vec().unwrap();
        assert_eq!(&sum[..3], &[2048.0, 2052.0, f64::INFINITY], "{d}");
        assert!(sum[5].is_nan(), "{d}");
        let quotient = a.divide(&b).unwrap().to_vec::<f16>().unwrap();
        // The smallest subnormal halved is a tie between 0 and itself: even is 0.
        assert_eq!(quotient[3].to_bits(), 0, "{d}");
        // 1/3 in f16 is 0x3555 (0.333251953125), rounded once from the exact quotient.
        assert_eq!(quotient[4].to_bits(), 0x3555, "{d}");
        let b16 = values(DType::BF16, &[1.0, 3.0e38], d);
        let doubled = b16.multiply(2).unwrap().to_vec::<bf16>().unwrap();
        assert_eq!(doubled[0].to_f64(), 2.0, "{d}");
        assert!(doubled[1].is_infinite(), "{d}");
        let roots = b16.sqrt().unwrap().to_vec::<bf16>().unwrap();
        assert_eq!(roots[0].to_f64(), 1.0, "{d}");
    }
}

/// Sums and products accumulate in f32 (f64 on binary), then round once: adding 4,096 ones
/// one f16 at a time would stop at 2,048 (2,048 + 1 rounds back to 2,048).
#[test]
fn reductions_and_dot_accumulate_wide() {
    for d in devices() {
        for dtype in [DType::F16, DType::BF16] {
            let ones = on(d).ones(dtype, &[4096]).unwrap();
            assert_eq!(ones.sum(..).unwrap().to_f64_vec().unwrap(), [4096.0], "{d}");
            assert_eq!(
                ones.dot(&ones).unwrap().to_f64_vec().unwrap(),
                [4096.0],
                "{d}"
            );
            let m = on(d).ones(dtype, &[3, 4096]).unwrap();
            let w = on(d).ones(dtype, &[4096, 2]).unwrap();
            assert_eq!(m.dot(&w).unwrap().to_f64_vec().unwrap(), [4096.0; 6], "{d}");
            assert_eq!(
                ones.cumulative_sum(0, false).unwrap().to_f64_vec().unwrap()[4095],
                4096.0,
                "{d}"
            );
        }
    }
}

/// Every op of a small model against the binary reference, within two half ulps (binary
/// computes in f64, the others in f32, each rounding once to 16 bits).
#[test]
fn layers_match_binary_on_every_device() {
    let x = on(Device::BINARY)
        .random_uniform(3, DType::F32, &[8, 16], -1.0, 1.0)
        .unwrap();
    let w = on(Device::BINARY)
        .random_uniform(4, DType::F32, &[16, 4], -1.0, 1.0)
        .unwrap();
    for dtype in [DType::F16, DType::BF16] {
        let layer = |x: &Tensor, w: &Tensor| -> tensorbook::Result<Tensor> {
            let x = x.as_type(dtype)?;
            let h = x.dot(&w.as_type(dtype)?)?.tanh()?;
            let sorted = h.sort(1, tensorbook::Direction::Asc)?;
            let e = h.subtract(&h.reduce_max_keep(1)?)?.exp()?.add(&sorted)?;
            Tensor::concatenate(&[e.transpose(..)?, h.transpose(..)?], 0)
        };
        let expected = layer(&x, &w).unwrap();
        assert_eq!(expected.dtype(), dtype);
        for d in devices() {
            let got = layer(&x.backend_copy(d).unwrap(), &w.backend_copy(d).unwrap()).unwrap();
            common::assert_matches(&format!("{dtype} layer"), d, &expected, &got);
        }
    }
}

/// Host computes elementwise ops on halves in one pass of blocks (`backend/host/halves.rs`);
/// sim takes dispatch's wide route through the same f32 kernels. Both round f32 results once,
/// so they agree bit for bit, and both agree with binary's f64 to two half ulps. The length
/// spans several tasks and ends in a short block.
#[test]
fn host_blocks_equal_the_wide_route() {
    enable_sim();
    let n = 100_003;
    for dtype in [DType::F16, DType::BF16] {
        let x = on(Device::BINARY)
            .random_uniform(1, DType::F32, &[n], -4.0, 4.0)
            .unwrap()
            .as_type(dtype)
            .unwrap();
        let y = on(Device::BINARY)
            .random_uniform(2, DType::F32, &[n], 0.5, 3.0)
            .unwrap()
            .as_type(dtype)
            .unwrap();
        type Op = fn(&Tensor, &Tensor) -> tensorbook::Result<Tensor>;
        let ops: [(&str, Op); 7] = [
            ("exp", |x, _| x.exp()),
            ("tanh", |x, _| x.tanh()),
            ("sigmoid", |x, _| x.sigmoid()),
            ("log", |_, y| y.log()),
            ("sqrt", |_, y| y.sqrt()),
            ("add", |x, y| x.add(y)),
            ("divide", |x, y| x.divide(y)),
        ];
        for (name, op) in ops {
            let expected = op(&x, &y).unwrap();
            let run_on =
                |d: Device| op(&x.backend_copy(d).unwrap(), &y.backend_copy(d).unwrap()).unwrap();
            let (host, sim) = (run_on(Device::host(0)), run_on(Device::sim(0)));
            common::assert_matches(
                &format!("{name} {dtype}"),
                Device::host(0),
                &expected,
                &host,
            );
            assert_eq!(
                host.to_binary().unwrap(),
                sim.to_binary().unwrap(),
                "{name} {dtype}: host's blocks and the wide route differ"
            );
        }
    }
}

#[test]
fn gradients_and_jit_run_in_half_precision() {
    for d in devices() {
        for dtype in [DType::F16, DType::BF16] {
            let x = values(dtype, &[0.5, -1.25, 3.0], d);
            let f = value_and_grad(|x: &Tensor| x.multiply(x)?.sum(..));
            let (value, grads) = f.call(&x).unwrap();
            assert_eq!(value.dtype(), dtype, "{d}");
            assert_eq!(value.to_f64_vec().unwrap(), [10.8125], "{d}");
            assert_eq!(grads[0].dtype(), dtype, "{d}");
            assert_eq!(grads[0].to_f64_vec().unwrap(), [1.0, -2.5, 6.0], "{d}");
            let g = jit(|x: &Tensor| x.multiply(2)?.add(1)?.exp()?.sum(..));
            let compiled = g.call(&x).unwrap();
            let eager = g.eager().call(&x).unwrap();
            assert_eq!(compiled.dtype(), dtype, "{d}");
            assert_eq!(
                compiled.to_f64_vec().unwrap(),
                eager.to_f64_vec().unwrap(),
                "{dtype} on {d}: compiled and eager differ"
            );
        }
    }
}

/// NumPy (float16) and ml_dtypes (bfloat16) convert every 16-bit pattern to f32 and f64, and
/// a set of f32 patterns (every rounding decision, plus random bits) to each half, and NumPy
/// f64 values beside each f16 tie to f16; tensorbook's casts must give the same bits on every
/// device (any NaN for a NaN). f64 to bf16 is left out: ml_dtypes rounds through f32 (twice),
/// tensorbook once, as IEEE does (`half_element.rs`'s unit tests pin a case).
#[test]
fn casts_are_bit_exact_against_numpy_and_ml_dtypes() {
    let Some(python) = common::python_with("numpy, ml_dtypes") else {
        println!("skipped: .venv has no numpy and ml_dtypes (run install/python-env.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import sys, numpy as np, ml_dtypes
out = sys.argv[1]
patterns = np.arange(65536, dtype=np.uint32).astype(np.uint16)
rng = np.random.default_rng(7)
ties = []
for man in (10, 7):
    for e in range(-140, 130):
        for k in (1, 3, 5, 127):
            t = np.float32(2.0 ** e * (1 + (k - 0.5) * 2.0 ** -man))
            ties += [t, np.nextafter(t, np.float32(np.inf)), np.nextafter(t, np.float32(-np.inf))]
f32 = np.concatenate([np.array(ties, np.float32), -np.array(ties, np.float32),
                      rng.integers(0, 2**32, 1_000_000, dtype=np.uint32).view(np.float32)])
f32.tofile(f"{out}/f32.bin")
# f64 just off each f16 tie (NumPy rounds f64 to float16 once; ml_dtypes goes through f32).
f64 = np.array([2.0 ** e * (1 + (k - 0.5) * 2.0 ** -10) for e in range(-27, 17) for k in (1, 3, 5, 1023)])
f64 = np.concatenate([f64, np.nextafter(f64, np.inf), np.nextafter(f64, -np.inf), -f64])
f64.tofile(f"{out}/f64.bin")
f64.astype(np.float16).view(np.uint16).tofile(f"{out}/f64_to_f16.bin")
for name, half in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
    h = patterns.view(half)
    h.astype(np.float32).tofile(f"{out}/{name}_to_f32.bin")
    h.astype(np.float64).tofile(f"{out}/{name}_to_f64.bin")
    f32.astype(half).view(np.uint16).tofile(f"{out}/f32_to_{name}.bin")
"#;
    common::run_python(&python, script, dir.path());
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    let patterns: Vec<u8> = (0..=u16::MAX).flat_map(|b| b.to_le_bytes()).collect();
    let f32_bytes = read("f32.bin");
    for d in devices() {
        let f32s = on(d).from_binary(&f32_bytes, DType::F32).unwrap();
        for half in [DType::F16, DType::BF16] {
            let every = on(d).from_binary(&patterns, half).unwrap();
            for (to, file) in [(DType::F32, "to_f32"), (DType::F64, "to_f64")] {
                let ours = every.as_type(to).unwrap().to_binary().unwrap();
                let theirs = read(&format!("{half}_{file}.bin"));
                same_bits(&format!("{half} -> {to} on {d}"), to, &ours, &theirs);
            }
            let ours = f32s.as_type(half).unwrap().to_binary().unwrap();
            let theirs = read(&format!("f32_to_{half}.bin"));
            same_bits(&format!("f32 -> {half} on {d}"), half, &ours, &theirs);
        }
        let f64s = on(d).from_binary(&read("f64.bin"), DType::F64).unwrap();
        let ours = f64s.as_type(DType::F16).unwrap().to_binary().unwrap();
        same_bits(
            &format!("f64 -> f16 on {d}"),
            DType::F16,
            &ours,
            &read("f64_to_f16.bin"),
        );
    }
}

/// Equal bits, element by element, but any NaN for a NaN (payloads are not part of Nx's
/// semantics, and NumPy keeps a signalling payload that a GPU would quiet).
fn same_bits(what: &str, dtype: DType, ours: &[u8], theirs: &[u8]) {
    assert_eq!(ours.len(), theirs.len(), "{what}: lengths");
    let size = dtype.size_in_bytes();
    let as_f64 = |b: &[u8]| match dtype {
        DType::F16 => f16::from_le_bytes([b[0], b[1]]).to_f64(),
        DType::BF16 => bf16::from_le_bytes([b[0], b[1]]).to_f64(),
        DType::F32 => f32::from_le_bytes(b.try_into().unwrap()) as f64,
        _ => f64::from_le_bytes(b.try_into().unwrap()),
    };
    let mut mismatches = 0;
    for (i, (a, b)) in ours.chunks(size).zip(theirs.chunks(size)).enumerate() {
        let (x, y) = (as_f64(a), as_f64(b));
        if a != b && !(x.is_nan() && y.is_nan()) {
            if mismatches < 5 {
                eprintln!("{what}: element {i}: ours {x} ({a:?}), theirs {y} ({b:?})");
            }
            mismatches += 1;
        }
    }
    assert_eq!(mismatches, 0, "{what}: {mismatches} elements differ");
}

#[test]
fn files_carry_half_precision() {
    let dir = tempfile::tempdir().unwrap();
    let h = tensor![f16; 0.1, -2.5, 65504.0].unwrap();
    let b = tensor![bf16; 0.1, -2.5, 1e38].unwrap();
    let path = dir.path().join("w.safetensors");
    tensorbook::data::safetensors::write([("h", &h), ("b", &b)], &path).unwrap();
    let back = tensorbook::data::safetensors::read(&path).unwrap();
    assert_eq!(back["h"].to_binary().unwrap(), h.to_binary().unwrap());
    assert_eq!(back["b"].dtype(), DType::BF16);
    assert_eq!(back["b"].to_binary().unwrap(), b.to_binary().unwrap());
    let npy = dir.path().join("h.npy");
    tensorbook::data::npy::write(&h, &npy).unwrap();
    let read = tensorbook::data::npy::read(&npy).unwrap();
    assert_eq!(
        (read.dtype(), read.to_binary().unwrap()),
        (DType::F16, h.to_binary().unwrap())
    );
    let e = tensorbook::data::npy::write(&b, dir.path().join("b.npy"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("bf16") && e.contains("safetensors"), "{e}");
}
