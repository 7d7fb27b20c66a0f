/**
 * The native engine: loads @respbench/native (the napi-rs addon over
 * crates/respbench-core) and adapts it to the Engine interface. Loading may
 * fail (no prebuilt binary for this platform, not built): loadNativeEngine
 * then says why in one line, and the CLI falls back to the JS engine under
 * --engine auto.
 *
 * The addon runs the whole run on its own threads; this side only starts it,
 * polls its progress counters, cancels it on abort and reshapes the result.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { missingBinaryReason, napiTriple, type NativeInstall } from './fallback-notice.js';
import type { NativeHistogram, NativeInterval, NativePlan, NativeProgress, NativeResult, RunHandle } from '@respbench/native';
import type { HistogramData } from './engine-js/histogram.js';
import { PackedHistogram } from './engine-js/packed-histogram.js';
import type { Engine, Failure, FailureKind, IoBackend, Plan, RawInterval, RawResult } from './engine-js/plan.js';
import { addIntervals } from './series.js';
import { DEFAULT_INTERVAL_MS, type ProgressSnapshot, type RunOptions } from './engine-js/progress.js';
import { outOfFilesText } from './open-files.js';

export interface NativeLoad {
  engine: Engine | null;
  /** Why the addon could not be loaded, when engine is null. */
  reason: string | null;
}

/** What this side uses of @respbench/native, typed by its generated index.d.ts (committed, so this builds without cargo). */
type NativeAddon = Pick<typeof import('@respbench/native'), 'startRun' | 'ioBackend'>;

/**
 * A Plan goes to the addon as it is. This is where the compiler checks that
 * it fits the binding's plan type: a field renamed or retyped on one side
 * only fails the build here, not a run.
 */
function toNativePlan(plan: Plan): NativePlan {
  return plan;
}

/** How often progress is handed to onProgress (the JS engine's pace). */
const PROGRESS_INTERVAL_MS = 250;

let cached: NativeLoad | null = null;

export function loadNativeEngine(): NativeLoad {
  if (cached) return cached;
  let addon: NativeAddon;
  try {
    addon = createRequire(import.meta.url)('@respbench/native') as NativeAddon;
  } catch (err) {
    return (cached = { engine: null, reason: loadFailureText(err) });
  }
  if (typeof addon?.startRun !== 'function' || typeof addon.ioBackend !== 'function') {
    return (cached = { engine: null, reason: '@respbench/native loaded but has no startRun or ioBackend (a stale build? rebuild with pnpm --filter @respbench/native build)' });
  }
  return (cached = { engine: nativeEngine(addon), reason: null });
}

/** One line for a user: which piece is missing, not the loader's stack. */
function loadFailureText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const outOfFiles = outOfFilesText(err);
  if (outOfFiles) return outOfFiles;
  const first = String(e?.message ?? err).split('\n')[0];
  if (e?.code === 'MODULE_NOT_FOUND' && /'@respbench\/native'/.test(first)) return '@respbench/native is not installed';
  if (/Cannot find native binding/.test(first)) return missingBinaryReason(nativeInstall());
  return first;
}

/** What this install of @respbench/native is (fallback-notice.ts says what to do about a missing binary). */
function nativeInstall(): NativeInstall {
  const triple = napiTriple();
  try {
    const manifest = createRequire(import.meta.url).resolve('@respbench/native/package.json');
    const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { optionalDependencies?: Record<string, string> };
    return { triple, sourceCheckout: existsSync(path.join(path.dirname(manifest), 'Cargo.toml')), prebuilt: Object.keys(pkg.optionalDependencies ?? {}) };
  } catch {
    return { triple, sourceCheckout: false, prebuilt: [] };
  }
}

function nativeEngine(addon: NativeAddon): Engine {
  return {
    name: 'native',
    ioBackend(plan: Plan): IoBackend {
      const chosen = addon.ioBackend(plan.io ?? 'auto', plan.tls !== null && plan.tls !== undefined);
      return { backend: (chosen.backend ?? null) as IoBackend['backend'], note: chosen.note ?? null, error: chosen.error ?? null };
    },
    async run(plan: Plan, options: RunOptions = {}): Promise<RawResult> {
      const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
      const handle = addon.startRun(toNativePlan(plan), intervalMs);
      const { signal, onProgress, onInterval } = options;
      const onAbort = () => handle.cancel();
      if (signal) {
        if (signal.aborted) handle.cancel();
        else signal.addEventListener('abort', onAbort, { once: true });
      }
      const live = onInterval ? new LiveIntervals(handle, intervalMs, onInterval) : null;
      const timer =
        onProgress || live
          ? setInterval(() => {
              const p = toProgress(handle.progress());
              onProgress?.(p);
              live?.poll(p);
            }, PROGRESS_INTERVAL_MS)
          : null;
      try {
        const result = toRawResult(await handle.wait(), plan);
        live?.end(result.intervals ?? []);
        return result;
      } finally {
        if (timer) clearInterval(timer);
        signal?.removeEventListener('abort', onAbort);
      }
    },
  };
}

/** How long after an interval's end its records from every worker thread are taken to be in. */
const INTERVAL_GRACE_MS = 100;

