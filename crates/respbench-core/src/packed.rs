//! One interval's latency histogram kept small. A fine `--interval` over a
//! long run cuts thousands of intervals, each holding every non-empty bucket
//! of its histograms until the run ends; as `(value, count)` pairs that is
//! 16 bytes a bucket here and about 64 once they are JS arrays. Packed, a
//! bucket costs 2–3 bytes: the same buckets, decoded only when the series'
//! figures or the result's histograms are made.
//!
//! The form (shared with `packages/cli/src/engine-js/packed-histogram.ts`,
//! which decodes what the native engine hands over): for each non-empty
//! bucket, ascending by counts index (`crate::histogram`'s layout), the gap
//! from the bucket after the previous one (the first: its index), then its
//! count, each as 6-bit groups, least significant first, a group followed by
//! another carrying 0x40. Every byte is below 0x80: the text is ASCII, so it
//! crosses to JS as a plain string.

use crate::histogram::{LatencyHistogram, index_of_value, value_of_index};

/// A histogram's non-empty buckets, packed (see the module's text).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackedBuckets(Box<str>);

const MORE: u8 = 0x40;
const GROUP: u64 = 0x3f;

fn push_number(out: &mut Vec<u8>, mut n: u64) {
    while n > GROUP {
        out.push((n & GROUP) as u8 | MORE);
        n >>= 6;
    }
    out.push(n as u8);
}

/// Counts index and count pairs in order, from any source.
fn pack_indexed(pairs: impl Iterator<Item = (usize, u64)>, capacity: usize) -> PackedBuckets {
    let mut out = Vec::with_capacity(capacity);
    let mut next = 0usize;
    for (index, count) in pairs {
        push_number(&mut out, (index - next) as u64);
        push_number(&mut out, count);
        next = index + 1;
    }
    // Every byte pushed is below 0x80.
    PackedBuckets(String::from_utf8(out).expect("ASCII").into_boxed_str())
}

impl PackedBuckets {
    /// The histogram's non-empty buckets, walked once (as `buckets()` walks it).
    pub fn of(h: &LatencyHistogram) -> PackedBuckets {
        let counts = h.counts();
        let non_empty = counts.iter().filter(|&&c| c > 0).count();
        pack_indexed(counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, &c)| (i, c)), non_empty * 3)
    }

    /// `[value, count]` pairs: ascending ones, as `buckets()` gives them, are packed as they come; any others
    /// (out of order, or two values in one bucket) are put in order and added up first, since the form holds
    /// each bucket once, ascending (a gap below zero would wrap).
    pub fn from_buckets(buckets: &[(u64, u64)]) -> PackedBuckets {
        let mut pairs: Vec<(usize, u64)> =
            buckets.iter().filter(|b| b.1 > 0).map(|&(v, c)| (index_of_value(v), c)).collect();
        if !pairs.windows(2).all(|w| w[0].0 < w[1].0) {
            pairs.sort_unstable_by_key(|p| p.0);
            pairs.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    kept.1 += later.1;
                }
                same
            });
        }
        pack_indexed(pairs.into_iter(), buckets.len() * 3)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Bytes held for the buckets (the text; the box's own two words apart).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// `(counts index, count)` for each non-empty bucket, ascending.
    fn indexed(&self) -> Indexed<'_> {
        Indexed { bytes: self.0.as_bytes(), at: 0, next: 0 }
    }

    /// `[lowest equivalent value, count]` for each non-empty bucket, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.indexed().map(|(i, c)| (value_of_index(i), c))
    }

    pub fn to_buckets(&self) -> Vec<(u64, u64)> {
        self.iter().collect()
    }

    /// Two packed histograms added (equal buckets add their counts), without unpacking either whole.
    pub fn add(&self, other: &PackedBuckets) -> PackedBuckets {
        if other.is_empty() {
            return self.clone();
        }
        if self.is_empty() {
            return other.clone();
        }
        let (mut a, mut b) = (self.indexed().peekable(), other.indexed().peekable());
        let merged = std::iter::from_fn(move || match (a.peek().copied(), b.peek().copied()) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                a.next();
                b.next();
                Some((x.0, x.1 + y.1))
            }
            (Some(x), Some(y)) if x.0 < y.0 => a.next(),
            (Some(_), Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, _) => b.next(),
        });
        pack_indexed(merged, self.len() + other.len())
    }
}

/// The packed text (its length is what the interval holds for the buckets).
impl std::ops::Deref for PackedBuckets {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

struct Indexed<'a> {
    bytes: &'a [u8],
    at: usize,
    next: usize,
}

