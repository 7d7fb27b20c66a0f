//! What a key's value is: derived from the key bytes and the size spec
//! alone, so any run can verify what an earlier run wrote
//! (`docs/workload.md`, "Values"; `packages/cli/src/engine-js/values.ts` in TypeScript).
//! Writing one is eight hex digits and a `memcpy` from a fixed filler table.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::keys::{ALPHABET, KeyStream, fmix32, fnv1a32};

/// The smallest value that verifies: its first 8 bytes are the key's whole
/// 32-bit hash. A shorter value carries only part of it, so another key's
/// value often equals it (at 1 byte, 1 key in 16) and `--verify-get` could
/// not tell them apart.
pub const VERIFY_MIN_VALUE_SIZE: usize = 8;

/// The largest keyspace whose written keys a run tracks to tell a lost write
/// from a miss: one bit per key, 16 MiB at most.
pub const WRITTEN_KEYS_MAX_KEYSPACE: u64 = 1 << 27;

/// Keys this run wrote and the server acknowledged, one bit per key index,
/// allocated once per run (mixed mode with `--verify-get`) and shared by the
/// worker threads. A read sent after a key's write was acknowledged must
/// find a value; nil then is a lost write. Relaxed atomics suffice: a bit
/// seen set was set after an acknowledgement, and one not yet seen only
/// means a read is not checked.
#[derive(Debug)]
pub struct WrittenKeys {
    bits: Box<[AtomicU64]>,
}

impl WrittenKeys {
    pub fn new(keyspace: u64) -> WrittenKeys {
        WrittenKeys { bits: (0..keyspace.div_ceil(64)).map(|_| AtomicU64::new(0)).collect() }
    }

    #[inline]
    pub fn add(&self, index: u64) {
        let word = &self.bits[(index >> 6) as usize];
        let bit = 1u64 << (index & 63);
        if word.load(Ordering::Relaxed) & bit == 0 {
            word.fetch_or(bit, Ordering::Relaxed);
        }
    }

    #[inline]
    pub fn has(&self, index: u64) -> bool {
        self.bits[(index >> 6) as usize].load(Ordering::Relaxed) & (1u64 << (index & 63)) != 0
    }
}

/// Offset of the first byte where `a` and `b` differ (the shorter length
/// when one is a prefix of the other).
pub fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()))
}

/// Mixes a value generation into the key's hash: `content = h ^ g * MIX`
/// (generation 0 leaves it as it was). An odd multiplier, so the generation
/// comes back from a value's first 8 bytes: `g = (content ^ h) * MIX_INVERSE`.
pub const GENERATION_MIX: u32 = 0x9e37_79b1;
const GENERATION_MIX_INVERSE: u32 = 0x0e8b_2f51;

/// The hash a value's bytes derive from: the key's, with generation `g` mixed in.
#[inline(always)]
pub fn content_hash(h: u32, generation: u32) -> u32 {
    h ^ generation.wrapping_mul(GENERATION_MIX)
}

/// The generation a value of the key hashed to `h` whose bytes derive from `content` was written with.
#[inline]
pub fn generation_of(h: u32, content: u32) -> u32 {
    (content ^ h).wrapping_mul(GENERATION_MIX_INVERSE)
}

/// The hash a value's first 8 bytes spell (lower-case hex), if they do.
pub fn content_of(got: &[u8]) -> Option<u32> {
    if got.len() < 8 {
        return None;
    }
    let mut content = 0u32;
    for &b in &got[..8] {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => return None,
        };
        content = content << 4 | digit as u32;
    }
    Some(content)
}

const FILL_SEED: u32 = 0x5eed_f111;
const HEX: &[u8; 16] = b"0123456789abcdef";

/// Values are derived from the key bytes and the size spec alone, so any run
/// can verify what an earlier run wrote. The first 8 bytes (or fewer) are the
/// key's FNV-1a hash in hex; the rest is a slice of a fixed filler table
/// starting at an offset taken from the hash, so writing one is a `memcpy`.
#[derive(Clone, Debug)]
pub struct ValueFactory {
    pub min: usize,
    pub max: usize,
    /// `--value-generation`: the generation every value is written with
    /// (mixed mode with `--verify-get`: the first of each key's, see [`crate::key_names`]).
    pub generation: u32,
    fill: Vec<u8>,
}

