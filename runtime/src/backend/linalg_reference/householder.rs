//! Householder QR, real and complex alike: LAPACK's reflections (`?larfg`), so even a complete
//! `q`'s columns past the rank (a basis of the null space that nothing else fixes) match
//! host's LAPACK.

use crate::element::Element;
use crate::ir::linalg::qr_conventions;

/// `re - im·i` (a real value unchanged).
fn conj<T: Element>(x: T) -> T {
    let (re, im) = x.to_parts();
    T::from_parts(re, -im)
}

/// `a [m, n] = q·r` into `out` (`q`, then `r`, as [`crate::ir::LinAlg::parts`] lays them) by
/// reflections `H = I - τ·v·vᴴ` with `v₀ = 1`, `τ` complex for complex matrices, chosen so that
/// `Hᴴ` takes the column below the diagonal to a real `β`; `q = H₁·H₂·…`. No reflection where
/// the column is already zero below a real diagonal entry. Then the conventions' signs/phases.
pub(super) fn qr<T: Element>(a: &[T], m: usize, n: usize, complete: bool, out: &mut [T]) {
    let k = m.min(n);
    let mut r = a.to_vec();
    let mut reflectors: Vec<Option<(Vec<T>, T)>> = Vec::with_capacity(k);
    let mut reflected = vec![false; k];
    for j in 0..k {
        let alpha = r[j * n + j];
        let (alpha_re, alpha_im) = alpha.to_parts();
        let below = (j + 1..m)
            .map(|i| {
                let (re, im) = r[i * n + j].to_parts();
                re * re + im * im
            })
            .sum::<f64>()
            .sqrt();
        if below == 0.0 && alpha_im == 0.0 {
            reflectors.push(None);
            continue;
        }
        let beta = -alpha_re.hypot(alpha_im).hypot(below).copysign(alpha_re);
        let tau = T::from_parts((beta - alpha_re) / beta, -alpha_im / beta);
        let pivot = alpha.sub(T::from_f64(beta));
        let mut v = vec![T::ZERO; m];
        v[j] = T::ONE;
        for i in j + 1..m {
            v[i] = r[i * n + j].div(pivot);
        }
        // r ← Hᴴ·r = r - conj(τ)·v·(vᴴ·r).
        for c in j..n {
            let s = (j..m).fold(T::ZERO, |acc, i| acc.add(conj(v[i]).mul(r[i * n + c])));
            let s = s.mul(conj(tau));
            for i in j..m {
                r[i * n + c] = r[i * n + c].sub(s.mul(v[i]));
            }
        }
        r[j * n + j] = T::from_f64(beta);
        for i in j + 1..m {
            r[i * n + j] = T::ZERO;
        }
        reflected[j] = true;
        reflectors.push(Some((v, tau)));
    }
    let (qc, rr) = if complete { (m, m) } else { (k, k) };
    let mut q = vec![T::ZERO; m * qc];
    for i in 0..qc.min(m) {
        q[i * qc + i] = T::ONE;
    }
    // q = H₁·…·H_k·I, the last reflection applied first: q ← q - τ·v·(vᴴ·q).
    for (j, reflector) in reflectors.iter().enumerate().rev() {
        let Some((v, tau)) = reflector else {
            continue;
        };
        for c in 0..qc {
            let s = (j..m).fold(T::ZERO, |acc, i| acc.add(conj(v[i]).mul(q[i * qc + c])));
            let s = s.mul(*tau);
            for i in j..m {
                q[i * qc + c] = q[i * qc + c].sub(s.mul(v[i]));
            }
        }
    }
    let mut r_out = vec![T::ZERO; rr * n];
    for i in 0..rr.min(m) {
        for c in i.min(n)..n {
            r_out[i * n + c] = r[i * n + c];
        }
    }
    qr_conventions(&mut q, &mut r_out, [m, qc], n, &reflected);
    out[..m * qc].copy_from_slice(&q);
    out[m * qc..].copy_from_slice(&r_out);
}
