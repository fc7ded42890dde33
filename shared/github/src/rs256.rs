//! RSASSA-PKCS1-v1_5 signing with SHA-256 (JWS `RS256`, RFC 8017 §8.2),
//! for hosts without WebCrypto: the Spin component and the native tests.
//!
//! No secret decides a branch, an index or a loop count. Numbers are
//! little-endian `u32` limbs (wasm multiplies two into a `u64` in one
//! instruction); a residue has as many limbs as its modulus, and every
//! operation walks all of them. The private-key operation is
//! Montgomery arithmetic mod `p` and `q` (CIOS multiplication with a
//! masked final subtraction), a fixed 4-bit window over every bit of the
//! exponent's full width with each table entry read (selected by mask,
//! `subtle`), and the CRT recombination. The signature is checked against
//! the public key before it is returned, so a fault or an inconsistent key
//! never releases a wrong one (which would give away a factor of `n`).
//!
//! Signatures are deterministic, so the tests compare them byte for byte
//! with the `rsa` crate's (a dev-dependency only) over keys of several
//! sizes.

// Limb loops index several numbers at once; iterator chains would hide that.
#![allow(clippy::needless_range_loop)]

use sha2::{Digest as _, Sha256};
use subtle::{Choice, ConditionallySelectable as _, ConstantTimeEq as _};

/// `DigestInfo ::= SEQUENCE { SEQUENCE { id-sha256, NULL }, OCTET STRING (32) }`
/// without the digest (RFC 8017 §9.2, note 1).
const SHA256_DIGEST_INFO: [u8; 19] =
    [0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20];

/// Why a key cannot sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignError {
    /// A modulus or prime that is even or below 3, or a modulus too short
    /// for a SHA-256 `DigestInfo` (under 62 bytes).
    UnusableKey,
    /// The signature does not verify under `(n, e)`: the key's parts do
    /// not belong together.
    Inconsistent,
}

/// The parts of a two-prime `RSAPrivateKey`, big-endian, as DER holds them
/// (`d` is not needed: the CRT exponents are used).
#[derive(Clone, Copy)]
pub(crate) struct KeyParts<'a> {
    pub(crate) n: &'a [u8],
    pub(crate) e: &'a [u8],
    pub(crate) p: &'a [u8],
    pub(crate) q: &'a [u8],
    pub(crate) dp: &'a [u8],
    pub(crate) dq: &'a [u8],
    pub(crate) qinv: &'a [u8],
}

/// The RS256 signature of `message`: as many bytes as `n`.
pub(crate) fn sign(key: KeyParts<'_>, message: &[u8]) -> Result<Vec<u8>, SignError> {
    // The sizes of n, p and q are public (they are the key's size).
    let n = Modulus::new(trimmed(limbs(key.n)))?;
    let p = Modulus::new(trimmed(limbs(key.p)))?;
    let q = Modulus::new(trimmed(limbs(key.q)))?;
    let k = byte_len(&n.m);
    let encoded = encode(message, k).ok_or(SignError::UnusableKey)?;
    let x = limbs(&encoded);

    // s1 = x^dp mod p, s2 = x^dq mod q (Montgomery form mod p / plain mod q).
    let s1 = p.pow(&p.to_mont(&x), &padded(limbs(key.dp), p.m.len()));
    let s2 = q.out_of_mont(&q.pow(&q.to_mont(&x), &padded(limbs(key.dq), q.m.len())));
    // h = qinv · (s1 − s2) mod p, s = s2 + h · q (Garner).
    let difference = p.sub(&s1, &p.to_mont(&s2));
    let h = p.mul(&difference, &padded(limbs(key.qinv), p.m.len()));
    let mut s = product(&h, &q.m);
    add_into(&mut s, &s2);
    let s = padded(s, n.m.len());

    // s^e mod n must give back the encoded message.
    let back = n.out_of_mont(&n.pow(&n.to_mont(&s), &trimmed(limbs(key.e))));
    if back != padded(x, n.m.len()) {
        return Err(SignError::Inconsistent);
    }
    Ok(to_bytes(&s, k))
}