impl Indexed<'_> {
    fn number(&mut self) -> u64 {
        let (mut n, mut shift) = (0u64, 0u32);
        loop {
            let b = self.bytes[self.at];
            self.at += 1;
            n |= (b as u64 & GROUP) << shift;
            if b & MORE == 0 {
                return n;
            }
            shift += 6;
        }
    }
}

impl Iterator for Indexed<'_> {
    type Item = (usize, u64);
    fn next(&mut self) -> Option<(usize, u64)> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let index = self.next + self.number() as usize;
        let count = self.number();
        self.next = index + 1;
        Some((index, count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::{HIGHEST_TRACKABLE_NS, add_buckets};

    /// A recording as a run makes one: latencies spread over six orders of
    /// magnitude with uneven counts, the top of the range and a huge count.
    fn recorded(seed: u64) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let magnitude = (x >> 60) as u32; // 0..15
            h.record(((x >> 20) % 1000 + 1) << magnitude);
        }
        h.record(0);
        h.record(HIGHEST_TRACKABLE_NS - 1);
        h
    }

    #[test]
    fn a_cut_histogram_unpacks_to_every_bucket_it_had() {
        for seed in 0..8 {
            let h = recorded(seed);
            let packed = PackedBuckets::of(&h);
            assert_eq!(packed.to_buckets(), h.buckets(), "seed {seed}");
            assert_eq!(PackedBuckets::from_buckets(&h.buckets()), packed);
        }
        let empty = PackedBuckets::of(&LatencyHistogram::new());
        assert!(empty.is_empty());
        assert_eq!(empty.to_buckets(), vec![]);
    }

    #[test]
    fn counts_past_32_bits_survive() {
        let buckets = vec![(0u64, 1u64 << 62), (1500, u64::MAX), (HIGHEST_TRACKABLE_NS - (1 << 29), 3)];
        let packed = PackedBuckets::from_buckets(&buckets);
        assert_eq!(packed.to_buckets(), buckets);
        assert!(packed.as_str().bytes().all(|b| b < 0x80));
    }

    #[test]
    fn buckets_out_of_order_or_twice_are_packed_in_order_and_added() {
        let h = recorded(4);
        let mut shuffled = h.buckets();
        shuffled.reverse();
        let (v, c) = shuffled[3];
        shuffled.push((v, 0));
        shuffled[3].1 = c - 1;
        shuffled.insert(0, (v, 1));
        assert_eq!(PackedBuckets::from_buckets(&shuffled), PackedBuckets::of(&h));
    }

    #[test]
    fn packed_histograms_add_as_their_buckets_do() {
        let (a, b) = (recorded(1), recorded(2));
        let sum = PackedBuckets::of(&a).add(&PackedBuckets::of(&b));
        assert_eq!(sum.to_buckets(), add_buckets(&a.buckets(), &b.buckets()));
        assert_eq!(PackedBuckets::default().add(&PackedBuckets::of(&a)), PackedBuckets::of(&a));
    }

    /// The form both engines read: pinned to the text
    /// packages/cli/test/packed-histogram.test.ts decodes to the same buckets.
    #[test]
    fn the_packed_form_is_the_one_the_js_side_decodes() {
        let buckets = vec![
            (0u64, 1u64),
            (1, 64),
            (2047, 5),
            (2048, 1),
            (1_499_136, 4095),
            (HIGHEST_TRACKABLE_NS - (1 << 29), 1 << 40),
        ];
        let packed = PackedBuckets::from_buckets(&buckets);
        let pinned =
            b"\x00\x01\x00\x40\x01\x7d\x1f\x05\x00\x01\x77\x56\x02\x7f\x3f\x46\x79\x04\x40\x40\x40\x40\x40\x40\x10";
        assert_eq!(packed.as_str().as_bytes(), pinned);
        assert_eq!(packed.to_buckets(), buckets);
    }

    /// The point of packing: an interval's histogram costs a few bytes a
    /// bucket, against the 16 of `(value, count)` pairs (which fails here).
    #[test]
    fn a_packed_interval_costs_at_most_three_bytes_a_bucket() {
        let h = recorded(3);
        let buckets = h.buckets().len();
        let packed = PackedBuckets::of(&h);
        assert!(buckets > 1000, "a wide recording: {buckets} buckets");
        assert!(packed.len() <= 3 * buckets, "{} bytes for {buckets} buckets", packed.len());
    }
}
