//! Which keys a run touches: the seeded PRNG streams, the key patterns, key
//! bytes and their FNV-1a hash, decimal digits, and how requests are split
//! over connections. This is the Rust half of the workload contract in
//! `docs/workload.md`; the TypeScript engine (`packages/cli/src/engine-js/keys.ts`) implements
//! the same numbers and both are pinned by `test/vectors/workload.json`.
//! Values derived from a key are in [`crate::values`].
//!
//! Everything here that runs per request works on integers and borrowed
//! slices: nothing allocates after setup.

const GOLDEN: u32 = 0x9e37_79b9;
const STREAM_SALT: u32 = 0x85eb_ca77;
/// XORed into the seed for the stream that fills `__rand_int__`, so that
/// stream never shifts the key stream.
pub const RAND_INT_SALT: u32 = 0x5241_4e44;
pub const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// murmur3's 32-bit finaliser: a bijection that spreads every input bit, used
/// both to seed streams and to draw value sizes.
pub fn fmix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x85eb_ca6b);
    x ^= x >> 13;
    x = x.wrapping_mul(0xc2b2_ae35);
    x ^= x >> 16;
    x
}

/// FNV-1a's starting state (its offset basis).
pub const FNV1A32_START: u32 = 0x811c_9dc5;

/// 32-bit FNV-1a: the key hash a value is derived from, cheap enough to run
/// once per request.
#[inline]
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    fnv1a32_continue(FNV1A32_START, bytes)
}

/// FNV-1a from a state already fed some bytes: a key's hash is its prefix's
/// state (computed once) continued over its digits.
#[inline]
pub fn fnv1a32_continue(mut h: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// xoshiro128** seeded through splitmix32. 32-bit operations only, because
/// the TypeScript engine must produce the same numbers without BigInt.
#[derive(Clone, Debug)]
pub struct KeyStream {
    s: [u32; 4],
}

impl KeyStream {
    /// One independent stream per connection (`connection` 0, 1, 2, …).
    pub fn new(seed: u32, connection: u32) -> Self {
        let mut sm = fmix32(seed ^ connection.wrapping_mul(STREAM_SALT));
        let mut s = [0u32; 4];
        for slot in &mut s {
            sm = sm.wrapping_add(GOLDEN);
            *slot = fmix32(sm);
        }
        if s == [0, 0, 0, 0] {
            s[0] = 1;
        }
        KeyStream { s }
    }

    /// Next unsigned 32-bit output.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 9;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(11);
        result
    }

    /// A 53-bit integer from two outputs (high 27 bits first, then low 26):
    /// exact in a double, so JavaScript sees the same number.
    #[inline]
    pub fn next_u53(&mut self) -> u64 {
        let hi = (self.next_u32() >> 5) as u64;
        let lo = (self.next_u32() >> 6) as u64;
        (hi << 26) + lo
    }

    /// Key index in `[0, keyspace)`.
    #[inline]
    pub fn next_key_index(&mut self, keyspace: u64) -> u64 {
        self.next_u53() % keyspace
    }

    /// Mixed mode: true for a write, with probability `set_ratio`/100.
    #[inline]
    pub fn next_is_set(&mut self, set_ratio: u32) -> bool {
        self.next_u32() % 100 < set_ratio
    }
}

/// How many of `total` requests connection `c` of `connections` sends: the
/// remainder goes to the lowest-numbered connections.
pub fn requests_for_connection(total: u64, connections: u64, c: u64) -> u64 {
    total / connections + u64::from(c < total % connections)
}

/// Number of decimal digits of `n` (1 for 0). `ilog10` compares against
/// powers of ten instead of dividing once per digit: the key's digits and
/// each bulk length are counted once per request.
#[inline]
pub fn decimal_digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Writes `n` in decimal at the start of `out`; returns the digit count.
/// Digits go in backwards from the end, so no string is built. Below 100
/// (the bulk lengths of most requests) neither counted nor looped.
#[inline]
pub fn write_decimal(out: &mut [u8], mut n: u64) -> usize {
    if n < 10 {
        out[0] = b'0' + n as u8;
        return 1;
    }
    if n < 100 {
        out[0] = b'0' + (n / 10) as u8;
        out[1] = b'0' + (n % 10) as u8;
        return 2;
    }
    let digits = decimal_digits(n);
    for i in (0..digits).rev() {
        out[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    digits
}

/// Writes `n` in decimal at the end of `buf` in one pass from its last
/// digit (no count first); returns where the digits start.
#[inline]
pub fn write_decimal_tail(buf: &mut [u8; 20], mut n: u64) -> usize {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return at;
        }
    }
}

