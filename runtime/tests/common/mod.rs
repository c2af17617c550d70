//! Helpers shared by the runtime's integration tests.
#![allow(dead_code)]

pub mod regions;

use std::sync::{Mutex, MutexGuard};

use tensorbook::{on, DType, Device, Result, Tensor};

/// Tests that change process-wide settings (the session default, the host device count) hold
/// this lock so that they do not observe each other's changes.
pub fn global_settings() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Random data of `dtype` on the binary backend, in a range every op is well defined on.
pub fn random(seed: u64, dtype: DType, shape: &[usize]) -> Tensor {
    let (low, high) = match dtype {
        float if float.is_float() => (-2.0, 2.0),
        unsigned if unsigned.is_unsigned() => (0.0, 12.0),
        _ => (-9.0, 10.0),
    };
    on(Device::BINARY)
        .random_uniform(seed, dtype, shape, low, high)
        .expect("small random tensor")
}

/// The tolerance a backend's result may differ from the reference by, per dtype.
pub fn close(dtype: DType, a: f64, b: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a == b {
        return true;
    }
    let tol = match dtype {
        DType::F32 => 1e-4,
        DType::F64 => 1e-10,
        // Two units in the last place: the reference computes in f64 and the others in f32,
        // and each rounds once to 16 bits.
        DType::F16 => 2.0 * 2f64.powi(-10),
        DType::BF16 => 2.0 * 2f64.powi(-7),
        _ => 0.0,
    };
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

/// Asserts that `actual` equals the binary reference `expected` (dtype, shape, values within
/// tolerance) and lives on `device`.
pub fn assert_matches(what: &str, device: Device, expected: &Tensor, actual: &Tensor) {
    assert_eq!(
        actual.device(),
        device,
        "{what}: result placed on the wrong device"
    );
    assert_eq!(
        actual.dtype(),
        expected.dtype(),
        "{what} on {device}: dtype"
    );
    assert_eq!(
        actual.shape(),
        expected.shape(),
        "{what} on {device}: shape"
    );
    let (e, a) = (expected.to_f64_vec().unwrap(), actual.to_f64_vec().unwrap());
    for (i, (x, y)) in e.iter().zip(&a).enumerate() {
        assert!(
            close(expected.dtype(), *x, *y),
            "{what} on {device}: element {i}: binary gives {x}, {device} gives {y}"
        );
    }
}

/// Turns on the simulated accelerator (two devices, `sim:0` and `sim:1`), so that every suite
/// that iterates `tensorbook::devices()` covers a device whose memory no other backend can
/// read and whose work is queued.
pub fn enable_sim() {
    tensorbook::set_sim_device_count(2);
}

/// The accelerators present: `sim:0` always (enabled here), `cuda:0` when a GPU is. Tests of
/// behaviour that cuda and sim must share run one body over each.
pub fn accelerators() -> Vec<Device> {
    enable_sim();
    let mut out = vec![Device::sim(0)];
    match tensorbook::client_info(tensorbook::Client::Cuda) {
        info if info.available => out.push(Device::cuda(0)),
        info => println!("cuda not covered here: {}", info.reason.unwrap_or_default()),
    }
    out
}

/// Runs `op` on binary tensors and on copies of them on every other available device
/// (`tensorbook::devices()`: host devices, the simulated accelerator's, and cuda's when a GPU
/// is present), and checks every result against binary's. The op must succeed on binary: a
/// case where both sides fail would agree however broken the op is (use [`conform_failing`]
/// for a failure that is the point).
pub fn conform(what: &str, inputs: &[Tensor], op: impl Fn(&[Tensor]) -> Result<Tensor>) {
    enable_sim();
    if let Err(err) = op(inputs) {
        panic!("{what}: failed on binary, the reference: {err}");
    }
    agree(what, inputs, op);
}

/// Like [`conform`] for a case that must fail: on binary with an error `expected` accepts,
/// and on every other device with an error of the same kind.
pub fn conform_failing(
    what: &str,
    inputs: &[Tensor],
    op: impl Fn(&[Tensor]) -> Result<Tensor>,
    expected: impl Fn(&tensorbook::Error) -> bool,
) {
    enable_sim();
    match op(inputs) {
        Err(err) if expected(&err) => {}
        Err(err) => panic!("{what}: binary failed, but not as expected: {err}"),
        Ok(_) => panic!("{what}: binary succeeded where a failure was expected"),
    }
    agree(what, inputs, op);
}

fn agree(what: &str, inputs: &[Tensor], op: impl Fn(&[Tensor]) -> Result<Tensor>) {
    let reference = op(inputs);
    for device in tensorbook::devices() {
        if device == Device::BINARY {
            continue;
        }
        let placed: Vec<Tensor> = inputs
            .iter()
            .map(|t| t.backend_copy(device).unwrap())
            .collect();
        match (&reference, op(&placed)) {
            (Ok(e), Ok(a)) => assert_matches(what, device, e, &a),
            (Err(e), Err(a)) if std::mem::discriminant(e) == std::mem::discriminant(&a) => {}
            (Err(e), Err(a)) => panic!("{what}: binary failed with {e}, {device} otherwise: {a}"),
            (Ok(_), Err(err)) => panic!("{what}: binary succeeded, {device} failed: {err}"),
            (Err(err), Ok(_)) => panic!("{what}: binary failed ({err}), {device} succeeded"),
        }
    }
}

/// Floats with NaN sprinkled in (every seventh element), to check the NaN rules.
pub fn with_nans(t: &Tensor) -> Tensor {
    if !t.dtype().is_float() {
        return t.clone();
    }
    let v: Vec<f64> = t
        .to_f64_vec()
        .unwrap()
        .into_iter()
        .enumerate()
        .map(|(i, x)| if i % 7 == 3 { f64::NAN } else { x })
        .collect();
    on(Device::BINARY)
        .from_vec(v, t.shape())
        .unwrap()
        .as_type(t.dtype())
        .unwrap()
}

/// The project's Python (`.venv`) when it imports every one of `modules` (`"numpy,
/// safetensors"`); `None` otherwise, and the caller's test reports a skip.
pub fn python_with(modules: &str) -> Option<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join(".venv/bin/python");
    let ok = std::process::Command::new(&python)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(python)
}

/// Runs `script` with `python`, `dir` as its one argument; its standard output, or a failure
/// showing its standard error.
pub fn run_python(python: &std::path::Path, script: &str, dir: &std::path::Path) -> String {
    let out = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
