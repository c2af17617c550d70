//! The benchmarks' own checks, as they run on this machine: every device in the list that is
//! available is measured and its product checked against binary's, and every unavailable one is
//! a skipped row saying why. In the GPU check bundle (install/gpu-check/suites.txt), so the
//! cuda rows are held to the same checks where there is a GPU.

use tensorbook::bench::{matmul, train, MatmulBench, Report, Row, Runs, Silent};
use tensorbook::{client_info, Client, DType, Device};

fn gpu() -> bool {
    client_info(Client::Cuda).available
}

/// The label of each measured row, and of each skipped row.
fn labels(report: &Report) -> (Vec<String>, Vec<String>) {
    let mut measured = Vec::new();
    let mut skipped = Vec::new();
    for row in &report.rows {
        match row {
            Row::Measured(m) => measured.push(m.label.clone()),
            Row::Skipped { label, .. } => skipped.push(label.clone()),
        }
    }
    (measured, skipped)
}

#[test]
fn matmul_measures_every_available_device_and_checks_its_product() {
    let bench = MatmulBench {
        m: 300,
        k: 784,
        n: 10,
        dtype: DType::F32,
        devices: vec![Device::BINARY, Device::host(0), Device::cuda(0)],
        runs: Runs {
            warmup: 0,
            timed: 2,
        },
        seed: 7,
    };
    let figures = matmul(&bench, &mut Silent).unwrap();
    let report = &figures.report;
    let (measured, skipped) = labels(report);
    let expected_measured = if gpu() { 3 } else { 2 };
    assert_eq!(measured.len(), expected_measured, "{report:?}");
    assert_eq!(skipped.len(), 3 - expected_measured, "{report:?}");
    assert!(
        figures.disagreements.is_empty(),
        "{:?}",
        figures.disagreements
    );
    assert_eq!(
        report.notes.len(),
        expected_measured - 1,
        "{:?}",
        report.notes
    );
    assert!(report.notes[0].starts_with("host:0 agrees with binary"));
    if gpu() {
        assert!(report.notes[1].starts_with("cuda:0 agrees with binary"));
    }
}

#[test]
fn the_training_step_rows_are_labelled_with_their_device() {
    let bench = train::TrainBench {
        devices: vec![Device::host(0), Device::cuda(0)],
        batch: 64,
        runs: Runs {
            warmup: 0,
            timed: 1,
        },
    };
    let figures = train::run(&bench, &[Err("not asked".into())], &mut Silent).unwrap();
    let (measured, skipped) = labels(&figures.report);
    for kind in ["eager", "jit"] {
        let host = format!("sgd step 784-50-10 x64 {kind} @ host:0");
        assert!(measured.contains(&host), "{measured:?}");
        let cuda = format!("sgd step 784-50-10 x64 {kind} @ cuda:0");
        if gpu() {
            assert!(measured.contains(&cuda), "{measured:?}");
        } else {
            assert!(skipped.contains(&cuda), "{skipped:?}");
        }
    }
}
