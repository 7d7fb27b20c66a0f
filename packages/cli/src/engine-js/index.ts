/**
 * respbench's pure TypeScript engine over node:net: the same traffic as the
 * native engine (docs/workload.md), file for file with
 * crates/respbench-core/src/ (lib.rs is this file's pair).
 *
 * Reading order, as data flows: plan.ts (the contract with the CLI: a Plan
 * in, a RawResult out) and limits.ts (what a Plan may ask for); keys.ts (PRNG
 * streams, key patterns, key bytes) and values.ts (the value derived from a
 * key); command.ts (request bytes); request-source.ts (what each connection
 * sends next, from a PreparedPlan); reply.ts (RESP scanning); transport.ts
 * (the byte stream: TCP, unix socket or TLS); connection.ts (opening a
 * connection, and one socket's window); counters.ts and
 * histogram.ts (what is counted); run.ts (phases); progress.ts (what a
 * caller may watch or cancel).
 */
import type { Engine } from './plan.js';
import { run } from './run.js';

export type { Counters } from './counters.js';
export { LatencyHistogram, type HistogramData } from './histogram.js';
export type { Engine, EngineName, Failure, FailureKind, Mode, Plan, RawResult, TlsPlan } from './plan.js';
export type { Phase, ProgressSnapshot, RunOptions } from './progress.js';

export const jsEngine: Engine = { name: 'js', run };