/// EMSA-PKCS1-v1_5 with SHA-256 (RFC 8017 §9.2) in `k` bytes.
fn encode(message: &[u8], k: usize) -> Option<Vec<u8>> {
    let t_len = SHA256_DIGEST_INFO.len() + 32;
    // At least eight 0xff octets of padding.
    let padding = k.checked_sub(t_len + 3).filter(|p| *p >= 8)?;
    let mut out = Vec::with_capacity(k);
    out.extend_from_slice(&[0x00, 0x01]);
    out.resize(2 + padding, 0xff);
    out.push(0x00);
    out.extend_from_slice(&SHA256_DIGEST_INFO);
    out.extend_from_slice(&Sha256::digest(message));
    Some(out)
}

/// Big-endian bytes to as many limbs as they fill (a count set by the
/// encoding's length, never by the value).
fn limbs(bytes: &[u8]) -> Vec<u32> {
    bytes.rchunks(4).map(|chunk| chunk.iter().fold(0u32, |limb, byte| (limb << 8) | u32::from(*byte))).collect()
}

/// Without high zero limbs: for public values only (a modulus, `e`).
fn trimmed(mut limbs: Vec<u32>) -> Vec<u32> {
    while limbs.len() > 1 && limbs.last() == Some(&0) {
        limbs.pop();
    }
    limbs
}

fn padded(mut limbs: Vec<u32>, len: usize) -> Vec<u32> {
    limbs.resize(len.max(limbs.len()), 0);
    limbs
}

/// The bytes of the top limb that hold bits, plus the lower limbs.
fn byte_len(limbs: &[u32]) -> usize {
    let top = limbs.last().copied().unwrap_or(0);
    (limbs.len() - 1) * 4 + (4 - top.leading_zeros() as usize / 8)
}

/// `k` big-endian bytes.
fn to_bytes(limbs: &[u32], k: usize) -> Vec<u8> {
    let mut out: Vec<u8> = limbs.iter().rev().flat_map(|limb| limb.to_be_bytes()).collect();
    out.drain(..out.len().saturating_sub(k));
    out
}

/// `a · b`, schoolbook.
fn product(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = vec![0u32; a.len() + b.len()];
    for (i, &ai) in a.iter().enumerate() {
        let mut carry = 0u64;
        for (j, &bj) in b.iter().enumerate() {
            let t = u64::from(out[i + j]) + u64::from(ai) * u64::from(bj) + carry;
            out[i + j] = t as u32;
            carry = t >> 32;
        }
        out[i + b.len()] = carry as u32;
    }
    out
}

/// `a += b`, `a` at least as long as `b` (a final carry is dropped: the
/// caller's sum fits).
fn add_into(a: &mut [u32], b: &[u32]) {
    let mut carry = 0u64;
    for (i, limb) in a.iter_mut().enumerate() {
        let t = u64::from(*limb) + u64::from(b.get(i).copied().unwrap_or(0)) + carry;
        *limb = t as u32;
        carry = t >> 32;
    }
}

/// `a − b` over `a`'s limbs (`b` as long), and the borrow out (0 or 1).
fn difference(a: &[u32], b: &[u32]) -> (Vec<u32>, u64) {
    let mut out = vec![0u32; a.len()];
    let mut borrow = 0u64;
    for j in 0..a.len() {
        let s = u64::from(a[j]).wrapping_sub(u64::from(b[j])).wrapping_sub(borrow);
        out[j] = s as u32;
        borrow = s >> 63;
    }
    (out, borrow)
}

/// An odd modulus `m` and what Montgomery arithmetic mod `m` needs, with
/// `R = 2^(32 · limbs)`.
struct Modulus {
    m: Vec<u32>,
    /// `−m⁻¹ mod 2³²`.
    m0: u32,
    /// `R² mod m`.
    r2: Vec<u32>,
}