/**
 * Hands RunOptions.onInterval each interval while a native run goes on: the
 * workers publish one record per thread and interval; an interval is added
 * up and handed on once the phase is past its end (and a grace for the
 * threads' own cuts), the rest from the result at the end.
 */
class LiveIntervals {
  private seen = 0;
  private next = 0;
  private readonly pending = new Map<number, RawInterval>();

  constructor(
    private readonly handle: RunHandle,
    private readonly everyMs: number,
    private readonly onInterval: (i: RawInterval) => void,
  ) {}

  poll(p: ProgressSnapshot): void {
    const fresh = this.handle.intervalsSince(this.seen);
    this.seen += fresh.length;
    for (const r of fresh.map(toRawInterval)) {
      const had = this.pending.get(r.index);
      this.pending.set(r.index, had ? addIntervals(had, r) : r);
    }
    if (p.phase !== 'run') return;
    const elapsedMs = p.elapsedNs / 1e6;
    while (this.pending.has(this.next) && elapsedMs >= (this.next + 1) * this.everyMs + INTERVAL_GRACE_MS) {
      this.onInterval(this.pending.get(this.next)!);
      this.pending.delete(this.next++);
    }
  }

  /** The intervals not handed on yet, from the result's added-up series. */
  end(all: RawInterval[]): void {
    for (const i of all) if (i.index >= this.next) this.onInterval(i);
  }
}

function toRawInterval(i: NativeInterval): RawInterval {
  return {
    index: i.index,
    startNs: i.startNs,
    endNs: i.endNs,
    requests: i.requests,
    sets: i.sets,
    gets: i.gets,
    errors: i.errors,
    misses: i.misses,
    mismatches: i.mismatches,
    lostWrites: i.lostWrites,
    // Packed as cut (crates/respbench-core/src/packed.rs), kept so.
    setHistogram: new PackedHistogram(i.setHistogram),
    getHistogram: new PackedHistogram(i.getHistogram),
    ...(i.commandHistograms ? { commandHistograms: i.commandHistograms.map((h) => new PackedHistogram(h)) } : {}),
    connections: i.connections,
    bytesOut: i.bytesOut,
    bytesIn: i.bytesIn,
    lost: i.lost,
  };
}

function toProgress(p: NativeProgress): ProgressSnapshot {
  const phase = p.phase === 'preload' || p.phase === 'warmup' ? p.phase : 'run';
  return { done: p.done, total: p.total, errors: p.errors, elapsedNs: p.elapsedNs, phase, durationNs: p.durationNs, p99Ns: p.p99Ns };
}

function histogramData(h: NativeHistogram): HistogramData {
  return { unit: 'ns', significantDigits: 3, buckets: h.buckets.map(([value, count]) => [value, count] as [number, number]) };
}

/** The addon leaves absent values undefined; RawResult spells them null, field for field. */
function toRawResult(r: NativeResult, plan: Plan): RawResult {
  const failure: Failure | null = r.failure ? { kind: r.failure.kind as FailureKind, message: r.failure.message } : null;
  return {
    engine: 'native',
    requests: r.requests,
    sets: r.sets,
    gets: r.gets,
    ok: r.ok,
    errors: r.errors,
    misses: r.misses,
    mismatches: r.mismatches,
    lostWrites: r.lostWrites,
    ...(plan.cluster?.readFrom && plan.cluster.readFrom !== 'primary' ? { staleReads: r.staleReads } : {}),
    pushes: r.pushes,
    bytesOut: r.bytesOut,
    bytesIn: r.bytesIn,
    elapsedNs: r.elapsedNs,
    histogram: histogramData(r.histogram),
    setHistogram: histogramData(r.setHistogram),
    getHistogram: histogramData(r.getHistogram),
    ...(r.commandHistograms ? { commandHistograms: r.commandHistograms.map(histogramData) } : {}),
    preloadRequests: r.preloadRequests,
    preloadElapsedNs: r.preloadElapsedNs,
    warmupRequests: r.warmupRequests,
    warmupElapsedNs: r.warmupElapsedNs,
    serviceHistogram: r.serviceHistogram ? histogramData(r.serviceHistogram) : null,
    scheduleLagHistogram: r.scheduleLagHistogram ? histogramData(r.scheduleLagHistogram) : null,
    // Worker threads on epoll: no JS event loop of its own to be late.
    eventLoopDelay: null,
    firstError: r.firstError ?? null,
    firstMismatch: r.firstMismatch ?? null,
    failure,
    // Only an interrupted run has requests left unanswered worth telling.
    ...(failure?.kind === 'interrupted' ? { unanswered: r.unanswered } : {}),
    // Only a run with --reconnect counts drops.
    ...(plan.reconnect ? { lost: r.lost, reconnects: r.reconnects, downNs: r.downNs } : {}),
    intervals: r.intervals.map(toRawInterval),
    startedUnixMs: r.startedUnixMs,
    // Only a --cluster run has per-primary figures (as the JS engine).
    ...(plan.cluster
      ? {
          nodes: (r.nodes ?? []).map((n) => ({ node: n.node, requests: n.requests, errors: n.errors, redirections: n.redirections, histogram: histogramData(n.histogram) })),
          redirections: { moved: r.moved, ask: r.asked, tryagain: r.retried },
          ...(r.topologyRejected ? { topologyRejected: r.topologyRejected } : {}),
        }
      : {}),
  };
}
