//! `vmap` against a Rust loop over the batch: random functions built from the op set (every
//! kind of op: elementwise with broadcasting, casts, reductions, index reductions, products,
//! layout, cumulative ops, sorts, gathers, scatters, slices, padding, windows, convolutions,
//! loops and branches) on every device, compiled and eager; per-example gradients
//! (`vmap(grad(f))`) against the stacked gradients; `in_axes`; the errors.

mod common;

use common::enable_sim;
use tensorbook::{
    cond, grad, grad_wrt, jit, on, vmap, vmap_axes, while_loop, Conv, DType, Device, Direction,
    Result, Tensor, Window,
};

fn devices() -> Vec<Device> {
    enable_sim();
    tensorbook::devices()
}

/// One step of a random function: a `[4, 3]` f64 value `x` with the example's other input `y`
/// (`[4, 3]`) and a shared `w` (`[3, 3]`) to another `[4, 3]` value.
fn step(kind: usize, x: &Tensor, y: &Tensor, w: &Tensor) -> Result<Tensor> {
    let d = x.device();
    match kind {
        0 => x.add(y)?.multiply(0.5),
        1 => x.dot(w)?.multiply(0.3),
        2 => x.tanh(),
        3 => x.subtract(&x.mean_keep([1])?),
        4 => x.cumulative_sum(0, false)?.multiply(0.25),
        5 => x.sort(1, Direction::Asc),
        6 => x.reverse([0]),
        7 => x.greater(0.0)?.select(x, y),
        8 => {
            let order = x.argsort(1, Direction::Desc)?;
            x.take_along_axis(&order, 1)?.add(y)
        }
        9 => {
            let rows = on(d).from_vec(vec![3i64, 0, 2, 2], &[4])?;
            x.take(&rows, 0)
        }
        10 => {
            let top = x.slice(&[0, 0], &[2, 3], None)?;
            let bottom = y.slice(&[2, 0], &[2, 3], None)?;
            Tensor::concatenate(&[top, bottom], 0)
        }
        11 => x.put_slice(&[1, 1], &y.slice(&[0, 0], &[2, 2], None)?),
        12 => {
            let at = on(d).from_vec(vec![0i64, 1, 3, 2, 0, 1], &[3, 2])?;
            let updates = y.slice(&[0, 0], &[1, 3], None)?.reshape(&[3])?;
            x.indexed_add(&at, &updates, ..)
        }
        13 => {
            let best = x.argmax(1)?.as_type(DType::F64)?.reshape(&[4, 1])?;
            x.add(&best.multiply(0.1)?)
        }
        // xᵀ·x as Nx writes it (the left operand read transposed in place).
        14 => x
            .dot_axes(&[0], x, &[0])?
            .slice(&[0, 0], &[3, 3], None)?
            .dot(&y.transpose(..)?)?
            .transpose(..)?
            .multiply(0.01),
        15 => x
            .pad(0.0, &[(1, 1, 0), (1, 1, 0)])?
            .window_sum(&[3, 3], Window::new())?
            .multiply(0.1),
        16 => {
            // A convolution of the example as a one-channel image, by the shared kernel.
            let image = x.reshape(&[1, 1, 4, 3])?;
            let kernel = w.slice(&[0, 0], &[2, 2], None)?.reshape(&[1, 1, 2, 2])?;
            image
                .conv(&kernel, Conv::new().padding(tensorbook::Padding::Same))?
                .reshape(&[4, 3])
        }
        17 => x.as_type(DType::F32)?.multiply(2.0)?.as_type(DType::F64),
        18 => {
            let s = x.sum(..)?;
            cond(&s.greater(0.0)?, || x.multiply(0.5), || x.add(1.0))
        }
        19 => {
            let n = on(d).from_vec(vec![0i32], &[])?;
            let (v, _) = while_loop(
                (x.clone(), n),
                |(v, n)| {
                    v.abs()?
                        .reduce_max(..)?
                        .greater(0.5)?
                        .logical_and(&n.less(5)?)
                },
                |(v, n)| Ok((v.multiply(0.5)?, n.add(1)?)),
            )?;
            Ok(v)
        }
        _ => x.sum_keep([0])?.broadcast(&[4, 3])?.multiply(0.2),
    }
}

const KINDS: usize = 21;