impl ValueFactory {
    pub fn new(min: usize, max: usize) -> Self {
        ValueFactory { min, max, generation: 0, fill: fill_table(max + 64) }
    }

    /// As [`ValueFactory::new`], values written with `generation` (`--value-generation`).
    pub fn with_generation(min: usize, max: usize, generation: u32) -> Self {
        ValueFactory { generation, ..ValueFactory::new(min, max) }
    }

    /// Size of the value for a key whose hash is `h`.
    #[inline]
    pub fn size_for(&self, h: u32) -> usize {
        if self.min == self.max {
            self.min
        } else {
            self.min + (fmix32(h) as u64 % (self.max - self.min + 1) as u64) as usize
        }
    }

    /// Writes the value for the key hashed to `h` at the start of `out`, of
    /// the run's generation; returns its length.
    #[inline]
    pub fn write_value(&self, out: &mut [u8], h: u32) -> usize {
        self.write_value_of(out, h, content_hash(h, self.generation))
    }

    /// Writes the value for the key hashed to `h` whose bytes derive from
    /// `content` (its hash with a generation mixed in); returns its length.
    /// The size is the key's, whatever the generation.
    #[inline]
    pub fn write_value_of(&self, out: &mut [u8], h: u32, content: u32) -> usize {
        let size = self.size_for(h);
        let h = content;
        let head = size.min(8);
        for (i, byte) in out[..head].iter_mut().enumerate() {
            *byte = HEX[((h >> (28 - 4 * i)) & 15) as usize];
        }
        if size > 8 {
            let off = (h >> 26) as usize;
            out[8..size].copy_from_slice(&self.fill[off + 8..off + size]);
        }
        size
    }

    /// True when `got` is exactly the value for the key hashed to `h`, of the run's generation.
    #[inline]
    pub fn matches(&self, got: &[u8], h: u32) -> bool {
        self.matches_of(got, h, content_hash(h, self.generation))
    }

    /// True when `got` is exactly the value of the key hashed to `h` whose bytes derive from `content`.
    #[inline]
    pub fn matches_of(&self, got: &[u8], h: u32, content: u32) -> bool {
        let size = self.size_for(h);
        let h = content;
        if got.len() != size {
            return false;
        }
        let head = size.min(8);
        for (i, &byte) in got[..head].iter().enumerate() {
            if byte != HEX[((h >> (28 - 4 * i)) & 15) as usize] {
                return false;
            }
        }
        if size > 8 {
            let off = (h >> 26) as usize;
            return got[8..] == self.fill[off + 8..off + size];
        }
        true
    }

    /// The value for a key, as a new vector (messages and tests, not the hot path).
    pub fn value_for_key(&self, key: &[u8]) -> Vec<u8> {
        self.value_of_generation(fnv1a32(key), self.generation)
    }

    /// The value of the key hashed to `h` written with `generation` (messages and tests).
    pub fn value_of_generation(&self, h: u32, generation: u32) -> Vec<u8> {
        let mut out = vec![0u8; self.size_for(h)];
        self.write_value_of(&mut out, h, content_hash(h, generation));
        out
    }
}

/// The filler table: `ALPHABET[x % 62]` for the outputs `x` of stream
/// `(0x5eedf111, 0)`. `h >> 26` is below 64, so `max + 64` bytes cover every slice.
pub fn fill_table(length: usize) -> Vec<u8> {
    let mut stream = KeyStream::new(FILL_SEED, 0);
    (0..length).map(|_| ALPHABET[(stream.next_u32() % 62) as usize]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_ranges_stay_in_bounds() {
        let values = ValueFactory::new(1, 5000);
        for i in 0..2000u64 {
            let key = format!("k{i}");
            let v = values.value_for_key(key.as_bytes());
            assert!((1..=5000).contains(&v.len()));
            assert!(values.matches(&v, fnv1a32(key.as_bytes())));
        }
    }
}
