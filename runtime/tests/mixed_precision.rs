//! Mixed precision: a policy's casts, f32 gradients of f32 parameters through a bf16 or f16
//! computation, and the dynamic loss scale of an f16 step (skip and halve on overflow, grow
//! after a run of finite steps), compiled, on every device.

mod common;

use common::enable_sim;
use tensorbook::mixed_precision::{keep_if_not_finite, DynamicLossScale, Policy};
use tensorbook::{jit, on, tensor, value_and_grad_wrt, DType, Device, Tensor};

fn devices() -> Vec<Device> {
    enable_sim();
    tensorbook::devices()
}

/// Mean squared error of `x · w` against `y`, computed in the policy's compute dtype and
/// returned in its output dtype.
fn loss(policy: Policy, w: &Tensor, x: &Tensor, y: &Tensor) -> tensorbook::Result<Tensor> {
    let (w, x, y) = (policy.compute(w)?, policy.compute(x)?, policy.compute(y)?);
    let err = x.dot(&w)?.subtract(&y)?;
    policy.output(&err.multiply(&err)?.mean(..)?)
}

#[test]
fn policies_cast_floats_and_leave_integers() {
    let p = Policy::f16();
    let labels = tensor![1, 2, 3].unwrap();
    assert_eq!(p.compute(&labels).unwrap().dtype(), DType::S32);
    let x = tensor![0.25, 0.5].unwrap();
    assert_eq!(p.compute(&x).unwrap().dtype(), DType::F16);
    assert_eq!(
        p.params(&p.compute(&x).unwrap()).unwrap().dtype(),
        DType::F32
    );
    let e = Policy::new(DType::F32, DType::S32, DType::F32)
        .unwrap_err()
        .to_string();
    assert!(e.contains("compute") && e.contains("s32"), "{e}");
}

#[test]
fn gradients_of_f32_parameters_stay_f32_through_a_half_computation() {
    for d in devices() {
        for policy in [Policy::bf16(), Policy::f16()] {
            let place = on(d);
            let w = place.from_vec(vec![0.5f32, -0.25], &[2, 1]).unwrap();
            let x = place
                .from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])
                .unwrap();
            let y = place.from_vec(vec![1.0f32, 0.0], &[2, 1]).unwrap();
            let f = value_and_grad_wrt(move |a: &[Tensor]| loss(policy, &a[0], &a[1], &a[2]), &[0]);
            let (value, grads) = f.call(&[w.clone(), x.clone(), y.clone()]).unwrap();
            assert_eq!(value.dtype(), DType::F32, "{d}");
            assert_eq!(grads[0].dtype(), DType::F32, "{d}");
            // The f32 gradient, to the half's precision: 2/n · xᵀ(xw - y) = [0.5, 0].
            assert_eq!(value.to_f64_vec().unwrap(), [0.625], "{d}");
            let g = grads[0].to_f64_vec().unwrap();
            assert!((g[0] - 0.5).abs() < 1e-2 && g[1].abs() < 1e-2, "{d}: {g:?}");
        }
    }
}

/// An f16 SGD step with a dynamic loss scale, compiled once: arguments w, x, y, the learning
/// rate and the scale's state; results the loss, w, the state and whether the step was taken.
fn f16_step(scaler: DynamicLossScale) -> tensorbook::Jit<Vec<Tensor>> {
    let policy = Policy::f16();
    let grads_of = value_and_grad_wrt(
        move |a: &[Tensor]| scaler.scale(&loss(policy, &a[0], &a[1], &a[2])?, &a[3]),
        &[0],
    );
    jit(move |a: &[Tensor]| {
        let (scaled_loss, grads) = grads_of.call([&a[0], &a[1], &a[2], &a[4]])?;
        let u = scaler.unscale(&grads, &a[4], &a[5])?;
        let stepped = a[0].subtract(&u.grads[0].multiply(&a[3])?)?;
        let w = keep_if_not_finite(&u.finite, &[stepped], &[a[0].clone()])?;
        let value = scaled_loss.divide(&a[4])?;
        Ok(vec![value, w[0].clone(), u.scale, u.count, u.finite])
    })
}

#[test]
fn an_f16_step_skips_overflow_halves_the_scale_and_trains() {
    for d in devices() {
        let place = on(d);
        let x = place
            .random_uniform(1, DType::F32, &[64, 4], -1.0, 1.0)
            .unwrap();
        let truth = place
            .from_vec(vec![1.0f32, -2.0, 0.5, 3.0], &[4, 1])
            .unwrap();
        let y = x.dot(&truth).unwrap();
        // 2^24 makes the f16 gradients overflow (they are about 10 before scaling).
        let scaler = DynamicLossScale {
            initial: 16_777_216.0,
            period: 5,
            ..DynamicLossScale::default()
        };
        let step = f16_step(scaler);
        let (mut scale, mut count) = scaler.init().unwrap();
        let mut w = place.zeros(DType::F32, &[4, 1]).unwrap();
        let lr = place.scalar(0.1f32).unwrap();
        let (mut skipped, mut first_loss, mut last_loss) = (0, None, 0.0);
        let mut scales = Vec::new();
        for _ in 0..200 {
            let before = w.to_vec::<f32>().unwrap();
            let out = step
                .call(&[w.clone(), x.clone(), y.clone(), lr.clone(), scale, count])
                .unwrap();
            let taken = out[4].to_scalar::<u8>().unwrap() == 1;
            if !taken {
                skipped += 1;
                assert_eq!(
                    out[1].to_vec::<f32>().unwrap(),
                    before,
                    "{d}: a skipped step moved w"
                );
            } else {
                last_loss = out[0].to_scalar::<f32>().unwrap() as f64;
                first_loss.get_or_insert(last_loss);
            }
            w = out[1].clone();
            scale = out[2].clone();
            count = out[3].clone();
            scales.push(scale.to_scalar::<f32>().unwrap());
        }
        assert!(skipped >= 1, "{d}: no step overflowed at 2^24");
        assert!(
            scales[0] < 16_777_216.0,
            "{d}: the scale did not shrink: {scales:?}"
        );
        // After a run of `period` finite steps the scale grows again.
        assert!(
            scales.windows(2).any(|p| p[1] > p[0]),
            "{d}: the scale never grew: {scales:?}"
        );
        let first = first_loss.expect("some step was taken");
        assert!(
            last_loss < first / 100.0,
            "{d}: loss {first} -> {last_loss}"
        );
        assert_eq!(w.dtype(), DType::F32);
    }
}
