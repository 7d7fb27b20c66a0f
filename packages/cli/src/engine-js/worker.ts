/**
 * One phase on this process's event loop: opens the phase's sockets, gives
 * them to their Clients, starts them (a ramp's later ones when due), and
 * watches them for stalls (--timeout) and progress until each has its share
 * answered or time is up. It owns no policy: what to send, when, where and
 * how a reply counts are the rooms' (Client, Pacer, Router, Link, Tally,
 * Recovery). Paired with crates/respbench-core/src/worker.rs.
 */
import type net from 'node:net';
import { performance, type IntervalHistogram } from 'node:perf_hooks';
import { ThreadAlarm } from './alarm.js';
import { AnswerWatch, noAnswerText } from './answer-watch.js';
import { Client, type Feed } from './client.js';
import { ConnectInterrupted, openConnection } from './connection.js';
import type { Counters } from './counters.js';
import { LatencyHistogram, type OpHistograms } from './histogram.js';
import { Pacer, paceFor, phaseDurationMs, rampSteps, Schedule } from './pacer.js';
import { localConnections, nodeLabel, rampOpenAtMs, readTarget, type Failure, type Plan, type RawInterval, type RawNode } from './plan.js';
import { DEFAULT_INTERVAL_MS, type Phase, type RunOptions } from './progress.js';
import { SEND_ALL, SEND_READS, SEND_WRITES, type PreparedPlan, type Side } from './request-source.js';
import { IntervalClock, Tally, type NodeRows } from './tally.js';
import { TopologyRefresh } from './topology-refresh.js';

/** What the measured phase watches of the client's own lateness. */
export interface PhaseLag {
  /** --rate: actual − intended send of each request. */
  schedule: LatencyHistogram | null;
  /** Enabled while the phase's clients run. */
  loop: IntervalHistogram;
}

export interface PhaseOutcome {
  elapsedNs: number;
  failure: Failure | null;
  /** The measured phase: its time series, and the wall clock at its start. */
  intervals?: RawInterval[];
  startedUnixMs?: number;
  /** Requests written whose replies had not come when an interrupt stopped the phase. */
  unanswered?: number;
  /** --cluster, the measured phase: per primary. */
  nodes?: RawNode[];
  /** --cluster: the first topology refresh reply refused as no whole slot map. */
  topologyRejected?: string;
}

/**
 * The servers a phase's clients go to: the plan's one server, or under
 * --cluster each primary (the plan with its host and port), in
 * ClusterPlan.nodes order.
 */
export function targetPlans(plan: Plan): Plan[] {
  if (!plan.cluster) return [plan];
  return plan.cluster.nodes.map((n) => ({ ...plan, host: n.host, port: n.port, socket: null }));
}

/** One socket of a phase: whose client, which primary's share (-1: one server), which side of it, and where it goes. */
export interface PhaseSocket {
  id: number;
  node: number;
  side: Side;
  target: Plan;
}

/**
 * The sockets of a phase, in the order they are opened: per client (this
 * machine's), per primary under --cluster; with --read-from replica|any, a
 * client whose reads of a primary go to a replica has two for it: the
 * writes to the primary, then the reads to the replica (READONLY). The
 * preload only writes, and a set run without a mix has no reads: one socket per
 * primary (a mix's reads are its GET-like commands).
 * Paired with phase_sockets in crates/respbench-core/src/worker.rs.
 */
export function phaseSockets(plan: Plan, phase: Phase): PhaseSocket[] {
  const local = localConnections(plan);
  const targets = targetPlans(plan);
  const out: PhaseSocket[] = [];
  for (let id = local.first; id < local.first + local.count; id++) {
    if (!plan.cluster) {
      out.push({ id, node: -1, side: SEND_ALL, target: targets[0] });
      continue;
    }
    for (let node = 0; node < targets.length; node++) {
      const replica = phase === 'preload' || (plan.mode === 'set' && !plan.commands?.length) ? -1 : readTarget(plan.cluster, id, node);
      if (replica < 0) {
        out.push({ id, node, side: SEND_ALL, target: targets[node] });
        continue;
      }
      const r = plan.cluster.replicas![node][replica];
      out.push({ id, node, side: SEND_WRITES, target: targets[node] });
      out.push({ id, node, side: SEND_READS, target: { ...targets[node], host: r.host, port: r.port, readOnly: true } });
    }
  }
  return out;
}

/** The connection ramp of a phase: the measured phase's only (the CLI refuses one with --cluster). */
function rampOf(plan: Plan, phase: Phase): Plan['rampConnections'] {
  return phase === 'run' && !plan.cluster ? plan.rampConnections : null;
}

/**
 * Opens a phase's sockets (phaseSockets), one after another: those that start
 * with it (under --ramp-connections the measured phase's first `start`; the
 * rest open while it runs: the ramp is refused with --cluster, so each of those
 * is one single-server socket).
 */
