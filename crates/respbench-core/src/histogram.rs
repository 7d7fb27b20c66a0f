//! Latency histogram with HdrHistogram's bucket layout: lowest discernible
//! value 1 ns, highest 2^40 ns, 3 significant digits. The TypeScript engine
//! (`packages/cli/src/engine-js/histogram.ts`) indexes values the same way, so
//! histograms from either engine, or from several threads or machines, merge
//! by adding counts. Recording touches a fixed array: no allocation.
//!
//! The counts are a flat array indexed as HdrHistogram indexes them, kept
//! here rather than in the `hdrhistogram` crate because its `record` (bounds
//! and overflow checks, min/max tracking, a call that is not inlined) cost
//! about 60 instructions a reply on the plain path; this one is a
//! leading-zeros count, two shifts and an add. The tests record the same
//! values both ways and compare every bucket and quantile.

use crate::command_kind::Op;

/// Values at or above this are counted at the top (2^40 - 1 ns, as the TS engine does).
pub const HIGHEST_TRACKABLE_NS: u64 = 1 << 40;

/// 3 significant digits: 2,048 sub-buckets, the lower half of each bucket
/// past the first shared with the one below (HdrHistogram's layout).
const SUB_BUCKET_HALF_COUNT_MAGNITUDE: u32 = 10;
const SUB_BUCKET_HALF_COUNT: usize = 1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE;
const SUB_BUCKET_MASK: u64 = (2 << SUB_BUCKET_HALF_COUNT_MAGNITUDE) - 1;
/// 64 − unit magnitude (0) − sub-bucket half-count magnitude − 1.
const LEADING_ZERO_COUNT_BASE: u32 = 64 - SUB_BUCKET_HALF_COUNT_MAGNITUDE - 1;
/// 31 buckets cover 2^40 ns; one half-bucket more for the first bucket's lower half.
const BUCKET_COUNT: usize = 31;
const COUNTS_LEN: usize = (BUCKET_COUNT + 1) * SUB_BUCKET_HALF_COUNT;

/// The counts index of `value` (below [`HIGHEST_TRACKABLE_NS`]).
#[inline(always)]
fn index_of(value: u64) -> usize {
    let bucket = LEADING_ZERO_COUNT_BASE - (value | SUB_BUCKET_MASK).leading_zeros();
    let sub_bucket = (value >> bucket) as usize;
    ((bucket as usize + 1) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + sub_bucket - SUB_BUCKET_HALF_COUNT
}

/// The lowest value counted at `index` (HdrHistogram's `value_for`).
fn value_of(index: usize) -> u64 {
    let bucket = (index >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) as i64 - 1;
    let sub_bucket = ((index & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT) as u64;
    if bucket < 0 { sub_bucket - SUB_BUCKET_HALF_COUNT as u64 } else { sub_bucket << bucket }
}

/// The counts index of a bucket's lowest equivalent value (a value in the range).
pub(crate) fn index_of_value(value: u64) -> usize {
    index_of(value.min(HIGHEST_TRACKABLE_NS - 1))
}

/// The lowest value counted at `index`.
pub(crate) fn value_of_index(index: usize) -> u64 {
    value_of(index)
}

/// The highest value counted at `index`.
fn highest_value_of(index: usize) -> u64 {
    let lowest = value_of(index);
    let bucket = LEADING_ZERO_COUNT_BASE - (lowest | SUB_BUCKET_MASK).leading_zeros();
    lowest + (1u64 << bucket) - 1
}

/// One per worker thread while a phase runs; merged when the threads join.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    counts: Box<[u64; COUNTS_LEN]>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        // Zeroed on the heap directly (a 256 KiB array is not built on the stack first).
        let counts = vec![0u64; COUNTS_LEN].into_boxed_slice().try_into().expect("COUNTS_LEN long");
        LatencyHistogram { counts }
    }

    /// Records one latency in ns.
    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        // The clamp keeps the index below COUNTS_LEN, and the mask lets the
        // compiler see it: no bounds check.
        self.counts[index_of(ns.min(HIGHEST_TRACKABLE_NS - 1)) & (COUNTS_LEN - 1)] += 1;
    }

    /// Adds another thread's counts.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine += theirs;
        }
    }

    /// The value at quantile `q` (0..1), in ns; 0 when empty. As
    /// HdrHistogram's `value_at_quantile`: the highest value of the bucket
    /// the quantile's count falls in (the lowest for q = 0).
    pub fn value_at_quantile(&self, q: f64) -> u64 {
        let q = q.min(1.0);
        let wanted = ((q * self.total() as f64).ceil() as u64).max(1);
        let mut so_far = 0u64;
        for (i, &count) in self.counts.iter().enumerate() {
            so_far += count;
            if so_far >= wanted {
                return if q == 0.0 { value_of(i) } else { highest_value_of(i) };
            }
        }
        0
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Empties it, keeping its counts array (no allocation).
    pub fn reset(&mut self) {
        self.counts.fill(0);
    }

    /// Each bucket's count, by counts index (for packing an interval's).
    pub(crate) fn counts(&self) -> &[u64] {
        &self.counts[..]
    }

    /// The serialised form: `[lowest equivalent value in ns, count]` for each
    /// non-empty bucket, ascending.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        let recorded = |(i, &count): (usize, &u64)| (count > 0).then(|| (value_of(i), count));
        let mut out = Vec::with_capacity(self.counts.iter().filter(|&&c| c > 0).count());
        out.extend(self.counts.iter().enumerate().filter_map(recorded));
        out
    }
}

