/**
 * respbench's pure TypeScript engine over node:net: the same traffic as the
 * native engine (docs/workload.md), file for file with
 * crates/respbench-core/src/ (lib.rs is this file's pair).
 *
 * Reading order: keys.ts (PRNG streams, key patterns, key bytes) and
 * values.ts (the value derived from each key), command.ts (request bytes),
 * request-source.ts (what each connection sends next), reply.ts (RESP
 * scanning), connection.ts (opening a connection, one socket's window),
 * counters.ts (what replies add up to), run.ts (phases). plan.ts is the
 * contract with the CLI (Plan in, RawResult out); progress.ts is what a
 * caller may watch or cancel; histogram.ts holds the latencies.
 */
import type { Engine } from './plan.js';
import { run } from './run.js';

export type { Counters } from './counters.js';
export { LatencyHistogram, type HistogramData } from './histogram.js';
export type { Engine, EngineName, Failure, FailureKind, Mode, Plan, RawResult } from './plan.js';
export type { Phase, ProgressSnapshot, RunOptions } from './progress.js';

export const jsEngine: Engine = { name: 'js', run };
