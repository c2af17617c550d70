//! The `tensorbook` binary as a user runs it.

use std::process::Command;

fn tensorbook(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tensorbook"))
        .args(args)
        .env_remove("TENSORBOOK_CLIENT")
        .output()
        .expect("run tensorbook")
}

/// Runs a command that must succeed and print JSON.
fn json_of(args: &[&str]) -> serde_json::Value {
    let out = tensorbook(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The labels of a bench report's rows.
fn row_labels(v: &serde_json::Value) -> Vec<&str> {
    v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["label"].as_str())
        .collect()
}

#[test]
fn clients_lists_every_client_with_the_reason_for_absent_ones() {
    let out = tensorbook(&["clients"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("host") && text.contains("host:0"), "{text}");
    assert!(text.contains("binary") && text.contains("cuda"), "{text}");
    assert!(text.contains("session default: "), "{text}");
}

#[test]
fn clients_json_is_machine_readable_and_honours_the_host_device_setting() {
    let out = Command::new(env!("CARGO_BIN_EXE_tensorbook"))
        .args(["clients", "--json"])
        .env("TENSORBOOK_HOST_DEVICES", "2")
        .env("TENSORBOOK_CLIENT", "host:1")
        .output()
        .expect("run tensorbook");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let host = v["clients"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["client"] == "host"))
        .expect("a host entry")
        .clone();
    assert_eq!(host["device_count"], 2);
    assert_eq!(v["default"], "host:1");
    let cuda = v["clients"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["client"] == "cuda"))
        .expect("a cuda entry")
        .clone();
    if cuda["available"] == false {
        assert!(cuda["reason"].as_str().is_some_and(|r| !r.is_empty()));
    }
}