/// Two serialised histograms (`buckets()`) added: same layout, so equal
/// bucket values add their counts. Used per interval, where keeping a full
/// histogram per interval and thread would cost far more memory.
pub fn add_buckets(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if j == b.len() || (i < a.len() && a[i].0 < b[j].0) {
            out.push(a[i]);
            i += 1;
        } else if i == a.len() || b[j].0 < a[i].0 {
            out.push(b[j]);
            j += 1;
        } else {
            out.push((a[i].0, a[i].1 + b[j].1));
            i += 1;
            j += 1;
        }
    }
    out
}

/// One histogram per command the run sends, indexed by the request's
/// command ([`crate::request_source::PreparedPlan::commands`]: for `--mode`,
/// 0 is the write command and 1 the read one, so the index is the op; for a
/// command mix, the mix's order): a reply is recorded in its command's only,
/// and the whole run's histogram is their sum, so per-command rows add up to
/// the totals by construction. `set()`/`get()` are the sums over the
/// commands of each op kind. As OpHistograms in histogram.ts.
#[derive(Clone, Debug, Default)]
pub struct OpHistograms {
    pub by_command: Vec<LatencyHistogram>,
    ops: Vec<Op>,
}

impl OpHistograms {
    /// `ops[i]`: the op kind of command i.
    pub fn new(ops: &[Op]) -> Self {
        OpHistograms { by_command: ops.iter().map(|_| LatencyHistogram::new()).collect(), ops: ops.to_vec() }
    }

    /// The two of `--mode`: the write command, then the read command.
    pub fn of_mode() -> Self {
        Self::new(&[Op::Set, Op::Get])
    }

    #[inline]
    pub fn of(&mut self, command: u16) -> &mut LatencyHistogram {
        &mut self.by_command[command as usize]
    }

    /// The sum of the commands of one op kind.
    pub fn of_op(&self, op: Op) -> LatencyHistogram {
        let mut sum = LatencyHistogram::new();
        for (h, o) in self.by_command.iter().zip(&self.ops) {
            if *o == op {
                sum.merge(h);
            }
        }
        sum
    }

    /// The buckets of one op kind's sum: for `--mode` the command's own, with
    /// no sum built (an interval cut makes no histogram).
    pub fn op_buckets(&self, op: Op) -> Vec<(u64, u64)> {
        match self.mode_histogram(op) {
            Some(h) => h.buckets(),
            None => self.of_op(op).buckets(),
        }
    }

    /// For `--mode`, the op kind's one command's histogram (its sum, with
    /// none built); None for a command mix, whose sum must be made.
    pub fn mode_histogram(&self, op: Op) -> Option<&LatencyHistogram> {
        (self.ops == [Op::Set, Op::Get]).then(|| &self.by_command[if op == Op::Set { 0 } else { 1 }])
    }

    pub fn set(&self) -> LatencyHistogram {
        self.of_op(Op::Set)
    }

    pub fn get(&self) -> LatencyHistogram {
        self.of_op(Op::Get)
    }

    pub fn merge(&mut self, other: &OpHistograms) {
        for (mine, theirs) in self.by_command.iter_mut().zip(&other.by_command) {
            mine.merge(theirs);
        }
    }

    pub fn reset(&mut self) {
        for h in &mut self.by_command {
            h.reset();
        }
    }

    /// An empty set of the same commands.
    pub fn empty_like(&self) -> OpHistograms {
        OpHistograms::new(&self.ops)
    }

    /// Every command's counts in `into` (emptied first, so it may be reused without allocating).
    pub fn sum_into(&self, into: &mut LatencyHistogram) {
        into.reset();
        for h in &self.by_command {
            into.merge(h);
        }
    }

