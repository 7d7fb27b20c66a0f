//! Latency histogram with HdrHistogram's bucket layout: lowest discernible
//! value 1 ns, highest 2^40 ns, 3 significant digits. The TypeScript engine
//! (`packages/cli/src/engine-js/histogram.ts`) indexes values the same way, so
//! histograms from either engine, or from several threads or machines, merge
//! by adding counts. Recording touches a fixed array: no allocation.

use hdrhistogram::Histogram;

use crate::command_kind::Op;

/// Values at or above this are counted at the top (2^40 - 1 ns, as the TS engine does).
pub const HIGHEST_TRACKABLE_NS: u64 = 1 << 40;

/// One per worker thread while a phase runs; merged when the threads join.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        let inner = Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_NS, 3).expect("constant bounds are valid");
        LatencyHistogram { inner }
    }

    /// Records one latency in ns.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.inner.saturating_record(ns.min(HIGHEST_TRACKABLE_NS - 1));
    }

    /// Adds another thread's counts.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.inner.add(&other.inner).expect("same layout");
    }

    /// The value at quantile `q` (0..1), in ns; 0 when empty.
    pub fn value_at_quantile(&self, q: f64) -> u64 {
        self.inner.value_at_quantile(q)
    }

    pub fn total(&self) -> u64 {
        self.inner.len()
    }

    /// Empties it, keeping its counts array (no allocation).
    pub fn reset(&mut self) {
        self.inner.reset();
    }

    /// The serialised form: `[lowest equivalent value in ns, count]` for each
    /// non-empty bucket, ascending.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.inner.iter_recorded().count());
        out.extend(
            self.inner
                .iter_recorded()
                .map(|v| (self.inner.lowest_equivalent(v.value_iterated_to()), v.count_at_value())),
        );
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
        if self.ops == [Op::Set, Op::Get] {
            return self.by_command[if op == Op::Set { 0 } else { 1 }].buckets();
        }
        self.of_op(op).buckets()
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