#[test]
fn unknown_commands_fail_with_usage() {
    let out = tensorbook(&["frobnicate"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage"));
}

#[test]
fn kernel_install_writes_a_spec_jupyter_can_find_and_is_idempotent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let prefix = dir.path().to_str().expect("utf-8 path");
    for _ in 0..2 {
        let out = tensorbook(&[
            "kernel",
            "install",
            "--prefix",
            prefix,
            "--name",
            "tb-cuda",
            "--display-name",
            "Rust (tensorbook, CUDA)",
            "--client",
            "cuda",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let spec_dir = dir.path().join("share/jupyter/kernels/tb-cuda");
    let spec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(spec_dir.join("kernel.json")).expect("kernel.json"),
    )
    .expect("JSON");
    assert_eq!(spec["language"], "rust");
    assert_eq!(spec["interrupt_mode"], "message");
    assert_eq!(spec["env"]["TENSORBOOK_CLIENT"], "cuda");
    assert_eq!(spec["display_name"], "Rust (tensorbook, CUDA)");
    let argv: Vec<&str> = spec["argv"]
        .as_array()
        .expect("argv")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        argv.contains(&"{connection_file}") && argv.contains(&"run"),
        "{argv:?}"
    );
    assert!(spec_dir.join("logo-32x32.png").is_file() && spec_dir.join("logo-64x64.png").is_file());

    let listed = Command::new(env!("CARGO_BIN_EXE_tensorbook"))
        .args(["kernel", "list"])
        .env("JUPYTER_PATH", dir.path().join("share/jupyter"))
        .output()
        .expect("list");
    assert!(String::from_utf8_lossy(&listed.stdout).contains("tb-cuda"));
    let removed = Command::new(env!("CARGO_BIN_EXE_tensorbook"))
        .args(["kernel", "uninstall", "--name", "tb-cuda"])
        .env("JUPYTER_PATH", dir.path().join("share/jupyter"))
        .output()
        .expect("uninstall");
    assert!(removed.status.success());
    assert!(!spec_dir.exists());
}

#[test]
fn kernel_install_errors_are_clear() {
    let out = tensorbook(&["kernel", "install", "--prefix", "/proc/no-such-dir"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot create") && err.contains("/proc/no-such-dir"),
        "{err}"
    );
    let out = tensorbook(&[
        "kernel",
        "install",
        "--prefix",
        "/tmp",
        "--name",
        "bad name!",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("kernel name"));
    let out = tensorbook(&["kernel", "run", "--connection-file", "/nonexistent.json"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read connection file"));
}

#[test]
fn bench_matmul_times_each_device_and_reports_json() {
    let v = json_of(&[
        "bench", "matmul", "--m", "64", "--k", "32", "--n", "8", "--runs", "2", "--warmup", "0",
        "--json",
    ]);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3, "{v}");
    assert_eq!(rows[0]["device"], "binary");
    assert_eq!(rows[0]["runs"], 2);
    assert_eq!(rows[1]["device"], "host:0");
    assert!(rows[1]["median_ms"].as_f64().is_some());
    // Without a GPU the cuda row says why it was skipped; with one it is timed.
    assert!(
        rows[2]["skipped"].is_string() || rows[2]["device"] == "cuda:0",
        "{v}"
    );
    assert!(
        v["notes"][0]
            .as_str()
            .unwrap_or("")
            .contains("agrees with binary"),
        "{v}"
    );
}

#[test]
fn bench_matmul_table_and_svg() {
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("chart.svg");
    let out = tensorbook(&[
        "bench",
        "matmul",
        "--devices",
        "host",
        "--m",
        "16",
        "--k",
        "16",
        "--n",
        "4",
        "--svg",
        svg.to_str().expect("utf-8 path"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("median ms") && text.contains("@ host:0"),
        "{text}"
    );
    let chart = std::fs::read_to_string(&svg).expect("svg written");
    assert!(chart.starts_with("<svg"), "{chart}");
}

#[test]
fn bench_rejects_unknown_devices_clearly() {
    let out = tensorbook(&["bench", "matmul", "--devices", "tpu"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tpu"), "{err}");
}

#[test]
fn data_import_mnist_names_the_missing_package_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = tensorbook(&[
        "data",
        "import-mnist",
        "--package",
        dir.path().to_str().expect("utf-8 path"),
        "--out",
        dir.path().join("out").to_str().expect("utf-8 path"),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("0.json"), "{err}");
}

#[test]
fn bench_ops_sets_numpy_beside_each_device() {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python");
    let python = if std::path::Path::new(venv).is_file() {
        venv
    } else {
        println!("no project .venv: numpy's column is checked to say why it is empty");
        "/nonexistent/python"
    };
    let v = json_of(&[
        "bench",
        "ops",
        "--filter",
        "sum f32",
        "--runs",
        "1",
        "--devices",
        "host,binary",
        "--python",
        python,
        "--json",
    ]);
    assert_eq!(v["devices"], serde_json::json!(["host:0", "binary"]));
    let row = &v["rows"][0];
    assert_eq!(row["op"], "sum f32 10M");
    assert!(row["seconds"][0].as_f64().is_some_and(|s| s > 0.0), "{row}");
    assert!(row["seconds"][1].as_f64().is_some_and(|s| s > 0.0), "{row}");
    if python == venv {
        assert!(
            row["numpy_seconds"].as_f64().is_some_and(|s| s > 0.0),
            "{v}"
        );
    } else {
        assert!(
            v["numpy_note"]
                .as_str()
                .unwrap()
                .contains("/nonexistent/python"),
            "{v}"
        );
    }
    let table = tensorbook(&[
        "bench", "ops", "--filter", "sum f32", "--runs", "1", "--python", "none",
    ]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("sum f32 10M") && text.contains("host:0/numpy"),
        "{text}"
    );
    assert!(text.contains("numpy: left out"), "{text}");
}

#[test]
fn bench_serving_sets_partitions_beside_one_device() {
    let v = json_of(&[
        "bench", "serving", "--rows", "300", "--batch", "16", "--runs", "1", "--json",
    ]);
    let labels = row_labels(&v);
    assert_eq!(labels.len(), 2, "{v}");
    assert!(labels[0].ends_with("on one device @ host:0"), "{v}");
    assert!(
        labels[1].ends_with("partitioned over host:0,host:1 @ host:0"),
        "{v}"
    );
    for key in ["one_device_images_per_s", "partitioned_images_per_s"] {
        assert!(v[key].as_f64().is_some_and(|r| r > 0.0), "{key}: {v}");
    }
    let notes = v["notes"].to_string();
    // 19 batches of 16 per run, dealt round robin; three runs: warm-up, timed, compared.
    assert!(notes.contains("host:0 30, host:1 27"), "{notes}");
    assert!(
        notes.contains("largest difference between the two results: 0e0"),
        "{notes}"
    );
}

#[test]
fn bench_train_sets_jax_and_pytorch_beside_host_eager_and_jit() {
    // The references' environment (install/references-env.sh) has JAX and PyTorch; the main
    // one has JAX only; without either, both are skipped with the Python's name.
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let references = format!("{root}/.venv-references/bin/python");
    let venv = format!("{root}/.venv/bin/python");
    let (python, with_jax, with_torch) = if std::path::Path::new(&references).is_file() {
        (references, true, true)
    } else if std::path::Path::new(&venv).is_file() {
        (venv, true, false)
    } else {
        ("/nonexistent/python".to_string(), false, false)
    };
    let v = json_of(&[
        "bench",
        "train",
        "--batch",
        "500",
        "--runs",
        "1",
        "--devices",
        "host,cuda",
        "--python",
        &python,
        "--json",
    ]);
    let labels = row_labels(&v);
    // The host rows are measured (a skipped row alone must not satisfy this).
    let measured: Vec<&str> = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["median_ms"].is_number())
        .filter_map(|r| r["label"].as_str())
        .collect();
    assert!(
        measured.contains(&"sgd step 784-50-10 x500 eager @ host:0")
            && measured.contains(&"sgd step 784-50-10 x500 jit @ host:0"),
        "{v}"
    );
    assert!(
        labels.contains(&"sgd step 784-50-10 x500 eager @ cuda:0")
            && labels.contains(&"sgd step 784-50-10 x500 jit @ cuda:0"),
        "{v}"
    );
    assert!(
        v["jit_over_eager"]["host:0"]
            .as_f64()
            .is_some_and(|r| r > 0.0),
        "{v}"
    );
    let notes = v["notes"].to_string();
    // A ratio is only given to a reference whose first step landed where host's did, from the
    // same inputs: the same loss and the same parameters after the update.
    for (key, expected) in [("jax", with_jax), ("torch", with_torch)] {
        let ratio = v[format!("jit_over_{key}")]["host:0"].as_f64();
        if expected {
            assert!(
                ratio.is_some_and(|r| r > 0.0),
                "{key} is installed in {python}: {v}"
            );
        } else {
            assert!(ratio.is_none(), "{key}: {v}");
        }
    }
    if with_jax {
        assert!(notes.contains("the same step: loss"), "{notes}");
    } else {
        assert!(notes.contains("/nonexistent/python"), "{v}");
    }
    if !with_torch {
        assert!(notes.contains("PyTorch"), "why PyTorch has no row: {notes}");
    }
    // Without a GPU the cuda rows are skips that say why, never timings.
    if !tensorbook::client_info(tensorbook::Client::Cuda).available {
        assert!(v["rows"].to_string().contains("skipped"), "{v}");
    }
}

#[test]
fn bench_conv_sets_jax_beside_host_convolutions_and_the_cnn_step() {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python");
    let with_jax = std::path::Path::new(venv).is_file();
    let python = if with_jax {
        venv
    } else {
        "/nonexistent/python"
    };
    let v = json_of(&[
        "bench",
        "conv",
        "--batch",
        "16",
        "--runs",
        "1",
        "--devices",
        "host,cuda",
        "--python",
        python,
        "--json",
    ]);
    let measured: Vec<&str> = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["median_ms"].is_number())
        .filter_map(|r| r["label"].as_str())
        .collect();
    assert!(
        measured.contains(&"conv 256x1x28x28 by 8x1x3x3 /2 @ host:0")
            && measured.contains(&"cnn sgd step x16 eager @ host:0")
            && measured.contains(&"cnn sgd step x16 jit @ host:0"),
        "{v}"
    );
    assert!(
        v["jit_over_eager"]["host:0"]
            .as_f64()
            .is_some_and(|r| r > 0.0),
        "{v}"
    );
    let notes = v["notes"].to_string();
    if with_jax {
        let jax = v["step_over_references"]
            .as_array()
            .is_some_and(|a| a.iter().any(|r| r["reference"].to_string().contains("JAX")));
        assert!(
            jax,
            "JAX is pinned in the project's .venv, so it is timed: {v}"
        );
        // PyTorch is optional: timed when installed, otherwise a note says why not.
        assert!(notes.contains("PyTorch"), "{v}");
    } else {
        assert!(notes.contains("/nonexistent/python"), "{v}");
    }
}

#[test]
fn bench_linalg_sets_numpy_beside_host_factorisations() {
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python");
    let with_numpy = std::path::Path::new(venv).is_file();
    let python = if with_numpy {
        venv
    } else {
        "/nonexistent/python"
    };
    let v = json_of(&[
        "bench",
        "linalg",
        "--sizes",
        "32",
        "--runs",
        "1",
        "--devices",
        "host,cuda",
        "--python",
        python,
        "--json",
    ]);
    let measured: Vec<&str> = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["median_ms"].is_number())
        .filter_map(|r| r["label"].as_str())
        .collect();
    for f in tensorbook::bench::linalg::FUNCTIONS {
        let label = format!("{f} 32 @ host:0");
        assert!(measured.contains(&label.as_str()), "{label}: {v}");
    }
    let notes = v["notes"].to_string();
    assert!(notes.contains("host's LAPACK"), "{v}");
    if with_numpy {
        assert!(
            notes.contains("svd 32 at")
                && notes.contains("dot_c128 32 at")
                && notes.contains("NumPy"),
            "{v}"
        );
    } else {
        assert!(notes.contains("/nonexistent/python"), "{v}");
    }
    let out = tensorbook(&["bench", "linalg", "--sizes", "3x", "--python", "none"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--sizes"));
}
