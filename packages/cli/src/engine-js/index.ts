/**
 * respbench's pure TypeScript engine over node:net: the same traffic as the
 * native engine (docs/workload.md), file for file with
 * crates/respbench-core/src/ (lib.rs is this file's pair).
 *
 * Reading order, as data flows: plan.ts (the contract with the CLI: a Plan
 * in, a RawResult out) and limits.ts (what a Plan may ask for); keys.ts (PRNG
 * streams, key patterns, key bytes) and values.ts (the value derived from a
 * key); command.ts (request bytes); request-source.ts (what each client
 * sends next, from a PreparedPlan); then the rooms of a run (docs/design.md):
 * run.ts (phases, the RawResult), worker.ts (one phase's loop: opens,
 * starts and watches the clients, owns no policy), pacer.ts (when the next
 * request is due: closed loop, --rate, ramp), client.ts (one per -c: its
 * key stream and window), router.ts (--cluster: which Link a request goes
 * to, redirections) with topology-refresh.ts (the slot map asked again
 * when a MOVED says it is stale), link.ts (one socket: in-flight ring, batched writes,
 * the one reply loop) with in-flight.ts (that ring), tally.ts (a reply
 * against its request: counters, verification, histograms), recovery.ts
 * (--reconnect); below them connection.ts (opening a ready socket),
 * transport.ts (TCP, unix socket or TLS), handshake.ts, reply.ts (RESP
 * scanning), slot.ts (CRC16 hash slots); counters.ts and histogram.ts (what
 * is counted); progress.ts (what a caller may watch or cancel).
 */
import type { Engine } from './plan.js';
import { run } from './run.js';

export type { Counters } from './counters.js';
export { LatencyHistogram, type HistogramData } from './histogram.js';
export type { Engine, EngineName, Failure, FailureKind, Mode, Plan, RawResult, TlsPlan } from './plan.js';
export type { Phase, ProgressSnapshot, RunOptions } from './progress.js';

export const jsEngine: Engine = { name: 'js', run };
