/**
 * Per-phase reply counters: the one shape both the engine's running count
 * and the RawResult it returns use (RawResult extends Counters). Paired with
 * crates/respbench-core/src/counters.rs.
 */

export interface Counters {
  /** Timed requests that got a reply (the measured phase only). */
  requests: number;
  sets: number;
  gets: number;
  /** Replies that were neither errors nor failed verification (--verify-get). */
  ok: number;
  errors: number;
  /** Reads answered with nil (lost writes apart). */
  misses: number;
  /** Reads whose value differed from the one derived from the key. */
  mismatches: number;
  /**
   * --verify-get, mixed mode: reads answered with nil for a key this run
   * wrote, and the server acknowledged, before the read was sent.
   */
  lostWrites: number;
  /**
   * --read-from replica|any, --verify-get: reads a replica answered with nil
   * where the primary would have been a lost write or a failed get-mode read:
   * replication lag, not corruption (counted apart, in neither of those).
   */
  staleReads: number;
  /** RESP3 push frames (`>`): out-of-band data, skipped, never a reply. */
  pushes: number;
  /**
   * --reconnect: requests written on a connection that dropped before their
   * replies came (apart from errors; in no other figure).
   */
  lost: number;
  /** --reconnect: connections opened again after a drop. */
  reconnects: number;
  /** --reconnect: time connections spent down (drop to ready again), summed over connections, ns. */
  downNs: number;
  /** --cluster: replies -MOVED (sent again to the owner named), -ASK (ASKING, then sent again there), -TRYAGAIN / -CLUSTERDOWN (sent again after a backoff). */
  moved: number;
  asked: number;
  retried: number;
  bytesOut: number;
  bytesIn: number;
  /** Text of the first error reply, if any. */
  firstError: string | null;
  /** Text of the first mismatching value, escaped, if any. */
  firstMismatch: string | null;
}

export function newCounters(): Counters {
  return { requests: 0, sets: 0, gets: 0, ok: 0, errors: 0, misses: 0, mismatches: 0, lostWrites: 0, staleReads: 0, pushes: 0, lost: 0, reconnects: 0, downNs: 0, moved: 0, asked: 0, retried: 0, bytesOut: 0, bytesIn: 0, firstError: null, firstMismatch: null };
}