/// Writes `n` as exactly `width` decimal digits, zero-padded on the left.
#[inline]
pub fn write_padded(out: &mut [u8], mut n: u64, width: usize) -> usize {
    for i in (0..width).rev() {
        out[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    width
}

/// Writes the key `<prefix><index>` at the start of `out`; returns its length.
#[inline]
pub fn write_key(out: &mut [u8], prefix: &[u8], index: u64) -> usize {
    out[..prefix.len()].copy_from_slice(prefix);
    prefix.len() + write_decimal(&mut out[prefix.len()..], index)
}

/// How key indexes are drawn (docs/workload.md, "Key patterns").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyPattern {
    /// `nextU53() mod keyspace`.
    Uniform,
    /// Each connection walks its own stretch of the keyspace, no draw.
    Sequential,
    /// Irwin–Hall around the middle of the keyspace.
    Gaussian,
    /// A bounded power law; index 0 is the hottest key.
    Zipf,
}

impl KeyPattern {
    pub fn parse(text: &str) -> Option<KeyPattern> {
        match text {
            "uniform" => Some(KeyPattern::Uniform),
            "sequential" => Some(KeyPattern::Sequential),
            "gaussian" => Some(KeyPattern::Gaussian),
            "zipf" => Some(KeyPattern::Zipf),
            _ => None,
        }
    }
}

// The spec's 1.4426950408889634, 0.6931471805599453 and 1.4142135623730951:
// the same doubles as std's constants (the vectors pin it).
const LOG2E: f64 = std::f64::consts::LOG2_E;
const LN2: f64 = std::f64::consts::LN_2;
const SQRT2: f64 = std::f64::consts::SQRT_2;
const TWO_POW_53: f64 = 9007199254740992.0;

/// log2 for `a >= 1` with `+ - * /` only, in the spec's order, so it agrees
/// to the bit with the TypeScript engine (a libm `log2` may not).
pub fn det_log2(a: f64) -> f64 {
    let bits = a.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1023u64 << 52));
    if m > SQRT2 {
        m /= 2.0;
        e += 1;
    }
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let mut acc = 1.0 / 15.0;
    for k in [13.0, 11.0, 9.0, 7.0, 5.0, 3.0, 1.0] {
        acc = 1.0 / k + t2 * acc;
    }
    e as f64 + 2.0 * t * acc * LOG2E
}

/// 2^y with `+ - * /` and `floor` only (see [`det_log2`]).
pub fn det_exp2(y: f64) -> f64 {
    let k = y.floor();
    let f = (y - k) * LN2;
    let mut acc = 1.0;
    for j in (1..=16).rev() {
        acc = 1.0 + (f / j as f64) * acc;
    }
    // 2^k from its bits: the high word is (k + 1023) << 20 as a 32-bit integer, as in TS.
    let high = ((k as i64 + 1023) as i32 as u32).wrapping_shl(20);
    acc * f64::from_bits((high as u64) << 32)
}

pub fn det_pow(a: f64, b: f64) -> f64 {
    det_exp2(b * det_log2(a))
}

/// Draws key indexes for one connection by the chosen pattern. Each request
/// source has its own, so a preload replaying a run's keys gets the same ones.
#[derive(Clone, Debug)]
pub struct KeyChooser {
    pattern: KeyPattern,
    keyspace: u64,
    i: u64,
    start: u64,
    median: f64,
    stddev: f64,
    s: f64,
    zipf_scale: f64,
}

impl KeyChooser {
    /// `key_stddev`: gaussian spread in keys (None = keyspace / 6);
    /// `zipf_exponent`: zipf's `s`.
    pub fn new(
        pattern: KeyPattern,
        key_stddev: Option<f64>,
        zipf_exponent: f64,
        keyspace: u64,
        connection: u64,
        connections: u64,
    ) -> KeyChooser {
        let n = keyspace as f64;
        let s = zipf_exponent;
        KeyChooser {
            pattern,
            keyspace,
            i: 0,
            start: connection * (keyspace / connections),
            median: n / 2.0,
            stddev: key_stddev.unwrap_or(n / 6.0),
            s,
            zipf_scale: if s != 1.0 { det_pow(n + 1.0, 1.0 - s) - 1.0 } else { 0.0 },
        }
    }

    /// The uniform draw inlined (the request loop calls this once per key,
    /// and the pattern is the same for the whole run, so the branch
    /// predicts); the other patterns out of line.
    #[inline(always)]
    pub fn next(&mut self, stream: &mut KeyStream) -> u64 {
        match self.pattern {
            KeyPattern::Uniform => stream.next_u53() % self.keyspace,
            _ => self.next_patterned(stream),
        }
    }

    #[inline(never)]
    fn next_patterned(&mut self, stream: &mut KeyStream) -> u64 {
        let n = self.keyspace;
        let clamp = |x: f64| {
            if x < 0.0 {
                0
            } else if x > (n - 1) as f64 {
                n - 1
            } else {
                x as u64
            }
        };
        match self.pattern {
            KeyPattern::Uniform => stream.next_u53() % n,
            KeyPattern::Sequential => {
                let index = (self.start + self.i) % n;
                self.i += 1;
                index
            }
            KeyPattern::Gaussian => {
                let mut total = 0.0;
                for _ in 0..12 {
                    total += stream.next_u32() as f64;
                }
                let z = total / 4294967296.0 - 6.0;
                clamp((self.median + self.stddev * z).floor())
            }
            KeyPattern::Zipf => {
                let u = stream.next_u53() as f64 / TWO_POW_53;
                let x = if self.s == 1.0 {
                    det_pow(n as f64 + 1.0, u)
                } else {
                    det_pow(u * self.zipf_scale + 1.0, 1.0 / (1.0 - self.s))
                };
                clamp(x.floor() - 1.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_writers_handle_edges() {
        let mut out = [0u8; 24];
        assert_eq!(write_decimal(&mut out, 0), 1);
        assert_eq!(&out[..1], b"0");
        let n = write_decimal(&mut out, (1u64 << 53) - 1);
        assert_eq!(&out[..n], b"9007199254740991");
        assert_eq!(write_padded(&mut out, 42, 12), 12);
        assert_eq!(&out[..12], b"000000000042");
        for p in 0..20u32 {
            let x = 10u64.pow(p);
            for n in [x - 1, x, x + 1] {
                assert_eq!(decimal_digits(n), n.to_string().len(), "{n}");
            }
        }
        assert_eq!(decimal_digits(u64::MAX), 20);
        for n in [0, 7, 9, 10, 42, 99, 100, 101, 12_345, 999_999, u64::MAX] {
            let mut tail = [0u8; 20];
            let at = write_decimal_tail(&mut tail, n);
            assert_eq!(&tail[at..], n.to_string().as_bytes());
            let len = write_decimal(&mut out, n);
            assert_eq!(&out[..len], n.to_string().as_bytes());
        }
    }
}
