//! `while_loop` and `cond` (Nx's `while` and `if` in `defn`): equal to the Rust loop and branch
//! on every device, eagerly, in `.eager()` and compiled; inside `jit` the trip count and the
//! branch are decided by the program from the data (one compilation serves every input); the
//! gradient through `cond` against central differences; the errors.

mod common;

use common::enable_sim;
use tensorbook::{
    cond, fori_loop, grad, jit, on, value_and_grad, while_loop, DType, Device, Jit, Result, Tensor,
};

fn devices() -> Vec<Device> {
    enable_sim();
    tensorbook::devices()
}

/// Newton's method for the square root of each entry, until every step is below 1e-12, with
/// the number of steps taken.
fn newton(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let steps = on(a.device()).from_vec(vec![0i32], &[])?;
    let (x, _, n) = while_loop(
        (a.clone(), a.clone(), steps),
        |(_, step, _)| step.abs()?.reduce_max(..)?.greater(1e-12),
        |(x, _, n)| {
            let next = x.add(&a.divide(x)?)?.multiply(0.5)?;
            let step = next.subtract(x)?;
            Ok((next, step, n.add(1)?))
        },
    )?;
    Ok((x, n))
}

fn rust_newton(a: &[f64]) -> (Vec<f64>, i32) {
    let mut x = a.to_vec();
    let mut n = 0;
    loop {
        let next: Vec<f64> = x.iter().zip(a).map(|(x, a)| 0.5 * (x + a / x)).collect();
        let step = next
            .iter()
            .zip(&x)
            .map(|(n, x)| (n - x).abs())
            .fold(0.0, f64::max);
        x = next;
        n += 1;
        if step <= 1e-12 {
            return (x, n);
        }
    }
}

#[test]
fn a_compiled_while_loop_runs_until_the_data_say_stop() {
    for d in devices() {
        let f: Jit<(Tensor, Tensor)> = jit(|a: &Tensor| newton(a)).on(d);
        for values in [
            vec![2.0f64, 9.0, 0.5],
            vec![1e6, 3.0, 1.0],
            vec![1.0, 1.0, 1.0],
        ] {
            let (want, steps) = rust_newton(&values);
            let a = on(d).from_vec(values.clone(), &[3]).unwrap();
            let (x, n) = f.call(&a).unwrap();
            assert_eq!(x.device(), d);
            assert_eq!(x.to_vec::<f64>().unwrap(), want, "{values:?} on {d}");
            assert_eq!(n.to_scalar::<i32>().unwrap(), steps, "{values:?} on {d}");
            let (x, n) = f.eager().call(&a).unwrap();
            assert_eq!(x.to_vec::<f64>().unwrap(), want);
            assert_eq!(n.to_scalar::<i32>().unwrap(), steps);
            let (x, n) = newton(&a).unwrap();
            assert_eq!(x.to_vec::<f64>().unwrap(), want);
            assert_eq!(n.to_scalar::<i32>().unwrap(), steps);
        }
        // The trip counts differed (1e6 takes many more steps than 1.0), yet one compilation.
        assert_eq!(f.compilations().len(), 1, "{}", f.summary());
        assert!(f.compilations()[0].stats.ops > 0);
    }
}

/// Collatz: `n / 2` when even, `3n + 1` when odd, until 1; a branch inside a loop, on
/// integers, with a captured limit.
fn collatz(n: &Tensor, limit: &Tensor) -> Result<Tensor> {
    let steps = on(n.device()).from_vec(vec![0i64], &[])?;
    let (_, steps) = while_loop(
        (n.clone(), steps),
        |(n, steps)| n.not_equal(1)?.logical_and(&steps.less(limit)?),
        |(n, steps)| {
            let even = n.remainder(2)?.equal(0)?;
            let next = cond(&even, || n.quotient(2), || n.multiply(3)?.add(1))?;
            Ok((next, steps.add(1)?))
        },
    )?;
    Ok(steps)
}

fn rust_collatz(mut n: i64, limit: i64) -> i64 {
    let mut steps = 0;
    while n != 1 && steps < limit {
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        steps += 1;
    }
    steps
}

#[test]
fn a_branch_inside_a_loop_follows_the_data_on_every_device() {
    for d in devices() {
        let f = jit(|n: &Tensor, limit: &Tensor| collatz(n, limit)).on(d);
        for (start, limit) in [(27i64, 1000i64), (6, 1000), (1, 1000), (27, 10), (97, 500)] {
            let n = on(d).from_vec(vec![start], &[]).unwrap();
            let l = on(d).from_vec(vec![limit], &[]).unwrap();
            let want = rust_collatz(start, limit);
            assert_eq!(f.call((&n, &l)).unwrap().to_scalar::<i64>().unwrap(), want);
            assert_eq!(collatz(&n, &l).unwrap().to_scalar::<i64>().unwrap(), want);
        }
        assert_eq!(f.compilations().len(), 1);
    }
}