/// Deterministic choices (a linear congruential generator), so a failure names its case.
fn choices(seed: u64, n: usize) -> Vec<usize> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % KINDS as u64) as usize
        })
        .collect()
}

fn program(kinds: &[usize], x: &Tensor, y: &Tensor, w: &Tensor) -> Result<Tensor> {
    let mut v = x.clone();
    for &k in kinds {
        v = step(k, &v, y, w)?;
    }
    v.multiply(y)
}

fn close(a: &Tensor, b: &Tensor, what: &str) {
    assert_eq!(a.shape(), b.shape(), "{what}");
    let (a, b) = (a.to_f64_vec().unwrap(), b.to_f64_vec().unwrap());
    for (i, (p, q)) in a.iter().zip(&b).enumerate() {
        assert!(
            (p - q).abs() <= 1e-9 * (1.0 + q.abs()),
            "{what}: entry {i}: {p} vs {q}"
        );
    }
}

#[test]
fn every_op_batched_equals_a_loop_over_the_examples() {
    let batch = 5;
    let mut covered = [false; KINDS];
    for d in devices() {
        let place = on(d);
        let xs = place
            .random_uniform(1, DType::F64, &[batch, 4, 3], -1.0, 1.0)
            .unwrap();
        let ys = place
            .random_uniform(2, DType::F64, &[batch, 4, 3], -1.0, 1.0)
            .unwrap();
        let w = place
            .random_uniform(3, DType::F64, &[3, 3], -1.0, 1.0)
            .unwrap();
        // Each kind alone, then random chains of them.
        let mut cases: Vec<Vec<usize>> = (0..KINDS).map(|k| vec![k]).collect();
        cases.extend((0..24).map(|seed| choices(seed, 4)));
        for kinds in cases {
            for &k in &kinds {
                covered[k] = true;
            }
            let ks = kinds.clone();
            let f = vmap_axes(
                move |x: &Tensor, y: &Tensor, w: &Tensor| program(&ks, x, y, w),
                &[Some(0), Some(0), None],
            )
            .on(d);
            let looped: Vec<Tensor> = (0..batch)
                .map(|b| {
                    let x = xs.slice_along_axis(b, 1, 0)?.squeeze(0)?;
                    let y = ys.slice_along_axis(b, 1, 0)?.squeeze(0)?;
                    program(&kinds, &x, &y, &w)
                })
                .collect::<Result<_>>()
                .unwrap();
            let want = Tensor::stack(&looped, 0).unwrap();
            let got = f.call((&xs, &ys, &w)).unwrap();
            assert_eq!(got.device(), d);
            close(&got, &want, &format!("{kinds:?} on {d}"));
            let eager = f.eager().call((&xs, &ys, &w)).unwrap();
            close(&eager, &want, &format!("{kinds:?} on {d}, eager"));
        }
    }
    assert!(covered.iter().all(|&c| c), "{covered:?}");
}

#[test]
fn per_example_gradients_are_vmap_of_grad() {
    let d = Device::host(0);
    let place = on(d);
    // A linear model's squared error on one example: its gradient with respect to the weights.
    let loss = |w: &Tensor, x: &Tensor, t: &Tensor| -> Result<Tensor> {
        let e = x.dot(w)?.tanh()?.subtract(t)?;
        e.multiply(&e)?.sum(..)
    };
    let per_example = vmap_axes(
        tensorbook::grad_wrt(
            move |w: &Tensor, x: &Tensor, t: &Tensor| loss(w, x, t),
            &[0],
        ),
        &[None, Some(0), Some(0)],
    );
    let w = place
        .random_uniform(4, DType::F64, &[3, 2], -1.0, 1.0)
        .unwrap();
    let xs = place
        .random_uniform(5, DType::F64, &[6, 3], -1.0, 1.0)
        .unwrap();
    let ts = place
        .random_uniform(6, DType::F64, &[6, 2], -1.0, 1.0)
        .unwrap();
    let got = per_example.call((&w, &xs, &ts)).unwrap();
    assert_eq!(got[0].shape(), &[6, 3, 2]);
    let one = grad(move |w: &Tensor, x: &Tensor, t: &Tensor| loss(w, x, t));
    let stacked: Vec<Tensor> = (0..6)
        .map(|b| {
            let x = xs.slice_along_axis(b, 1, 0)?.squeeze(0)?;
            let t = ts.slice_along_axis(b, 1, 0)?.squeeze(0)?;
            Ok(one.call((&w, &x, &t))?.remove(0))
        })
        .collect::<Result<_>>()
        .unwrap();
    close(
        &got[0],
        &Tensor::stack(&stacked, 0).unwrap(),
        "per-example gradients",
    );
    // Their norms, as notebook 04 prints them: one number per example.
    let norms = got[0]
        .multiply(&got[0])
        .unwrap()
        .sum([1, 2])
        .unwrap()
        .sqrt()
        .unwrap();
    assert_eq!(norms.shape(), &[6]);
    // And the gradient of a vmap: grad(sum of vmap(f)) is the sum of per-example gradients.
    let batch_loss = tensorbook::grad_wrt(
        move |w: &Tensor, xs: &Tensor, ts: &Tensor| {
            vmap_axes(
                move |w: &Tensor, x: &Tensor, t: &Tensor| loss(w, x, t),
                &[None, Some(0), Some(0)],
            )
            .call((w, xs, ts))?
            .sum(..)
        },
        &[0],
    );
    let total = batch_loss.call((&w, &xs, &ts)).unwrap();
    close(&total[0], &got[0].sum([0]).unwrap(), "grad of a vmap");
}