async function openAll(plan: Plan, phase: Phase, layout: PhaseSocket[], signal: AbortSignal | undefined): Promise<net.Socket[] | Failure> {
  const sockets: net.Socket[] = [];
  const ramp = rampOf(plan, phase);
  try {
    for (const s of layout) {
      if (rampOpenAtMs(ramp, s.id) > 0) break;
      sockets.push(await openConnection(s.target, signal));
    }
    return sockets;
  } catch (err) {
    for (const s of sockets) s.destroy();
    if (err instanceof ConnectInterrupted) return { kind: 'interrupted', message: err.message };
    return { kind: 'connect', message: (err as Error).message };
  }
}

/** What a phase shares between its clients. */
export interface PhaseShared {
  counters: Counters;
  /** The measured phase only. */
  histogram: OpHistograms | null;
  serviceHistogram: LatencyHistogram | null;
  lag: PhaseLag | null;
}

/** Runs one phase over fresh connections. */
export async function runPhase(prepared: PreparedPlan, phase: Phase, shared: PhaseShared, options: RunOptions): Promise<PhaseOutcome> {
  const { counters, histogram, serviceHistogram, lag } = shared;
  const plan = prepared.plan;
  const durationMs = phaseDurationMs(plan, phase);
  const layout = phaseSockets(plan, phase);
  const sockets = await openAll(plan, phase, layout, options.signal);
  if (!Array.isArray(sockets)) return { elapsedNs: 0, failure: sockets };
  const rated = paceFor(plan, phase, 0, 0).intervalMs > 0;
  // --rate: the Pacer's alarm thread starts before the phase's clock does.
  let alarm: ThreadAlarm | null = null;
  if (rated) {
    try {
      alarm = await ThreadAlarm.open();
    } catch (err) {
      for (const s of sockets) s.destroy();
      return { elapsedNs: 0, failure: { kind: 'internal', message: (err as Error).message } };
    }
  }
  return new Promise<PhaseOutcome>((resolve) => {
    const clients: Client[] = [];
    const local = localConnections(plan);
    // This machine's clients (all of them unless --client-count), ids as in a single run.
    let open = local.count;
    let failure: Failure | null = null;
    // Allocated before the clock starts.
    const phaseHistograms = histogram ? histogram.emptyLike() : null;
    const nodeRows: NodeRows | null = histogram && plan.cluster
      ? { labels: plan.cluster.nodes.map(nodeLabel), tallies: plan.cluster.nodes.map(() => ({ requests: 0, errors: 0, redirections: 0, histogram: new LatencyHistogram() })) }
      : null;
    const refresh = plan.cluster ? new TopologyRefresh(plan) : null;
    if (histogram) IntervalClock.warm(histogram.ops, prepared.isMix);
    const start = performance.now();
    const startedUnixMs = Date.now();
    const clock = histogram && phaseHistograms ? new IntervalClock(phaseHistograms, options.intervalMs ?? DEFAULT_INTERVAL_MS, start, counters, histogram, options.onInterval, () => (plan.cluster ? local.count : clients.length), prepared.isMix) : null;
    let timer: NodeJS.Timeout | null = null;
    // --ramp-connections: the timers that open the later steps' clients.
    const rampTimers: NodeJS.Timeout[] = [];
    // Their clients, until their timer takes them (a stop finishes them unopened).
    const waiting = new Set<number>();
    let stopped = false;
    // Requests written whose replies had not come when the phase was stopped.
    let unanswered = 0;
    const onAbort = () => {
      unanswered = clients.reduce((n, c) => n + c.inflightCount, 0);
      stopAll({ kind: 'interrupted', message: 'interrupted' });
    };
    const finish = (_id: number, f: Failure | null) => {
      if (f && !failure) {
        failure = f;
        stopAll(f);
      }
      open--;
      if (open === 0) {
        for (const t of rampTimers) clearTimeout(t);
        // The phase ended when the last share was answered, not when the
        // servers had closed their sides after it (Client.complete).
        let end = performance.now();
        if (!failure) end = clients.reduce((latest, c) => Math.max(latest, c.answeredAt), start);
        const elapsedNs = (end - start) * 1e6;
        lag?.loop.disable();
        pacer?.close();
        if (timer) clearInterval(timer);
        clock?.finish(performance.now());
        options.signal?.removeEventListener('abort', onAbort);
        refresh?.close();
        const nodeFigures = nodeRows
          ? nodeRows.tallies.map((t, i) => ({ node: nodeRows.labels[i], requests: t.requests, errors: t.errors, redirections: t.redirections, histogram: t.histogram.toData() }))
          : undefined;
        const rejected = refresh?.rejected ?? null;
        resolve({ elapsedNs, failure, unanswered, ...(clock ? { intervals: clock.intervals, startedUnixMs } : {}), ...(nodeFigures ? { nodes: nodeFigures } : {}), ...(rejected !== null ? { topologyRejected: rejected } : {}) });
      }
    };
    const stopAll = (f: Failure) => {
      stopped = true;
      for (const t of rampTimers) clearTimeout(t);
      const unopened = [...waiting];
      waiting.clear();
      for (const id of unopened) finish(id, null);
      for (const c of clients) c.stop(f);
    };
    const pacer = alarm ? new Pacer(local.count, alarm) : null;
    // Client `id`'s sockets (its entries of the layout, in order) with their sources.
    const clientFor = (id: number, entries: PhaseSocket[], socketsOf: net.Socket[]) => {
      const feeds: Feed[] = entries.map(({ node, side, target }, k) => ({
        socket: socketsOf[k],
        source: phase === 'preload' ? prepared.preloadSource(id, node) : prepared.runSource(id, durationMs > 0, node, side),
        target,
        node,
        replica: side === SEND_READS,
      }));
      const pace = paceFor(plan, phase, id, start);
      return new Client({
        id,
        pacerIndex: id - local.first,
        feeds,
        prepared,
        counters,
        tally: new Tally(prepared, counters, histogram, pace.intervalMs > 0 ? serviceHistogram : null),
        schedule: pace.intervalMs > 0 ? new Schedule(pace, lag?.schedule ?? null) : null,
        pacer,
        deadline: pace.deadline,
        nodes: nodeRows,
        refresh,
        finish,
        signal: options.signal,
      });
    };
    for (let n = 0; n < sockets.length; ) {
      const id = layout[n].id;
      let last = n;
      while (last < sockets.length && layout[last].id === id) last++;
      clients.push(clientFor(id, layout.slice(n, last), sockets.slice(n, last)));
      n = last;
    }
    // --ramp-connections (never with --cluster: one socket per client): each
    // later step opens its clients (through openConnection, as the first
    // ones) when due and starts them; a step due at or after the phase's
    // end, or after a stop, opens none.
    const ramp = rampOf(plan, phase);
    const deadline = start + durationMs;
    const firstUnopened = sockets.length < layout.length ? layout[sockets.length].id - local.first : local.count;
    for (const { atMs, ids } of rampSteps(ramp, firstUnopened, local.first, local.count)) {
      if (atMs >= durationMs) {
        // Never opened: the phase does not wait for them.
        open -= ids.length;
        continue;
      }
      for (const id of ids) waiting.add(id);
      rampTimers.push(
        setTimeout(async () => {
          for (const id of ids) waiting.delete(id);
          for (const id of ids) {
            if (stopped || performance.now() >= deadline) {
              finish(id, null);
              continue;
            }
            let socket: net.Socket;
            try {
              socket = await openConnection(plan, options.signal);
            } catch (err) {
              const f: Failure = err instanceof ConnectInterrupted ? { kind: 'interrupted', message: err.message } : { kind: 'connect', message: (err as Error).message };
              finish(id, f);
              continue;
            }
            if (stopped || performance.now() >= deadline) {
              socket.destroy();
              finish(id, null);
              continue;
            }
            const c = clientFor(id, [{ id, node: -1, side: SEND_ALL, target: plan }], [socket]);
            clients.push(c);
            c.start();
          }
        }, Math.max(0, start + atMs - performance.now())),
      );
    }
    const timeoutMs = plan.timeoutMs;
    const answerWatch = plan.cluster && timeoutMs > 0 ? new AnswerWatch() : null;
    timer = setInterval(() => {
      const now = performance.now();
      if (timeoutMs > 0) {
        let answers = 0;
        let givenUp = 0;
        let stalest: Client | null = null;
        let stalestAt = Infinity;
        for (const c of clients) {
          const oldest = c.oldestSentAt();
          if (oldest >= 0 && now - oldest > timeoutMs) {
            const link = c.stalest();
            c.stop({ kind: 'timeout', message: `${link.label()}: no reply within ${timeoutMs} ms (--timeout) after ${c.received} replies${link.partialNote()}` });
          }
          answers += c.received - c.givenUp;
          givenUp += c.givenUp;
          if (oldest >= 0 && oldest < stalestAt) {
            stalestAt = oldest;
            stalest = c;
          }
        }
        if (answerWatch !== null && !stopped && answerWatch.look(answers, stalest !== null ? stalestAt : -1, now) > timeoutMs) {
          stalest!.stop({ kind: 'timeout', message: noAnswerText(stalest!.label(), timeoutMs, answers, givenUp, counters) });
        }
      }
      if (options.onProgress) {
        let done = 0;
        for (const c of clients) done += c.received;
        const total = durationMs > 0 ? 0 : phase === 'run' ? plan.requests : prepared.preloadTotal;
        const p99Ns = clock && done > 0 ? clock.p99() : undefined;
        options.onProgress({ done, total, errors: counters.errors, elapsedNs: (now - start) * 1e6, phase, durationNs: durationMs * 1e6, p99Ns });
      }
    }, timeoutMs > 0 ? Math.min(250, Math.max(10, timeoutMs / 4)) : 250);
    timer.unref();
    if (options.signal) {
      if (options.signal.aborted) queueMicrotask(onAbort);
      else options.signal.addEventListener('abort', onAbort, { once: true });
    }
    lag?.loop.enable();
    for (const c of clients) c.start();
  });
}
