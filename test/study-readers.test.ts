/**
 * Studies people read (issue 20 item 12): a group heading names each
 * scenario's commands when they differ; a round that did not verify shows
 * why in the Markdown and the HTML, not only on stderr; a round whose
 * connect phase took seconds is named as such. Targets: the fault server
 * (a test target) in corrupt-last-byte mode (reads return the value with
 * its last byte changed) and a RESP test server that holds its answer to
 * AUTH for 1.2 s.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFaultServer, type FaultServer } from './faults/fault-server.mjs';
import { startRespServer, type RespServer } from './helpers/resp-server.js';
import { runCli } from './helpers/servers.js';
import { studyScratch } from './helpers/study.js';

const { studyDir } = studyScratch('study-readers');
let liar: FaultServer;
let slow: RespServer;

beforeAll(async () => {
  liar = await startFaultServer({ mode: 'corrupt-last-byte' });
  slow = await startRespServer(() => '+OK\r\n', (args) => (args[0].toUpperCase() === 'AUTH' ? 1_200 : 0));
});
afterAll(async () => {
  await liar?.close();
  slow?.close();
});

it('names each scenario\'s commands, why a round did not verify, and a slow connect, in the Markdown and the HTML', async () => {
  const dir = studyDir();
  const out = path.join(dir, 'out');
  const file = path.join(dir, 'readers.yaml');
  writeFileSync(
    file,
    [
      'name: readers',
      'rounds: 1',
      'defaults: { requests: 2000, pipeline: 8, connections: 1, keyspace: 100, verifyGet: true }',
      'scenarios:',
      `  - { name: liar, modes: [get], target: { address: '127.0.0.1:${liar.port}' } }`,
      `  - { name: slowpoke, modes: [set], setCmd: RSET, getCmd: RGET, target: { address: '127.0.0.1:${slow.port}', pass: pw-slow } }`,
      '',
    ].join('\n'),
  );
  const run = await runCli(['study', file, '--out', out, '-q', '--engine', 'js'], 90_000);
  expect(run.code, run.stderr).toBe(4);
  const md = readFileSync(path.join(out, readdirSync(out).find((f) => f.endsWith('.md'))!), 'utf8');
  const html = readFileSync(path.join(out, readdirSync(out).find((f) => f.endsWith('.html'))!), 'utf8');
  for (const text of [md, html]) {
    expect(text).toMatch(/commands: liar: SET\/GET; slowpoke: RSET\/RGET/);
    expect(text).toMatch(/liar · get · round 1 did not verify: \d+ reads did not verify; first: /);
    expect(text).toMatch(/slowpoke · set · round 1: slow connect: \d+\.\d+ s to open its connections/);
  }
  // The Markdown on stdout is the file's.
  expect(run.stdout).toContain('did not verify: ');
});
