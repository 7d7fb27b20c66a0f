/**
 * Live metrics (issue 23): --metrics-listen scraped by a real Prometheus
 * while runs of both engines go on, --statsd received by a UDP listener, the
 * refusals before any load, and the Grafana dashboard's queries evaluated by
 * that Prometheus against the metrics a run served.
 */
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FAMILIES } from '../packages/cli/src/metrics/families.js';
import { engines } from './helpers/engines.js';
import { needPrometheus, startPrometheus, type Prometheus } from './helpers/prometheus.js';
import { CLI, commandsProcessed, freePort, REPO, runCli, runJson, startRedis, type CliRun, type RedisServer } from './helpers/servers.js';

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

/** Started by startRun and not yet exited: killed after each test, pass or fail. */
const children = new Set<import('node:child_process').ChildProcess>();
afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
});

/** Starts the CLI with --json; `done` resolves with its run and parsed result once it exits. */
function startRun(args: string[], timeoutMs: number): { done: Promise<{ run: CliRun; result: any }>; exited: () => boolean } {
  const started = Date.now();
  const child = spawn(process.execPath, [CLI, ...args, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let exited = false;
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const done = new Promise<{ run: CliRun; result: any }>((resolve, reject) =>
    child.on('close', (code) => {
      exited = true;
      children.delete(child);
      clearTimeout(timer);
      const run = { code, stdout, stderr, ms: Date.now() - started };
      try {
        resolve({ run, result: JSON.parse(stdout) });
      } catch {
        reject(new Error(`no JSON (exit ${code}): ${stderr}${stdout}`));
      }
    }),
  );
  return { done, exited: () => exited };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The dashboard's expressions with Grafana's variables filled in as Grafana would for "All". */
function dashboardExpressions(): { title: string; expr: string }[] {
  const dash = JSON.parse(readFileSync(path.join(REPO, 'examples', 'grafana', 'respbench.json'), 'utf8'));
  return dash.panels.flatMap((p: any) => p.targets.map((t: any) => ({ title: p.title, expr: String(t.expr).replaceAll('$__rate_interval', '4s').replaceAll('$target', '.*').replaceAll('$client_index', '.*') })));
}

describe('--metrics-listen, scraped by Prometheus', () => {
  let prometheus: Prometheus | null = null;
  afterAll(async () => {
    await prometheus?.stop();
  });

  it('shows live counts during a 10 s run of each engine, ends with the exact counts, a rate that agrees with the run, and every dashboard query evaluates', async (ctx) => {
    needPrometheus(ctx, 'the live metrics endpoint');
    const list = engines();
    const ports = await Promise.all(list.map(() => freePort()));
    prometheus = await startPrometheus(ports.map((p) => `127.0.0.1:${p}`));
    const rate = 2000;
    // Both engines at once, as two load machines of one fleet: one Prometheus scrapes both.
    const runs = list.map((engine, k) =>
      startRun(['--engine', engine, '-p', String(redis.port), '--duration', '10s', '-c', '4', '-P', '4', '--rate', String(rate), '--mode', 'set', '--interval', '250ms', '--client-index', String(k), '--client-count', String(list.length), '--seed', '7', '--metrics-listen', `127.0.0.1:${ports[k]}`, '--metrics-linger', '4s', '-q'], 60_000),
    );
    // While the runs go on, Prometheus holds their counts: requests scraped while the run said it was running.
    const liveFor = new Set<string>();
    while (liveFor.size < list.length && runs.every((r) => !r.exited())) {
      await sleep(500);
      const live = await prometheus.query('sum by (engine) (respbench_requests_total) and on (engine) max by (engine) (respbench_running) == 1');
      for (const s of live) if (s.values[0][1] > 0) liveFor.add(s.labels.engine);
    }
    expect([...liveFor].sort(), 'engines with live counts before their run ended').toEqual([...list].sort());
    const results = await Promise.all(runs.map((r) => r.done));
    // A moment when every run was well under way.
    const during = Math.min(...results.map(({ result }) => result.startedUnixMs / 1000 + (0.8 * result.elapsedNs) / 1e9));
    // Every query of the dashboard is valid PromQL over these metrics, and the main ones have data.
    for (const { title, expr } of dashboardExpressions()) {
      const samples = await prometheus.query(expr, during);
      // Figures this run has while it goes (not: cluster nodes, errors, lags set at the end).
      const hasData = !/node_requests|outcome!="ok"|_lag_/.test(expr);
      if (hasData) expect(samples.length, `${title}: ${expr}`).toBeGreaterThan(0);
    }
    for (const [k, engine] of list.entries()) {
      const { run, result } = results[k];
      expect(run.code, run.stderr).toBe(0);
      const labels = `engine="${engine}",client_index="${k}"`;
      // The final scrape (during the linger) equals the run's own count exactly.
      const final = await prometheus.query(`sum(max_over_time(respbench_requests_total{${labels},outcome!="lost"}[5m]))`);
      expect(final[0].values[0][1]).toBe(result.requests);
      const count = await prometheus.query(`sum(max_over_time(respbench_request_duration_seconds_count{${labels}}[5m]))`);
      expect(count[0].values[0][1]).toBe(result.requests);
      const bytes = await prometheus.query(`max_over_time(respbench_bytes_sent_total{${labels}}[5m])`);
      expect(bytes[0].values[0][1]).toBe(result.bytesOut);
      const target = await prometheus.query(`max_over_time(respbench_target_rate{${labels}}[5m])`);
      expect(target[0].values[0][1]).toBe(rate / list.length);
      // The rate Prometheus sees over the measured phase, from its raw samples, against the run's ops/s.
      const [series] = await prometheus.query(`respbench_requests_total{${labels},outcome="ok"}[5m]`);
      const start = result.startedUnixMs / 1000;
      const end = start + result.elapsedNs / 1e9;
      const inside = series.values.filter(([t]) => t > start + 1 && t < end - 0.5);
      // A scrape can miss (1 of 3 runs here saw 4 of ~8): three samples still span seconds of the phase.
      expect(inside.length).toBeGreaterThanOrEqual(3);
      const [t0, v0] = inside[0];
      const [t1, v1] = inside[inside.length - 1];
      const seen = (v1 - v0) / (t1 - t0);
      expect(Math.abs(seen / result.opsPerSec - 1), `${engine}: Prometheus ${seen.toFixed(0)}/s, run ${result.opsPerSec.toFixed(0)}/s`).toBeLessThan(0.1);
    }
  }, 90_000);
});

describe('--statsd', () => {
  it.each(engines())('%s: the counters pushed over UDP add up to the run, per outcome and per command', async (engine) => {
    const sock = dgram.createSocket('udp4');
    const lines: string[] = [];
    sock.on('message', (m) => lines.push(...m.toString().split('\n')));
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    const port = (sock.address() as net.AddressInfo).port;
    try {
      const { run, result } = await runJson(['--engine', engine, '-p', String(redis.port), '-n', '20000', '-c', '4', '-P', '8', '--interval', '200ms', '--statsd', `127.0.0.1:${port}`, '--statsd-prefix', `bench.${engine}`, '-q']);
      expect(run.code, run.stderr).toBe(0);
      await sleep(300);
      const sum = (re: RegExp) => lines.reduce((n, l) => n + Number(re.exec(l)?.[1] ?? 0), 0);
      expect(sum(new RegExp(`^bench\\.${engine}\\.requests\\.(?:ok|error|miss|mismatch|lost_write):(\\d+)\\|c$`))).toBe(result.requests);
      for (const row of result.perCommand.filter((r: any) => r.command !== 'Totals')) {
        expect(sum(new RegExp(`^bench\\.${engine}\\.command\\.${row.command}\\.requests:(\\d+)\\|c$`)), row.command).toBe(row.requests);
      }
      expect(sum(new RegExp(`^bench\\.${engine}\\.bytes_sent:(\\d+)\\|c$`))).toBe(result.bytesOut);
      expect(lines.some((l) => new RegExp(`^bench\\.${engine}\\.command\\.GET\\.latency_p99_ms:[\\d.]+\\|g$`).test(l))).toBe(true);
    } finally {
      sock.close();
    }
  });

  it('a StatsD host nobody listens on never slows or fails the run', async () => {
    const port = await freePort();
    const { run, result } = await runJson(['-p', String(redis.port), '-n', '20000', '-c', '2', '--interval', '100ms', '--statsd', `127.0.0.1:${port}`, '-q']);
    expect(run.code, run.stderr).toBe(0);
    expect(result.requests).toBe(20000);
  });
});

describe('--metrics-listen over a -t suite', () => {
  it.each(engines())('%s: every test of the suite adds to the counters, per command, and the endpoint outlives the work for the last scrape', async (engine) => {
    const port = await freePort();
    const run = startRun(['--engine', engine, '-p', String(redis.port), '-t', 'set,get,incr', '-n', '3000', '-q', '--metrics-listen', String(port), '--metrics-linger', '3s'], 60_000);
    // After the suite, while the endpoint lingers: the last figures.
    let text = '';
    while (!run.exited()) {
      await sleep(200);
      text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text(), () => text);
      if (/^respbench_running\{[^}]*\} 0$/m.test(text) && /command="INCR",outcome="ok"/.test(text)) break;
    }
    const { run: cli, result } = await run.done;
    expect(cli.code, cli.stderr).toBe(0);
    for (const { label, result: r } of result as { label: string; result: { requests: number } }[]) {
      const m = new RegExp(`^respbench_requests_total\\{[^}]*command="${label}",outcome="ok"\\} (\\d+)$`, 'm').exec(text);
      expect(Number(m?.[1]), label).toBe(r.requests);
    }
  });
});

describe('refused before any load', () => {
  it('a --metrics-listen port in use: one line, exit 1, nothing sent', async () => {
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const before = commandsProcessed(redis);
      const run = await runCli(['-p', String(redis.port), '-n', '1000', '--metrics-listen', String(port)]);
      expect(run.code).toBe(1);
      expect(run.stderr.trim().split('\n')).toEqual([`respbench: --metrics-listen 127.0.0.1:${port}: the port is already in use`]);
      // INFO itself is the one command between the two looks.
      expect(commandsProcessed(redis) - before).toBeLessThanOrEqual(1);
    } finally {
      busy.close();
    }
  });

  it.each([
    [['--metrics-listen', 'nine'], '--metrics-listen must be PORT or HOST:PORT'],
    [['--metrics-listen', '70000'], '--metrics-listen port'],
    [['--metrics-linger', '2s'], '--metrics-linger needs --metrics-listen'],
    [['--statsd', 'localhost'], '--statsd must be HOST:PORT'],
    [['--statsd', '127.0.0.1:8125', '--statsd-prefix', 'a..b'], '--statsd-prefix must be'],
    [['--statsd-prefix', 'x'], '--statsd-prefix needs --statsd'],
  ])('%j: exit 2 naming the flag', async (flags, says) => {
    const run = await runCli(['-p', String(redis.port), '-n', '10', ...flags]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(says);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('examples/grafana/respbench.json', () => {
  const dash = JSON.parse(readFileSync(path.join(REPO, 'examples', 'grafana', 'respbench.json'), 'utf8'));
  const served = new Set(Object.values(FAMILIES).flatMap((f) => (f.type === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => f.name + s) : [f.name])));

  it('queries only metrics respbench serves, through the dashboard\'s datasource variable', () => {
    const exprs = dashboardExpressions();
    expect(exprs.length).toBeGreaterThanOrEqual(8);
    for (const { title, expr } of exprs) {
      const names = expr.match(/respbench_[a-z_]+/g) ?? [];
      expect(names.length, title).toBeGreaterThan(0);
      for (const n of names) expect(served, `${title}: ${n}`).toContain(n);
    }
    for (const p of dash.panels) expect(p.datasource.uid).toBe('${datasource}');
    expect(dash.templating.list.map((v: any) => v.name)).toEqual(['datasource', 'target', 'client_index']);
  });

  it('shows throughput, p50 and p99 over time, errors, per node and per load machine', () => {
    const all = dashboardExpressions().map((e) => e.expr);
    expect(all.some((e) => /histogram_quantile\(0\.99,/.test(e))).toBe(true);
    expect(all.some((e) => /histogram_quantile\(0\.5,/.test(e))).toBe(true);
    expect(all.some((e) => /outcome!="ok"/.test(e))).toBe(true);
    expect(all.some((e) => /by \(node\)/.test(e))).toBe(true);
    expect(all.some((e) => /by \(client_index\)/.test(e))).toBe(true);
  });
});
