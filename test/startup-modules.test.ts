/**
 * A run pays at start only for what it asks for (issue 19, "pay only for
 * what the Plan asks for"): every module Node compiles and runs costs CPU
 * before the first request, and a short run's CPU per request carries it.
 * The bin is one bundle (packages/cli/scripts/bundle.mjs) in which each
 * compiled module is an initialiser named after it ("dist/merge.js"() {..})
 * that runs when the module is first imported; a plain run against
 * redis-server is watched through V8's coverage (NODE_V8_COVERAGE), which
 * says which of them ran. What a flag or another engine needs must not be
 * among them, and must be once that flag or engine is asked for. A --json
 * run encodes its histograms itself: hdr-histogram-js (a large CommonJS
 * package) is for reading files and writing --hdr-log.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { CLI, cliArgs, runProcess, startRedis, type RedisServer } from './helpers/servers.js';

/** Modules of the CLI's dist that only a flag or a subcommand needs. */
const ASKED_FOR_ONLY = [
  'merge.js',
  'merge-input.js',
  'compare/compare.js',
  'compare/figures.js',
  'metrics/endpoint.js',
  'metrics/registry.js',
  'metrics/statsd.js',
  'serve/server.js',
  'serve/spawn.js',
  'html-report.js',
  'hdr-log.js',
  'gates.js',
  'gate-reports.js',
  'repeat.js',
];

/** The JS engine's own rooms (and the cluster discovery its topology refresh uses): a native run needs none of them. */
const JS_ENGINE_ROOMS = ['engine-js/run.js', 'engine-js/worker.js', 'engine-js/client.js', 'engine-js/link.js', 'engine-js/tally.js', 'engine-js/in-flight.js', 'cluster.js'];

describe('a run loads only what it asks for', () => {
  let redis: RedisServer;
  let dir: string;
  const bundle = path.join(path.dirname(CLI), 'cli.js');
  beforeAll(async () => {
    redis = await startRedis();
    dir = mkdtempSync(path.join(tmpdir(), 'respbench-modules-'));
  });
  afterAll(async () => {
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('every module watched here is in the bundle as an initialiser of its own, run only when imported', () => {
    const source = readFileSync(bundle, 'utf8');
    for (const module of [...ASKED_FOR_ONLY, ...JS_ENGINE_ROOMS, 'run-command.js']) expect(source, module).toContain(`"dist/${module}"() {`);
  });

  /** The CLI's dist modules (paths under dist/) whose initialisers a run with `args` ran; the run must succeed. */
  async function loadedBy(name: string, args: string[]): Promise<string[]> {
    const coverage = path.join(dir, name);
    const run = await runProcess(process.execPath, [CLI, ...cliArgs(args)], 60_000, { ...process.env, NODE_V8_COVERAGE: coverage });
    expect(run.code, run.stderr).toBe(0);
    const ran = new Set<string>();
    let seen = false;
    for (const file of readdirSync(coverage)) {
      const { result } = JSON.parse(readFileSync(path.join(coverage, file), 'utf8')) as { result: { url: string; functions: { functionName: string; ranges: { count: number }[] }[] }[] };
      for (const script of result.filter((s) => s.url.startsWith('file://') && new URL(s.url).pathname === bundle)) {
        seen = true;
        for (const f of script.functions) if (f.functionName.startsWith('dist/') && f.ranges[0].count > 0) ran.add(f.functionName.slice('dist/'.length));
      }
    }
    expect(seen, `V8's coverage of the run has no ${bundle}`).toBe(true);
    return [...ran];
  }

  const plain = (engine: string) => ['--engine', engine, '--port', String(redis.port), '--mode', 'set', '--requests', '200', '--quiet'];

  it.each(engines())('engine %s: a plain run loads no module a flag, a subcommand or the other engine needs', async (engine) => {
    const loaded = await loadedBy(`plain-${engine.replace('/', '-')}`, plain(engine));
    // The run's own modules ran: the check is not vacuous.
    expect(loaded).toContain('run-command.js');
    expect(loaded.filter((m) => ASKED_FOR_ONLY.includes(m))).toEqual([]);
    const rooms = loaded.filter((m) => JS_ENGINE_ROOMS.includes(m));
    if (engine.startsWith('native')) expect(rooms).toEqual([]);
    else expect(rooms.sort()).toEqual([...JS_ENGINE_ROOMS].sort());
  });

  it.each(engines())('engine %s: --json writes its histograms as V2 base64 without loading hdr-histogram-js', async (engine) => {
    // NODE_DEBUG=module names each CommonJS module required (the library is one), on stderr.
    const run = await runProcess(process.execPath, [CLI, ...cliArgs([...plain(engine), '--json'])], 60_000, { ...process.env, NODE_DEBUG: 'module' });
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    expect(JSON.parse(run.stdout).histogram).toMatch(/^HISTF/);
    expect(run.stderr).toMatch(/MODULE \d+: /);
    expect(run.stderr).not.toMatch(/hdr-histogram-js/);
  });

  it('a flag that asks for a module loads it', async () => {
    const engine = engines().at(-1)!;
    const loaded = await loadedBy('asked', [...plain(engine), '--html', path.join(dir, 'run.html'), '--slo', 'errors<=1%', '--hdr-log', path.join(dir, 'run')]);
    expect(loaded).toEqual(expect.arrayContaining(['html-report.js', 'gates.js', 'gate-reports.js', 'hdr-log.js']));
  });
});