impl Modulus {
    fn new(m: Vec<u32>) -> Result<Self, SignError> {
        // Oddness and size are public facts about a key (every prime of one
        // is odd and above 2^31).
        if m.is_empty() || m[0] & 1 == 0 || (m.len() == 1 && m[0] < 3) {
            return Err(SignError::UnusableKey);
        }
        // Newton's iteration: each step doubles the correct low bits.
        let mut inverse = 1u32;
        for _ in 0..5 {
            inverse = inverse.wrapping_mul(2u32.wrapping_sub(m[0].wrapping_mul(inverse)));
        }
        // R² mod m by doubling 1 (2 · 32 · limbs times), each step reduced by
        // a masked subtraction.
        let mut r2 = vec![0u32; m.len()];
        r2[0] = 1;
        let mut modulus = Self { m, m0: inverse.wrapping_neg(), r2: Vec::new() };
        for _ in 0..64 * modulus.m.len() {
            r2 = modulus.add(&r2, &r2);
        }
        modulus.r2 = r2;
        Ok(modulus)
    }

    /// `a · b · R⁻¹ mod m`, for `a < R` and `b < m` (CIOS).
    fn mul(&self, a: &[u32], b: &[u32]) -> Vec<u32> {
        let n = self.m.len();
        // Exact lengths up front, so the loops below check no bounds.
        let (a, b, m) = (&a[..n], &b[..n], &self.m[..n]);
        let mut t = vec![0u32; n + 2];
        let t = &mut t[..n + 2];
        for &ai in a {
            let mut carry = 0u64;
            for j in 0..n {
                let s = u64::from(t[j]) + u64::from(ai) * u64::from(b[j]) + carry;
                t[j] = s as u32;
                carry = s >> 32;
            }
            let s = u64::from(t[n]) + carry;
            t[n] = s as u32;
            t[n + 1] = (s >> 32) as u32;

            let u = t[0].wrapping_mul(self.m0);
            let mut carry = (u64::from(t[0]) + u64::from(u) * u64::from(m[0])) >> 32;
            for j in 1..n {
                let s = u64::from(t[j]) + u64::from(u) * u64::from(m[j]) + carry;
                t[j - 1] = s as u32;
                carry = s >> 32;
            }
            let s = u64::from(t[n]) + carry;
            t[n - 1] = s as u32;
            t[n] = t[n + 1] + (s >> 32) as u32;
        }
        // t < 2m: subtract m unless that borrows.
        self.reduce_once(&t[..n + 1])
    }

    /// `t − m` if `t ≥ m`, else `t`, for `t < 2m` given in `limbs + 1` limbs.
    fn reduce_once(&self, t: &[u32]) -> Vec<u32> {
        let n = self.m.len();
        let (difference, borrow) = difference(&t[..n], &self.m);
        let below = Choice::from((u64::from(t[n]).wrapping_sub(borrow) >> 63) as u8);
        (0..n).map(|j| u32::conditional_select(&difference[j], &t[j], below)).collect()
    }

    /// `a + b mod m`, for `a, b < m`.
    fn add(&self, a: &[u32], b: &[u32]) -> Vec<u32> {
        let n = self.m.len();
        // One limb more than m: the carry lands in it.
        let mut sum = padded(a[..n].to_vec(), n + 1);
        add_into(&mut sum, &b[..n]);
        self.reduce_once(&sum)
    }

    /// `a − b mod m`, for `a, b < m`.
    fn sub(&self, a: &[u32], b: &[u32]) -> Vec<u32> {
        let n = self.m.len();
        let (mut difference, borrow) = difference(&a[..n], &b[..n]);
        // Add m back when it borrowed (the carry out cancels the borrow).
        let wrapped = Choice::from(borrow as u8);
        let addend: Vec<u32> = self.m.iter().map(|limb| u32::conditional_select(&0, limb, wrapped)).collect();
        add_into(&mut difference, &addend);
        difference
    }

    /// `x · R mod m` (Montgomery form of `x mod m`) for `x` of any length:
    /// Horner's rule over `limbs`-sized chunks from the top.
    fn to_mont(&self, x: &[u32]) -> Vec<u32> {
        let n = self.m.len();
        let mut acc = vec![0u32; n];
        for chunk in x.chunks(n).rev() {
            let chunk = padded(chunk.to_vec(), n);
            acc = self.add(&self.mul(&acc, &self.r2), &self.mul(&chunk, &self.r2));
        }
        acc
    }

    /// `a · R⁻¹ mod m`: out of Montgomery form.
    fn out_of_mont(&self, a: &[u32]) -> Vec<u32> {
        let mut one = vec![0u32; self.m.len()];
        one[0] = 1;
        self.mul(a, &one)
    }

