/**
 * No password in any output, whatever the path (issue 20 item 1): a
 * distinctive password goes in through every source the tool reads (-a,
 * --uri well formed or not, REDISCLI_AUTH, a study file, a hand-edited
 * result file given to merge) and every error path we know of runs; no
 * piece of it may show in stdout, stderr or any file written. The target
 * is a real RESP server on loopback that echoes the arguments of what it
 * is sent in its error replies, as Redis's "unknown command … with args
 * beginning with:" does.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { startRespServer, unknownCommand, type RespServer } from './helpers/resp-server.js';
import { runCli, type CliRun } from './helpers/servers.js';

/** The password: an `@`, a `/` and a `:` in it, so a URI parser that splits at the first of them shows the rest. */
const SECRET = 'Qz8v:W@tJqX/9kRw';
/** The same with a stray `%`: a URI holding it fails to parse (a bad %-escape). */
const SECRET_PCT = 'Zx3Kv@tLpY%9mQw';

/** Every 5-character piece of each password: "never echo any substring of it". */
const PIECES = [SECRET, SECRET_PCT].flatMap((s) => Array.from({ length: s.length - 4 }, (_, i) => s.slice(i, i + 5)));

function leaks(text: string): string[] {
  return PIECES.filter((p) => text.includes(p));
}

const scratch = mkdtempSync(path.join(tmpdir(), 'respbench-secrets-'));

/** Every file under the scratch directory, as text. */
function filesText(): string {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (!e.name.endsWith('.input.json') && !e.name.endsWith('.study.yaml')) out.push(`${p}:\n${readFileSync(p, 'utf8')}`);
    }
  };
  walk(scratch);
  return out.join('\n');
}

/**
 * A RESP server (a test target) that takes AUTH and HELLO, answers SET with
 * +OK, and answers GET with an error reply quoting the password it was given,
 * and anything else with Redis's unknown-command error quoting the arguments.
 */
let server: RespServer;
let port = 0;
/** A server that refuses AUTH, quoting the password it was sent. */
let refusing: RespServer;
let refusingPort = 0;

beforeAll(async () => {
  server = await startRespServer((args, login) => {
    const name = args[0].toUpperCase();
    if (name === 'AUTH') {
      login.password = args[args.length - 1];
      return '+OK\r\n';
    }
    if (name === 'HELLO') {
      login.password = args[args.length - 1];
      return '%1\r\n$6\r\nserver\r\n$4\r\ntest\r\n';
    }
    if (name === 'CLIENT' || name === 'SET') return '+OK\r\n';
    if (name === 'GET') return `-ERR wrong password ${login.password ?? ''} for ${args[1]}\r\n`;
    return unknownCommand(args);
  });
  refusing = await startRespServer(unknownCommand);
  [port, refusingPort] = [server.port, refusing.port];
});

afterAll(() => {
  server?.close();
  refusing?.close();
  rmSync(scratch, { recursive: true, force: true });
});

// No -q: the header and the table are outputs a password must not show in.
const SMALL = ['-n', '200', '-c', '2', '-r', '50', '--timeout', '5s'];

function file(name: string): string {
  return path.join(scratch, name);
}

function expectNoLeak(run: CliRun, what: string): void {
  const all = `${run.stdout}\n${run.stderr}\n${filesText()}`;
  expect(leaks(all), `${what}: a piece of the password shows (exit ${run.code}):\n${all.slice(0, 3000)}`).toEqual([]);
}

