/**
 * Live metrics for the length of a command (a run, a -t suite, a capacity
 * search, a study): the flags, the endpoint and the StatsD socket opened
 * before any load and closed after it, and the watcher that feeds them every
 * run's intervals. The endpoint stays up --metrics-linger after the work so
 * the last scrape sees the final counts; a signal ends that wait at once.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Command } from 'commander';
import { parseDurationMs, parseHostPort, parseInteger, parseText } from '../flag-values.js';
import { LIMITS } from '../engine-js/limits.js';
import { Exit, EXIT } from '../exit.js';
import { onStopSignals } from '../interrupt.js';
import { watchRuns } from '../run.js';
import { UsageError } from '../usage-error.js';
import { checkTelemetryFlags } from '../validate.js';
import type { ListenAddress, MetricsEndpoint } from './endpoint.js';
import type { StatsdPusher, StatsdTarget } from './statsd.js';

export interface TelemetryFlags {
  metricsListen?: string;
  metricsLinger?: string;
  statsd?: string;
  statsdPrefix?: string;
}

export interface TelemetryConfig {
  listen: ListenAddress | null;
  lingerMs: number;
  statsd: StatsdTarget | null;
}

export const DEFAULT_LINGER = '5s';
export const DEFAULT_STATSD_PREFIX = 'respbench';

export function addTelemetryOptions(cmd: Command): Command {
  return cmd
    .option('--metrics-listen <[host:]port>', 'serve live metrics at http://host:port/metrics (Prometheus/OpenMetrics text) while it runs; host 127.0.0.1 unless given (0.0.0.0 for every interface); port 0 picks one')
    .option('--metrics-linger <duration>', `with --metrics-listen: keep serving this long after the work ends, for the last scrape (default ${DEFAULT_LINGER}; 0 closes at once)`)
    .option('--statsd <host:port>', 'push the figures of each interval to a StatsD server over UDP (as memtier --statsd-host)')
    .option('--statsd-prefix <prefix>', `with --statsd: the metric names' prefix (default ${DEFAULT_STATSD_PREFIX}; machines with the same prefix add up)`);
}

/** `9100`, `127.0.0.1:9100`, `[::1]:9100`, `0.0.0.0:9100`: loopback unless a host is given. */
export function parseListen(raw: string): ListenAddress {
  const text = raw.trim();
  if (/^\d+$/.test(text)) return { host: '127.0.0.1', port: parseInteger('--metrics-listen port', text, [0, LIMITS.port[1]]) };
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^[\]:]+):(\d+)$/.exec(text);
  if (!m) throw new UsageError(`--metrics-listen must be PORT or HOST:PORT, e.g. 9100, 127.0.0.1:9100 or [::1]:9100 (got ${JSON.stringify(raw)})`);
  return { host: m[1], port: parseInteger('--metrics-listen port', m[2], [0, LIMITS.port[1]]) };
}

export function telemetryConfig(flags: TelemetryFlags): TelemetryConfig | null {
  checkTelemetryFlags(flags);
  if (flags.metricsListen === undefined && flags.statsd === undefined) return null;
  const listen = flags.metricsListen === undefined ? null : parseListen(flags.metricsListen);
  const lingerMs = parseDurationMs('--metrics-linger', flags.metricsLinger ?? DEFAULT_LINGER, true);
  let statsd: StatsdTarget | null = null;
  if (flags.statsd !== undefined) {
    const at = parseHostPort(flags.statsd, '--statsd');
    const prefix = parseText('--statsd-prefix', flags.statsdPrefix ?? DEFAULT_STATSD_PREFIX);
    if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(prefix)) {
      throw new UsageError(`--statsd-prefix must be dot-separated words of letters, digits, _ and - (e.g. respbench.pod-3; got ${JSON.stringify(prefix)})`);
    }
    statsd = { ...at, prefix };
  }
  return { listen, lingerMs, statsd };
}

/** A failure to open what the flags asked for, before any load: exit 1 with this line. */
export class TelemetryOpenError extends Error {}

/**
 * Runs `work` with the endpoint and the StatsD push of `config` (none when
 * null); `say` prints a line on stderr (where the endpoint listens).
 */
export async function withTelemetry<T>(config: TelemetryConfig | null, say: (line: string) => void, work: () => Promise<T>): Promise<T> {
  if (!config) return work();
  // Loaded only when a flag asks for telemetry: a plain run parses none of it.
  const [{ startMetricsEndpoint }, { LiveMetrics }, { StatsdPusher }] = await Promise.all([import('./endpoint.js'), import('./registry.js'), import('./statsd.js')]);
  const metrics = new LiveMetrics();
  let endpoint: MetricsEndpoint | null = null;
  let statsd: StatsdPusher | null = null;
  try {
    if (config.listen) endpoint = await startMetricsEndpoint(config.listen, metrics);
    if (config.statsd) statsd = await StatsdPusher.open(config.statsd);
  } catch (err) {
    await endpoint?.close();
    throw new TelemetryOpenError((err as Error).message);
  }
  if (endpoint) say(`metrics at ${endpoint.url}`);
  let lastIntervalSec: number | null = null;
  if (statsd) metrics.onPublish = (p) => statsd!.push(p, p.perCommand ? lastIntervalSec : null);
  // The JS engine runs on this thread: its event-loop delay is the client's lag, live.
  let loopDelay: IntervalHistogram | null = null;
  // A run stopped by a signal: the user wants out, so no lingering for a scrape.
  let interrupted = false;
  const unwatch = watchRuns({
    started: (plan, engine) => {
      metrics.startRun(plan, engine);
      if (engine === 'js') {
        loopDelay = monitorEventLoopDelay({ resolution: 10 });
        loopDelay.enable();
      }
    },
    interval: (i) => {
      lastIntervalSec = Math.max(0, i.endNs - i.startNs) / 1e9;
      if (loopDelay) {
        metrics.setClientLag(loopDelay.percentile(99) / 1e9);
        loopDelay.reset();
      }
      metrics.addInterval(i);
    },
    ended: (result) => {
      loopDelay?.disable();
      loopDelay = null;
      if (result) metrics.endRun(result);
      else metrics.abandonRun();
      if (result?.failure?.kind === 'interrupted') interrupted = true;
    },
  });
  try {
    return await work();
  } finally {
    unwatch();
    if (endpoint && !interrupted) await linger(config.lingerMs);
    await endpoint?.close();
    await statsd?.close();
  }
}

/** Waits `ms` for a last scrape, or less if a signal comes. */
function linger(ms: number): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    let stop = () => {};
    const timer = setTimeout(() => {
      stop();
      resolve();
    }, ms);
    stop = onStopSignals(() => {
      clearTimeout(timer);
      stop();
      resolve();
    });
  });
}

/**
 * A command's work under the telemetry its flags ask for: bad flags are a
 * usage error (exit 2), an endpoint or socket that cannot open is one line
 * and exit 1, both before any load.
 */
export async function runWithTelemetry<T>(flags: TelemetryFlags, io: { stderr: (t: string) => void }, quiet: boolean, work: () => Promise<T>): Promise<T> {
  const config = telemetryConfig(flags);
  try {
    return await withTelemetry(config, quiet ? () => {} : (line) => io.stderr(`respbench: ${line}\n`), work);
  } catch (err) {
    if (!(err instanceof TelemetryOpenError)) throw err;
    io.stderr(`respbench: ${err.message}\n`);
    throw new Exit(EXIT.failed);
  }
}