    /// `base^exponent` in Montgomery form, `base` in Montgomery form: a
    /// 4-bit window over every bit of `exponent`'s limbs, each window's
    /// table entry selected by scanning the whole table.
    fn pow(&self, base: &[u32], exponent: &[u32]) -> Vec<u32> {
        let one = self.to_mont(&[1]);
        let mut table = vec![one.clone(), base.to_vec()];
        for i in 2..16 {
            table.push(self.mul(&table[i - 1], base));
        }
        let mut acc = one;
        for limb in exponent.iter().rev() {
            for shift in (0..32).step_by(4).rev() {
                for _ in 0..4 {
                    acc = self.mul(&acc, &acc);
                }
                let window = (limb >> shift) & 0xf;
                let mut entry = vec![0u32; self.m.len()];
                for (index, candidate) in table.iter().enumerate() {
                    let hit = window.ct_eq(&(index as u32));
                    for (out, value) in entry.iter_mut().zip(candidate) {
                        out.conditional_assign(value, hit);
                    }
                }
                acc = self.mul(&acc, &entry);
            }
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small modulus checked against `u128` arithmetic.
    #[test]
    fn montgomery_arithmetic_matches_plain_arithmetic() {
        let m: u128 = 0xffff_ffff_ffff_ffc5; // the largest prime below 2^64
        let modulus = Modulus::new(vec![m as u32, (m >> 32) as u32]).unwrap();
        let value = |limbs: &[u32]| u128::from(limbs[0]) | (u128::from(limbs[1]) << 32);
        let of = |x: u128| vec![x as u32, (x >> 32) as u32];
        let r = 1u128 << 64;
        assert_eq!(value(&modulus.r2), (r % m) * (r % m) % m);
        for (a, b) in [(0u128, 0u128), (1, 1), (m - 1, m - 1), (12_345_678_901, 98_765_432_109), (m / 2, m / 3 + 7)] {
            let (am, bm) = (modulus.to_mont(&of(a)), modulus.to_mont(&of(b)));
            assert_eq!(value(&modulus.out_of_mont(&modulus.mul(&am, &bm))), a * b % m, "{a} · {b}");
            assert_eq!(value(&modulus.out_of_mont(&modulus.add(&am, &bm))), (a + b) % m, "{a} + {b}");
            assert_eq!(value(&modulus.out_of_mont(&modulus.sub(&am, &bm))), (a + m - b) % m, "{a} − {b}");
            let mut expected = 1u128;
            for _ in 0..37 {
                expected = expected * a % m;
            }
            assert_eq!(value(&modulus.out_of_mont(&modulus.pow(&am, &[37]))), expected, "{a}^37");
        }
        // A value longer than the modulus is reduced.
        let long = [7u32, 0, 0, 1];
        assert_eq!(value(&modulus.out_of_mont(&modulus.to_mont(&long))), ((1u128 << 96) + 7) % m);
    }

    #[test]
    fn limbs_and_bytes() {
        assert_eq!(limbs(&[0x00, 0x01, 0x02, 0x03, 0x04, 0x05]), [0x0203_0405, 0x0001]);
        assert_eq!(limbs(&[0, 0, 0, 0, 0, 9]), [9, 0]);
        assert_eq!(trimmed(limbs(&[0, 0, 0, 0, 0, 9])), [9]);
        assert_eq!(to_bytes(&[0x0203_0405, 0x0001], 6), [0x00, 0x01, 0x02, 0x03, 0x04, 0x05]);
        assert_eq!(byte_len(&[0xffff_ffff, 0x0001_0000]), 7);
    }

    #[test]
    fn even_or_short_keys_are_refused() {
        assert!(matches!(Modulus::new(vec![4, 1]), Err(SignError::UnusableKey)));
        assert!(matches!(Modulus::new(vec![1]), Err(SignError::UnusableKey)));
        assert!(matches!(Modulus::new(vec![0, 1]), Err(SignError::UnusableKey)));
        assert_eq!(encode(b"m", 61), None, "a 488-bit modulus leaves under eight octets of padding");
        assert_eq!(encode(b"m", 62).map(|em| em.len()), Some(62));
    }
}