#[test]
fn a_compiled_cond_chooses_its_branch_at_run_time() {
    for d in devices() {
        // The matmul is in the first branch only: the second must not need `w`'s shape to fit.
        let f = jit(|x: &Tensor, w: &Tensor| {
            let positive = x.sum(..)?.greater(0.0)?;
            cond(
                &positive,
                || x.dot(w)?.multiply(2.0),
                || x.negate()?.dot(w)?.add(1.0),
            )
        })
        .on(d);
        let w = on(d)
            .from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])
            .unwrap();
        for xs in [vec![1.0f32, 2.0, 3.0], vec![-1.0, -2.0, 0.5]] {
            let x = on(d).from_vec(xs.clone(), &[1, 3]).unwrap();
            let got = f.call((&x, &w)).unwrap().to_vec::<f32>().unwrap();
            let dot: Vec<f32> = (0..2)
                .map(|j| (0..3).map(|i| xs[i] * (2 * i + j + 1) as f32).sum())
                .collect();
            let want: Vec<f32> = if xs.iter().sum::<f32>() > 0.0 {
                dot.iter().map(|v| v * 2.0).collect()
            } else {
                dot.iter().map(|v| -v + 1.0).collect()
            };
            assert_eq!(got, want, "{xs:?} on {d}");
        }
        assert_eq!(f.compilations().len(), 1);
    }
}

#[test]
fn a_loop_can_run_gradient_descent_inside_a_compiled_function() {
    // Minimise (x - t)^2 summed, from x0, until the gradient's norm is small: `grad` inside
    // the body differentiates the body's own trace.
    let d = Device::host(0);
    let descend = jit(|x0: &Tensor, t: &Tensor| {
        let target = t.clone();
        let slope = grad(move |x: &Tensor| {
            let e = x.subtract(&target)?;
            e.multiply(&e)?.sum(..)
        });
        let (x, _) = while_loop(
            (x0.clone(), x0.multiply(0.0)?.add(1.0)?),
            |(_, g)| g.abs()?.reduce_max(..)?.greater(1e-6),
            |(x, _)| {
                let g = slope.call(x)?.remove(0);
                Ok((x.subtract(&g.multiply(0.25)?)?, g))
            },
        )?;
        Ok(x)
    });
    let x0 = on(d).from_vec(vec![0.0f64, 10.0], &[2]).unwrap();
    let t = on(d).from_vec(vec![3.0f64, -1.0], &[2]).unwrap();
    let x = descend.call((&x0, &t)).unwrap().to_vec::<f64>().unwrap();
    assert!(
        (x[0] - 3.0).abs() < 1e-6 && (x[1] + 1.0).abs() < 1e-6,
        "{x:?}"
    );
}

#[test]
fn fori_loop_counts_through_its_range() {
    for d in devices() {
        // The sum of i * x for i in 3..10, and a running product: 1 * 3 * 4 * ... * 9.
        let f = jit(|x: &Tensor| {
            let one = on(x.device()).from_vec(vec![1i64], &[])?;
            fori_loop(3..10, (x.multiply(0.0)?, one), |i, (acc, prod)| {
                Ok((
                    acc.add(&x.multiply(&i.as_type(x.dtype())?)?)?,
                    prod.multiply(i)?,
                ))
            })
        })
        .on(d);
        let x = on(d).from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let (acc, prod) = f.call(&x).unwrap();
        assert_eq!(acc.to_vec::<f32>().unwrap(), [42.0, 84.0], "on {d}");
        assert_eq!(prod.to_scalar::<i64>().unwrap(), 181_440);
        // An empty range runs no step.
        let (acc, _) = fori_loop(5..5, (x.clone(), x.clone()), |_, (a, b)| {
            Ok((a.add(1.0)?, b.clone()))
        })
        .unwrap();
        assert_eq!(acc.to_vec::<f32>().unwrap(), [1.0, 2.0]);
    }
}

#[test]
fn a_body_may_return_its_state_reshaped() {
    // The body reshapes twice (no op recorded for either): the loop's results keep the state's
    // shape.
    let f = jit(|x: &Tensor| {
        fori_loop(0..3, x.clone(), |_, x| {
            x.reshape(&[6])?.add(1.0)?.reshape(&[2, 3])
        })
    });
    let x = on(Device::host(0)).zeros(DType::F32, &[2, 3]).unwrap();
    let y = f.call(&x).unwrap();
    assert_eq!(y.shape(), &[2, 3]);
    assert_eq!(y.to_vec::<f32>().unwrap(), [3.0; 6]);
}

fn central_difference(f: &dyn Fn(&[f64]) -> f64, at: &[f64]) -> Vec<f64> {
    let h = 1e-6;
    (0..at.len())
        .map(|i| {
            let mut up = at.to_vec();
            let mut down = at.to_vec();
            up[i] += h;
            down[i] -= h;
            (f(&up) - f(&down)) / (2.0 * h)
        })
        .collect()
}

