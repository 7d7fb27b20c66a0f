//! What a phase counts. [`Counters`] is the one shape of those counts: each
//! worker thread owns a set and never shares it while the phase runs, so
//! counting is plain integer adds; the sets are merged when the threads
//! join, and [`crate::result::RawResult`] carries the merged set as it is.

use std::time::Instant;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Timed requests that got a reply (run phase only).
    pub requests: u64,
    pub sets: u64,
    pub gets: u64,
    /// Replies that were neither errors nor failed verification (`--verify-get`).
    pub ok: u64,
    pub errors: u64,
    /// Reads answered with nil (lost writes apart).
    pub misses: u64,
    /// Reads whose value differed from the one derived from the key.
    pub mismatches: u64,
    /// `--verify-get`, mixed mode: reads answered with nil for a key this
    /// run wrote, and the server acknowledged, before the read was sent.
    pub lost_writes: u64,
    /// `--read-from replica|any`, `--verify-get`: reads a replica answered
    /// with nil where the primary would have been a lost write or a failed
    /// get-mode read: replication lag, counted apart (as the TS `staleReads`).
    pub stale_reads: u64,
    /// RESP3 push frames (`>`): out-of-band data, skipped, never a reply.
    pub pushes: u64,
    /// `--reconnect`: requests written on a connection that dropped before
    /// their replies came (apart from errors; in no other figure).
    pub lost: u64,
    /// `--reconnect`: connections opened again after a drop.
    pub reconnects: u64,
    /// `--reconnect`: time connections spent down (drop to ready again),
    /// summed over connections.
    pub down_ns: u64,
    /// `--cluster`: replies -MOVED (sent again to the owner named), -ASK
    /// (ASKING, then sent again there), -TRYAGAIN / -CLUSTERDOWN (sent again
    /// after a backoff).
    pub moved: u64,
    pub asked: u64,
    pub retried: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
}

impl Counters {
    /// What was counted since `before` (an earlier copy of the same counters).
    pub fn since(&self, before: &Counters) -> Counters {
        Counters {
            requests: self.requests - before.requests,
            sets: self.sets - before.sets,
            gets: self.gets - before.gets,
            ok: self.ok - before.ok,
            errors: self.errors - before.errors,
            misses: self.misses - before.misses,
            mismatches: self.mismatches - before.mismatches,
            lost_writes: self.lost_writes - before.lost_writes,
            stale_reads: self.stale_reads - before.stale_reads,
            pushes: self.pushes - before.pushes,
            lost: self.lost - before.lost,
            reconnects: self.reconnects - before.reconnects,
            down_ns: self.down_ns - before.down_ns,
            moved: self.moved - before.moved,
            asked: self.asked - before.asked,
            retried: self.retried - before.retried,
            bytes_out: self.bytes_out - before.bytes_out,
            bytes_in: self.bytes_in - before.bytes_in,
        }
    }

    pub fn merge(&mut self, other: &Counters) {
        self.requests += other.requests;
        self.sets += other.sets;
        self.gets += other.gets;
        self.ok += other.ok;
        self.errors += other.errors;
        self.misses += other.misses;
        self.mismatches += other.mismatches;
        self.lost_writes += other.lost_writes;
        self.stale_reads += other.stale_reads;
        self.pushes += other.pushes;
        self.lost += other.lost;
        self.reconnects += other.reconnects;
        self.down_ns += other.down_ns;
        self.moved += other.moved;
        self.asked += other.asked;
        self.retried += other.retried;
        self.bytes_out += other.bytes_out;
        self.bytes_in += other.bytes_in;
    }
}

/// The first error reply and the first mismatching value one thread saw,
/// with when: merging keeps the earliest across threads.
#[derive(Clone, Debug, Default)]
pub(crate) struct FirstTexts {
    pub error: Option<(Instant, String)>,
    pub mismatch: Option<(Instant, String)>,
    /// `--cluster`: the first topology refresh reply refused as no whole slot map (the map in use was kept).
    pub topology_rejected: Option<(Instant, String)>,
}

impl FirstTexts {
    pub fn merge(&mut self, other: FirstTexts) {
        self.error = earliest(self.error.take(), other.error);
        self.mismatch = earliest(self.mismatch.take(), other.mismatch);
        self.topology_rejected = earliest(self.topology_rejected.take(), other.topology_rejected);
    }

    pub fn error_text(&self) -> Option<String> {
        self.error.as_ref().map(|(_, t)| t.clone())
    }

    pub fn mismatch_text(&self) -> Option<String> {
        self.mismatch.as_ref().map(|(_, t)| t.clone())
    }
}

fn earliest(a: Option<(Instant, String)>, b: Option<(Instant, String)>) -> Option<(Instant, String)> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}