    pub fn total(&self) -> LatencyHistogram {
        let mut sum = LatencyHistogram::new();
        self.sum_into(&mut sum);
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HdrHistogram's countsArrayIndex and valueFromIndex as
    /// packages/cli/src/engine-js/histogram.ts writes them, to pin that the crate
    /// lays buckets out the same way.
    fn ts_lowest_equivalent(value: u64) -> u64 {
        let v = if value < 2048 { 2047 } else { value };
        let bucket = (63 - v.leading_zeros()) as i64 - 10;
        let sub_bucket = value >> bucket;
        let index = ((bucket + 1) << 10) + (sub_bucket as i64 - 1024);
        let mut b = (index >> 10) - 1;
        let mut sub = (index & 1023) + 1024;
        if b < 0 {
            sub -= 1024;
            b = 0;
        }
        (sub as u64) << b
    }

    #[test]
    fn buckets_match_the_typescript_layout() {
        let mut values: Vec<u64> = (0..5000).collect();
        let mut x = 1u64;
        while x < HIGHEST_TRACKABLE_NS {
            for d in [x - 1, x, x + 1, x + x / 3] {
                values.push(d);
            }
            x *= 2;
        }
        values.push(HIGHEST_TRACKABLE_NS - 1);
        for v in values {
            let mut h = LatencyHistogram::new();
            h.record(v);
            assert_eq!(h.buckets(), vec![(ts_lowest_equivalent(v), 1)], "value {v}");
        }
    }

    /// Values on both sides of every power of two, and a fixed spread over
    /// each power of two of magnitude (no randomness), up to the top.
    fn spread_of_values() -> Vec<u64> {
        let mut values: Vec<u64> = (0..5000).collect();
        for p in 1..41u32 {
            let x = 1u64 << p;
            values.extend([x - 1, x, x + 1]);
            values.extend((0..500u64).map(|k| x + (x * ((k * 618_034) % 1_000_000)) / 1_000_000));
        }
        values.push(u64::MAX);
        values
    }

    /// The same values recorded here and into the `hdrhistogram` crate (the
    /// bucket layout both engines share): every bucket, the total and the
    /// quantiles the progress line and tests read are the same.
    #[test]
    fn every_bucket_and_quantile_is_hdrhistograms() {
        let values = spread_of_values();
        let mut reference = hdrhistogram::Histogram::<u64>::new_with_bounds(1, HIGHEST_TRACKABLE_NS, 3).unwrap();
        let mut mine = LatencyHistogram::new();
        for (n, &v) in values.iter().enumerate() {
            // Uneven counts, so a quantile lands inside buckets and not only on their edges.
            for _ in 0..1 + n % 3 {
                reference.saturating_record(v.min(HIGHEST_TRACKABLE_NS - 1));
                mine.record(v);
            }
        }
        let expected: Vec<(u64, u64)> = reference
            .iter_recorded()
            .map(|v| (reference.lowest_equivalent(v.value_iterated_to()), v.count_at_value()))
            .collect();
        assert_eq!(mine.buckets(), expected);
        assert_eq!(mine.total(), reference.len());
        for q in [0.0, 0.000_01, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999, 0.999_99, 1.0, 1.5] {
            assert_eq!(mine.value_at_quantile(q), reference.value_at_quantile(q), "quantile {q}");
        }
        assert_eq!(LatencyHistogram::new().value_at_quantile(0.5), 0);
    }

    #[test]
    fn serialised_histograms_add_as_the_histograms_do() {
        let (mut a, mut b) = (LatencyHistogram::new(), LatencyHistogram::new());
        for v in [10u64, 5000, 70_000] {
            a.record(v);
        }
        for v in [5000u64, 9_000_000] {
            b.record(v);
        }
        let sum = add_buckets(&a.buckets(), &b.buckets());
        a.merge(&b);
        assert_eq!(sum, a.buckets());
    }

    #[test]
    fn op_histograms_add_up_to_the_total() {
        let mut h = OpHistograms::new(&[Op::Set, Op::Get, Op::Set]);
        for v in [1000u64, 2000, 3000] {
            h.of(0).record(v);
        }
        h.of(1).record(5000);
        h.of(2).record(7000);
        let total = h.total();
        assert_eq!(total.total(), 5);
        assert_eq!(h.set().total(), 4);
        assert_eq!(h.set().total() + h.get().total(), total.total());
    }

    #[test]
    fn merging_adds_counts_and_out_of_range_values_count_at_the_top() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        a.record(1500);
        b.record(1500);
        b.record(u64::MAX);
        a.merge(&b);
        assert_eq!(a.total(), 3);
        let buckets = a.buckets();
        assert_eq!(buckets[0], (1500, 2));
        assert_eq!(buckets[1].0, ts_lowest_equivalent(HIGHEST_TRACKABLE_NS - 1));
    }
}
