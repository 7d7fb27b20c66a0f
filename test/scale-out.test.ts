/**
 * The scale-out recipe (issue 14, docs/scale-out.md): the Kubernetes Indexed
 * Job in examples/kubernetes cannot run here, so its shape is checked: the
 * fields the recipe relies on, and that the command it runs is one respbench
 * accepts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { freePort, REPO, runCli } from './helpers/servers.js';

const FILE = path.join(REPO, 'examples', 'kubernetes', 'respbench-job.yaml');

describe('examples/kubernetes/respbench-job.yaml', () => {
  const job = parse(readFileSync(FILE, 'utf8'));
  const pod = job.spec.template.spec;
  const container = pod.containers[0];
  const env = Object.fromEntries((container.env as { name: string; value: string }[]).map((e) => [e.name, e.value]));
  const script: string = container.args.join(' ');

  it('is an Indexed Job whose every share runs once, all at once', () => {
    expect(job.apiVersion).toBe('batch/v1');
    expect(job.kind).toBe('Job');
    expect(job.spec.completionMode).toBe('Indexed');
    expect(job.spec.parallelism).toBe(job.spec.completions);
    // A retried pod would send its share twice.
    expect(job.spec.backoffLimit).toBe(0);
    expect(pod.restartPolicy).toBe('Never');
  });

  it('passes JOB_COMPLETION_INDEX as --client-index and the completions as --client-count, with a fixed seed and JSON out', () => {
    expect(container.command).toEqual(['/bin/sh', '-c']);
    expect(script).toMatch(/--client-index "\$JOB_COMPLETION_INDEX"/);
    expect(script).toMatch(/--client-count "\$CLIENT_COUNT"/);
    expect(Number(env.CLIENT_COUNT)).toBe(job.spec.completions);
    expect(script).toMatch(/--seed \d+/);
    expect(script).toMatch(/-q --json/);
  });

  it('runs a command line respbench accepts (checked up to the connection, with the index and count filled in)', async () => {
    const argv = script
      .replace(/^exec npx --yes respbench@\S+\s+/, '')
      .replace(/"\$JOB_COMPLETION_INDEX"/, String(job.spec.completions - 1))
      .replace(/"\$CLIENT_COUNT"/, env.CLIENT_COUNT)
      .replace(/"\$REDIS_HOST"/, '127.0.0.1')
      .replace(/"\$REDIS_PORT"/, '1')
      // The pod's metrics port and its linger, made a free loopback port and no wait here.
      .replace(/--metrics-listen 0\.0\.0\.0:\d+/, `--metrics-listen 127.0.0.1:${await freePort()}`)
      .replace(/--metrics-linger \S+/, '--metrics-linger 0s')
      .split(/\s+/)
      .filter((w) => w !== '');
    expect(argv.some((w) => w.includes('$'))).toBe(false);
    // Port 1: nothing listens, so the run fails to connect (exit 1) rather than on usage (exit 2).
    const r = await runCli(argv, 20_000);
    expect(r.stderr).not.toMatch(/see --help|must be|needs/);
    expect(r.code).toBe(1);
  });

  it('serves live metrics on the port its scrape wiring names (annotations and the PodMonitor)', () => {
    const port = Number(/--metrics-listen 0\.0\.0\.0:(\d+)/.exec(script)?.[1]);
    expect(port).toBeGreaterThan(0);
    const annotations = job.spec.template.metadata.annotations;
    expect(annotations['prometheus.io/scrape']).toBe('true');
    expect(Number(annotations['prometheus.io/port'])).toBe(port);
    expect(annotations['prometheus.io/path']).toBe('/metrics');
    const named = container.ports.find((p: { name: string }) => p.name === 'metrics');
    expect(named.containerPort).toBe(port);
    const monitor = parse(readFileSync(path.join(REPO, 'examples', 'kubernetes', 'podmonitor.yaml'), 'utf8'));
    expect(monitor.kind).toBe('PodMonitor');
    expect(monitor.spec.selector.matchLabels).toEqual(job.spec.template.metadata.labels);
    expect(monitor.spec.podMetricsEndpoints[0]).toMatchObject({ port: 'metrics', path: '/metrics' });
    // The last scrape must come after the run: the linger outlasts the scrape interval.
    const linger = Number(/--metrics-linger (\d+)s/.exec(script)?.[1]);
    expect(linger).toBeGreaterThan(Number(/^(\d+)s$/.exec(monitor.spec.podMetricsEndpoints[0].interval)?.[1]) * 2);
  });
});