/** A result file as a user might have hand-edited it: the password written in. */
function handEditedResult(name: string, requests: number, clientIndex: number): string {
  const histogram = { unit: 'ns', significantDigits: 3, buckets: [[1000, 10]] };
  const result = {
    version: 2,
    engine: 'js',
    requests: 10,
    sets: 10,
    gets: 0,
    ok: 10,
    errors: 0,
    misses: 0,
    mismatches: 0,
    pushes: 0,
    bytesOut: 100,
    bytesIn: 50,
    elapsedNs: 1_000_000,
    histogram,
    setHistogram: histogram,
    getHistogram: { ...histogram, buckets: [] },
    preloadRequests: 0,
    preloadElapsedNs: 0,
    firstError: null,
    firstMismatch: null,
    failure: null,
    intervals: [],
    startedUnixMs: 1_700_000_000_000,
    // -a bundled with switches, as commander reads it (-3 -q -a PW; -q -a PW).
    meta: { tool: 'respbench', commandLine: ['-a', SECRET, '-u', `redis://u:${SECRET}@h:1`, '-3qa', SECRET, `-qa${SECRET}`], hostname: 'h' },
    plan: { host: '127.0.0.1', port: 6379, requests, connections: 2, pipeline: 1, mode: 'set', password: SECRET, auth: SECRET, authToken: SECRET, clientIndex, clientCount: 2, setCmd: 'SET', getCmd: 'GET', keyPrefix: 'key:', tls: { keyPassphrase: SECRET } },
  };
  const p = file(`${name}.input.json`);
  writeFileSync(p, JSON.stringify(result));
  return p;
}

function studyFile(name: string, body: string): string {
  const p = file(`${name}.study.yaml`);
  writeFileSync(p, body);
  return p;
}

/** Error paths that need no run (usage errors, parse errors, merge): one engine is enough. */
const USAGE_CASES: { what: string; args: () => string[]; env?: Record<string, string>; succeeds?: true }[] = [
  { what: 'a URI whose port is not a number', args: () => ['-u', `redis://u:${SECRET}@127.0.0.1:port`] },
  { what: 'a URI with no host', args: () => ['-u', `redis://u:${SECRET}@`] },
  { what: 'a URI with a bad %-escape in the password', args: () => ['-u', `redis://u:${SECRET_PCT}@127.0.0.1:1`] },
  { what: 'a URI with a malformed scheme', args: () => ['-u', `redis:/u:${SECRET}@127.0.0.1:1`] },
  { what: 'a URI with an unknown scheme', args: () => ['--uri', `http://u:${SECRET}@127.0.0.1:1`] },
  { what: 'a URI with no user and a port out of range', args: () => [`--uri=redis://${SECRET}@127.0.0.1:99999`] },
  { what: 'a URI with a bad database', args: () => ['-u', `redis://u:${SECRET}@127.0.0.1:1/abc`] },
  { what: 'a unix URI with a relative path', args: () => ['-u', `unix://u:${SECRET}@sock?db=x`] },
  { what: 'a mistyped --pass=…', args: () => [`--pas=${SECRET}`] },
  { what: '-a with another bad flag', args: () => ['-a', SECRET, '--requests', 'lots'] },
  { what: 'REDISCLI_AUTH with another bad flag', args: () => ['--pipeline', '0'], env: { REDISCLI_AUTH: SECRET } },
  { what: 'merge of hand-edited results of different Plans', args: () => ['merge', handEditedResult('a', 10, 0), handEditedResult('b', 20, 1)] },
  { what: 'merge of hand-edited results (merged JSON and HTML)', args: () => ['merge', handEditedResult('c', 10, 0), handEditedResult('d', 10, 1), '--json', '--html', file('merged.html')], succeeds: true },
  {
    what: 'a study file with pass: and a bad key after it',
    args: () => ['study', studyFile('s1', `name: s1\nscenarios:\n  - name: a\n    target: { address: '127.0.0.1:1', pass: '${SECRET}' }\n    bogus: 1\n`)],
  },
  { what: 'a study file with a malformed uri', args: () => ['study', studyFile('s2', `name: s2\nscenarios:\n  - name: a\n    target: { uri: 'redis://u:${SECRET}@127.0.0.1:xx' }\n`)] },
  { what: 'a study file with a broken YAML line holding the password', args: () => ['study', studyFile('s3', `name: s3\nscenarios:\n  - name: a\n    target: { address: '127.0.0.1:1', pass: "${SECRET}\n`)] },
  {
    what: "a study whose command target starts the server with --requirepass: its progress, CSVs, Markdown and HTML",
    args: () => [
      'study',
      studyFile('s4', `name: s4\nrounds: 1\nmodes: [set]\ndefaults: { requests: 200 }\nscenarios:\n  - name: a\n    target: { command: "redis-server --port {port} --bind 127.0.0.1 --save '' --requirepass '${SECRET}'", pass: '${SECRET}' }\n`),
      '--out',
      file('s4-out'),
    ],
    succeeds: true,
  },
];