#[test]
fn in_axes_choose_the_batch_axis_and_shared_arguments() {
    let d = Device::host(0);
    let x = on(d)
        .from_vec((0..6).map(f64::from).collect(), &[2, 3])
        .unwrap();
    // Batched along axis 1: three examples of two entries each.
    let sums = vmap_axes(|x: &Tensor| x.sum(..), &[Some(1)]);
    assert_eq!(
        sums.call(&x).unwrap().to_vec::<f64>().unwrap(),
        [3.0, 5.0, 7.0]
    );
    // A result that depends on no batched value is still one per example.
    let constant = vmap(|x: &Tensor| on(x.device()).from_vec(vec![1.0f64, 2.0], &[2]));
    assert_eq!(constant.call(&x).unwrap().shape(), &[2, 2]);
    // A result reshaped without an op (a vector dot's gradient comes back in its shape).
    let g = vmap_axes(
        grad_wrt(
            |w: &Tensor, x: &Tensor| x.dot(w)?.multiply(&x.dot(w)?),
            &[0],
        ),
        &[None, Some(0)],
    );
    let w = on(d).from_vec(vec![1.0f64, 0.0, -1.0], &[3]).unwrap();
    let g = g.call((&w, &x)).unwrap().remove(0);
    assert_eq!(g.shape(), &[2, 3]);
    // Inside jit, with a captured value of the enclosing trace.
    let scaled = jit(|x: &Tensor, s: &Tensor| {
        let s = s.clone();
        vmap(move |row: &Tensor| row.multiply(&s)?.sum(..)).call(x)
    });
    let s = on(d).from_vec(vec![2.0f64], &[]).unwrap();
    assert_eq!(
        scaled.call((&x, &s)).unwrap().to_vec::<f64>().unwrap(),
        [6.0, 24.0]
    );
}

#[test]
fn mistakes_are_errors_that_name_the_shapes() {
    let d = Device::host(0);
    let a = on(d).zeros(DType::F32, &[2, 3]).unwrap();
    let b = on(d).zeros(DType::F32, &[4, 3]).unwrap();
    let f = vmap(|a: &Tensor, b: &Tensor| a.add(b));
    let e = f.call((&a, &b)).unwrap_err().to_string();
    assert!(
        e.contains("2") && e.contains("4") && e.contains("batch"),
        "{e}"
    );
    let e = vmap_axes(|a: &Tensor| a.sum(..), &[Some(2)])
        .call(&a)
        .unwrap_err()
        .to_string();
    assert!(e.contains("f32[2][3]") && e.contains("axis 2"), "{e}");
    let e = vmap_axes(|a: &Tensor| a.sum(..), &[Some(0), None])
        .call(&a)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("2 batch axes") && e.contains("1 argument"),
        "{e}"
    );
    let e = vmap_axes(|a: &Tensor| a.sum(..), &[None])
        .call(&a)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no argument is batched"), "{e}");
}
