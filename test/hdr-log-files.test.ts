/**
 * Which files --hdr-log writes, and how (issue 20 item 8): with a command mix
 * one log pair per command of the mix (named as its perCommand row) and
 * Totals, not SET/GET logs; each file written whole (temp file + rename),
 * so an existing file is replaced as --html replaces its page, and a
 * symlink named like an output file is replaced, its target never written.
 * Against a real redis-server, both engines.
 */
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { runCli, useRedis } from './helpers/servers.js';

const redis = useRedis();
const dir = mkdtempSync(path.join(tmpdir(), 'respbench-hdr-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MIX = ['--command', 'SET __key__ __data__', '--weight', '2', '--command', 'INCR counter:__key__', '--command', 'LPUSH list:__key__ __data__'];

describe.each(engines())('engine %s', (engine) => {
  it('a command mix writes one log pair per command of the mix and Totals: no GET log for a run that sent no GET', async () => {
    const prefix = path.join(dir, `${engine}-mix`);
    const run = await runCli(['--engine', engine, '-p', String(redis.current.port), '-n', '3000', '-c', '2', '-r', '100', '-q', '--interval', '100ms', '--hdr-log', prefix, '--json', ...MIX]);
    expect(run.code, run.stderr).toBe(0);
    const rows = JSON.parse(run.stdout).perCommand.map((r: { command: string }) => r.command);
    expect(rows).toEqual(['SET', 'INCR', 'LPUSH', 'Totals']);
    const written = readdirSync(dir).filter((f) => f.startsWith(`${engine}-mix.`)).sort();
    expect(written).toEqual(rows.flatMap((r: string) => [`${engine}-mix.${r}.hlog`, `${engine}-mix.${r}.run.hlog`]).sort());
    // Each command's whole-run log holds its own histogram, not another's.
    const runLogs = rows.map((r: string) => readFileSync(`${prefix}.${r}.run.hlog`, 'utf8').split('\n').filter((l: string) => /^\d/.test(l)));
    expect(new Set(runLogs.map((l: string[]) => l.join())).size).toBe(rows.length);
  });

  it('an existing log is replaced whole, and a symlink named like a log is replaced, its target left alone', async () => {
    const prefix = path.join(dir, `${engine}-links`);
    const victim = path.join(dir, `${engine}-victim.txt`);
    writeFileSync(victim, 'not a log\n');
    symlinkSync(victim, `${prefix}.SET.run.hlog`);
    writeFileSync(`${prefix}.Totals.hlog`, 'an old log\n');
    const run = await runCli(['--engine', engine, '-p', String(redis.current.port), '-n', '2000', '-c', '2', '-q', '--mode', 'set', '--hdr-log', prefix]);
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('not a log\n');
    expect(lstatSync(`${prefix}.SET.run.hlog`).isSymbolicLink()).toBe(false);
    expect(readFileSync(`${prefix}.SET.run.hlog`, 'utf8')).toMatch(/^#\[Histogram log format version/);
    expect(readFileSync(`${prefix}.Totals.hlog`, 'utf8')).toMatch(/^#\[Histogram log format version/);
    // Nothing left beside them: no temp file outlives the write.
    expect(readdirSync(dir).filter((f) => f.startsWith(`${engine}-links.`) && f.endsWith('.tmp'))).toEqual([]);
  });
});