describe('the password shows in no output of a usage error, a parse error or merge', () => {
  it.each(USAGE_CASES)('$what', async ({ args, env, succeeds }) => {
    const run = await runCli(args(), 30_000, { ...process.env, ...env });
    if (succeeds) expect(run.code, run.stderr).toBe(0);
    else expect(run.code, run.stderr).toBe(2);
    expect(`${run.stdout}${run.stderr}`, 'says something').not.toBe('');
    expectNoLeak(run, args().join(' '));
  });
});

describe.each(engines())('engine %s: the password shows in no output of a run', (engine) => {
  const RUN_CASES: { what: string; args: () => string[]; env?: Record<string, string> }[] = [
    { what: 'the server refuses AUTH quoting the password (-a)', args: () => ['-p', String(refusingPort), '-a', SECRET] },
    { what: 'the server refuses HELLO 3 quoting the password (REDISCLI_AUTH)', args: () => ['-p', String(refusingPort), '-3'], env: { REDISCLI_AUTH: SECRET } },
    { what: 'the server refuses AUTH quoting the password (--uri)', args: () => ['-u', `redis://bench:${encodeURIComponent(SECRET)}@127.0.0.1:${refusingPort}`] },
    { what: 'connection refused (--uri)', args: () => ['-u', `redis://bench:${encodeURIComponent(SECRET)}@127.0.0.1:${closedPort}`] },
    {
      what: 'error replies quoting the password: human output, --html, --hdr-log, the series',
      args: () => ['-p', String(port), '-a', SECRET, '--mode', 'mixed', '--interval', '50ms', '--html', file(`${engine}-run.html`), '--hdr-log', file(`${engine}-run`)],
    },
    { what: 'error replies quoting the password: --json', args: () => ['-p', String(port), '--mode', 'mixed', '--json'], env: { REDISCLI_AUTH: SECRET } },
    {
      what: '-a bundled with switches (-3qa PW, -qaPW): --json-file and --html',
      args: () => ['-p', String(port), '-3qa', SECRET, '--mode', 'mixed', '--json-file', file(`${engine}-bundled.json`), '--html', file(`${engine}-bundled.html`)],
    },
    { what: '-qaPW: --json-file', args: () => ['-p', String(port), `-qa${SECRET}`, '--mode', 'mixed', '--json-file', file(`${engine}-bundled2.json`)] },
  ];
  it.each(RUN_CASES)('$what', async ({ args, env }) => {
    const run = await runCli(['--engine', engine, ...SMALL, ...args()], 30_000, { ...process.env, ...env });
    expect(run.code, run.stderr).not.toBe(0);
    expectNoLeak(run, args().join(' '));
  });
});

describe('a study target that fails quoting its password (redis-server prints a bad requirepass line whole)', () => {
  it('keeps it out of the Markdown, the HTML, the CSVs and the kept server log', async () => {
    const study = studyFile(
      's5',
      `name: s5\nrounds: 1\nmodes: [set]\ndefaults: { requests: 200, timeout: 2s }\nscenarios:\n  - name: bad\n    target: { redis: none, args: ['--requirepass', '${SECRET}', 'extra'], pass: '${SECRET}' }\n`,
    );
    const out = file('s5-out');
    const run = await runCli(['study', study, '--out', out], 60_000);
    expect(run.code, run.stderr).not.toBe(0);
    // The failure is reported with the server's own words, and the log is kept: there is something to leak.
    const kept = readdirSync(out);
    expect(kept.filter((f) => f.endsWith('_bad.log')), kept.join(' ')).toHaveLength(1);
    expect(readFileSync(path.join(out, kept.find((f) => f.endsWith('.md'))!), 'utf8')).toMatch(/requirepass/);
    expectNoLeak(run, 'study s5');
  });
});

/** Nothing listens on port 1 here; a freed port could be another test file's server by the time it is used. */
const closedPort = 1;