fn branchy(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let positive = x.sum(..)?.greater(0.0)?;
    let y = cond(
        &positive,
        || x.multiply(w)?.sin(),
        || x.exp()?.multiply(w)?.multiply(w),
    )?;
    y.multiply(x)?.sum(..)
}

fn rust_branchy(x: &[f64], w: &[f64]) -> f64 {
    let positive = x.iter().sum::<f64>() > 0.0;
    x.iter()
        .zip(w)
        .map(|(x, w)| {
            let y = if positive {
                (x * w).sin()
            } else {
                x.exp() * w * w
            };
            y * x
        })
        .sum()
}

#[test]
fn the_gradient_through_cond_is_the_gradient_of_the_branch_taken() {
    for d in devices() {
        let f = value_and_grad(|x: &Tensor, w: &Tensor| branchy(x, w)).on(d);
        for (xs, ws) in [
            (vec![0.5f64, 1.5, -0.25], vec![0.3f64, -0.7, 1.1]),
            (vec![-0.5f64, -1.5, 0.25], vec![0.3f64, -0.7, 1.1]),
        ] {
            let x = on(d).from_vec(xs.clone(), &[3]).unwrap();
            let w = on(d).from_vec(ws.clone(), &[3]).unwrap();
            let (value, grads) = f.call((&x, &w)).unwrap();
            let v = value.to_scalar::<f64>().unwrap();
            assert!((v - rust_branchy(&xs, &ws)).abs() < 1e-12, "{v} on {d}");
            let gx = central_difference(&|x| rust_branchy(x, &ws), &xs);
            let gw = central_difference(&|w| rust_branchy(&xs, w), &ws);
            for (got, want) in [(&grads[0], gx), (&grads[1], gw)] {
                let got = got.to_vec::<f64>().unwrap();
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?} on {d}");
                }
            }
        }
        assert_eq!(f.compilations().len(), 1);
    }
}

#[test]
fn stop_grad_inside_a_branch_still_stops_the_gradient() {
    let d = Device::host(0);
    let f = grad(|x: &Tensor| {
        let positive = x.sum(..)?.greater(0.0)?;
        cond(
            &positive,
            || x.stop_grad()?.multiply(x)?.sum(..),
            || x.multiply(x)?.sum(..),
        )
    });
    let x = on(d).from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    assert_eq!(f.call(&x).unwrap()[0].to_vec::<f64>().unwrap(), [1.0, 2.0]);
    let x = on(d).from_vec(vec![-1.0f64, -2.0], &[2]).unwrap();
    assert_eq!(
        f.call(&x).unwrap()[0].to_vec::<f64>().unwrap(),
        [-2.0, -4.0]
    );
}

#[test]
fn mistakes_are_errors_that_name_the_shapes() {
    let d = Device::host(0);
    let x = on(d).from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    for compiled in [false, true] {
        let run = |f: Jit<Tensor>| {
            if compiled {
                f.call(&x)
            } else {
                f.eager().call(&x)
            }
        };
        let e = run(jit(|x: &Tensor| {
            while_loop(x.clone(), |x| x.greater(0.0), |x| x.subtract(1.0))
        }))
        .unwrap_err()
        .to_string();
        assert!(e.contains("scalar") && e.contains("u8[2]"), "{e}");
        let e = run(jit(|x: &Tensor| {
            while_loop(
                x.clone(),
                |x| x.sum(..)?.greater(0.0),
                |x| x.as_type(DType::F64),
            )
        }))
        .unwrap_err()
        .to_string();
        assert!(e.contains("f64[2]") && e.contains("f32[2]"), "{e}");
        let e = run(jit(|x: &Tensor| {
            cond(&x.sum(..)?.greater(0.0)?, || x.sum(..), || Ok(x.clone()))
        }))
        .unwrap_err()
        .to_string();
        assert!(e.contains("f32[2]") && e.contains("same"), "{e}");
    }
    // Eagerly, outside any trace, the same checks.
    let e = while_loop(x.clone(), |x| x.greater(0.0), |x| x.subtract(1.0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("scalar"), "{e}");
    let e = cond(&x, || Ok(x.clone()), || Ok(x.clone()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("scalar") && e.contains("f32[2]"), "{e}");
    // The gradient does not go through a loop: a clear error, not a wrong number.
    let f = grad(|x: &Tensor| {
        let steps = on(x.device()).from_vec(vec![0i32], &[])?;
        let (y, _) = while_loop(
            (x.clone(), steps),
            |(_, n)| n.less(3),
            |(y, n)| Ok((y.multiply(y)?, n.add(1)?)),
        )?;
        y.sum(..)
    });
    let e = f.call(&x).unwrap_err().to_string();
    assert!(e.contains("while_loop") && e.contains("stop_grad"), "{e}");
}
