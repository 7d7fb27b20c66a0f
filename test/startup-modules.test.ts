/**
 * A run pays at start only for what it asks for (issue 19, "pay only for
 * what the Plan asks for"): every module Node parses costs CPU before the
 * first request, and a short run's CPU per request carries it. A plain run
 * against redis-server is watched through a module loader hook that logs
 * each module Node loads; what a flag or another engine needs must not be
 * among them, and must be once that flag or engine is asked for. The bin is
 * a bundle (packages/cli/scripts/bundle.mjs): each file of it Node loads
 * stands for the compiled modules its metafile says it holds. A --json
 * run encodes its histograms itself: hdr-histogram-js (a large CommonJS
 * package) is for reading files and writing --hdr-log.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  beforeAll(async () => {
    redis = await startRedis();
    dir = mkdtempSync(path.join(tmpdir(), 'respbench-modules-'));
    // Loader hooks run on their own thread in Node 20: the log is a file, appended per module.
    writeFileSync(path.join(dir, 'register.mjs'), "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n");
    writeFileSync(
      path.join(dir, 'hooks.mjs'),
      "import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) {\n  appendFileSync(process.env.RESPBENCH_LOADED_LOG, `${url}\\n`);\n  return next(url, context);\n}\n",
    );
  });
  afterAll(async () => {
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The CLI's dist modules (paths under dist/) a run with `args` loaded, through the bundle's files; the run must succeed. */
  async function loadedBy(name: string, args: string[]): Promise<string[]> {
    const log = path.join(dir, `${name}.log`);
    const run = await runProcess(process.execPath, ['--import', path.join(dir, 'register.mjs'), CLI, ...cliArgs(args)], 60_000, { ...process.env, RESPBENCH_LOADED_LOG: log });
    expect(run.code, run.stderr).toBe(0);
    const pkg = path.dirname(path.dirname(CLI));
    const { outputs } = JSON.parse(readFileSync(path.join(path.dirname(CLI), 'meta.json'), 'utf8')) as { outputs: Record<string, { inputs: Record<string, unknown> }> };
    const files = readFileSync(log, 'utf8')
      .split('\n')
      .filter((url) => url.startsWith('file://'))
      .map((url) => path.relative(pkg, new URL(url).pathname))
      .filter((file) => file.startsWith(`${path.basename(path.dirname(CLI))}/`));
    return files.flatMap((file) => {
      expect(outputs[file], `${file}: not in the bundle's metafile`).toBeDefined();
      return Object.keys(outputs[file].inputs)
        .filter((input) => input.startsWith('dist/'))
        .map((input) => input.slice('dist/'.length));
    });
  }

  const plain = (engine: string) => ['--engine', engine, '--port', String(redis.port), '--mode', 'set', '--requests', '200', '--quiet'];

  it.each(engines())('engine %s: a plain run loads no module a flag, a subcommand or the other engine needs', async (engine) => {
    const loaded = await loadedBy(`plain-${engine.replace('/', '-')}`, plain(engine));
    // The hook saw the run's own modules: the check is not vacuous.
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
