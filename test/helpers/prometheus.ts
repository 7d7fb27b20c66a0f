/**
 * A real Prometheus (Debian's `prometheus` package) for the live-metrics
 * tests: started on a free loopback port with a scrape config naming the
 * given targets at a 1 s interval, queried through its HTTP API, stopped by
 * the test that started it. Tests skip, saying why, on a machine without it;
 * under RESPBENCH_REQUIRE_PROMETHEUS=1 (CI, whose .ci/run installs it) they
 * fail instead.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, killAndRemove } from './servers.js';

export const prometheusBinary: string | null = spawnSync('sh', ['-c', 'command -v prometheus']).status === 0 ? 'prometheus' : null;

/** Skips the test when Prometheus is not installed (fails it under RESPBENCH_REQUIRE_PROMETHEUS=1). */
export function needPrometheus(ctx: { skip: (note?: string) => void }, what: string): void {
  if (prometheusBinary) return;
  const why = `prometheus is not installed (apt-get install -y prometheus): ${what} was not checked`;
  if (process.env.RESPBENCH_REQUIRE_PROMETHEUS === '1') throw new Error(`${why}; RESPBENCH_REQUIRE_PROMETHEUS=1 asks for it`);
  console.warn(`SKIPPED: ${why}`);
  ctx.skip(why);
}

export interface Sample {
  labels: Record<string, string>;
  /** [unix seconds, value] pairs (one for an instant query). */
  values: [number, number][];
}

export interface Prometheus {
  port: number;
  /** An instant query (at `time`, unix seconds, or now); throws with Prometheus's error for a bad expression. */
  query(expr: string, time?: number): Promise<Sample[]>;
  stop(): Promise<void>;
}

async function api(port: number, expr: string, time?: number): Promise<Sample[]> {
  const params = new URLSearchParams({ query: expr });
  if (time !== undefined) params.set('time', String(time));
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?${params}`);
  const body = (await res.json()) as { status: string; error?: string; data?: { resultType: string; result: { metric: Record<string, string>; value?: [number, string]; values?: [number, string][] }[] } };
  if (body.status !== 'success' || !body.data) throw new Error(`prometheus query ${expr}: ${body.error ?? res.status}`);
  if (body.data.resultType === 'scalar' || body.data.resultType === 'string') return [];
  return body.data.result.map((r) => ({ labels: r.metric, values: (r.values ?? (r.value ? [r.value] : [])).map(([t, v]) => [Number(t), Number(v)]) }));
}

/** Starts Prometheus scraping `targets` (host:port) every second; resolves once it is ready. */
export async function startPrometheus(targets: string[]): Promise<Prometheus> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'respbench-prometheus-'));
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 900ms',
      'scrape_configs:',
      '  - job_name: respbench',
      '    static_configs:',
      `      - targets: [${targets.map((t) => JSON.stringify(t)).join(', ')}]`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(prometheusBinary ?? 'prometheus', [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { stdio: 'ignore' });
  const stop = () => killAndRemove(child, dir);
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/-/ready`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus did not become ready on port ${port}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, query: (expr, time) => api(port, expr, time), stop };
}
