/** Loading a study file: the spec it gives, and one line with file and line for each mistake. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { studyRunFlags } from '../src/study/flags.js';
import { DEFAULT_MODES, loadStudyFile } from '../src/study/spec.js';
import { describeTarget } from '../src/study/target-spec.js';
import { UsageError } from '../src/usage-error.js';

const dir = mkdtempSync(path.join(tmpdir(), 'respbench-spec-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const runFlags = studyRunFlags();

function load(name: string, text: string) {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return loadStudyFile(file, runFlags);
}

function errorOf(name: string, text: string): string {
  try {
    load(name, text);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    const message = (err as Error).message;
    expect(message).not.toContain('\n');
    return message.slice(dir.length + 1);
  }
  throw new Error('expected a UsageError');
}

describe('loadStudyFile', () => {
  it('reads groups, flags at each level and their precedence, targets and the baseline', () => {
    const spec = load(
      'full.yaml',
      `name: full
rounds: 2
modes: [set]
baseline: b
defaults: { requests: 1000, value-size: 16, verifyGet: true }
groups:
  - title: G
    pipeline: 8
    modes: [get, mixed]
    target: { address: '[::1]:6380' }
    scenarios:
      - { name: a, tags: [x, y], pipeline: 4 }
      - { name: b, tags: solo, modes: set, target: { redis: aof_always, args: [--maxmemory, 1gb] }, preload: false }
  - title: H
    scenarios:
      - { name: c, target: { command: "srv --port {port}", readyTimeout: 2s, env: { A: 1 } } }
      - { name: d, target: { host: '[::1]', port: 7000 } }
      - { name: e, target: { embedded: true } }
`,
    );
    expect(spec).toMatchObject({ name: 'full', rounds: 2, modes: ['set'], baseline: 'b', defaults: { requests: '1000', valueSize: '16', verifyGet: true } });
    const [g, h] = spec.groups;
    expect(g.title).toBe('G');
    expect(g.scenarios.map((s) => [s.name, s.tags, s.modes, s.flags])).toEqual([
      ['a', ['x', 'y'], ['get', 'mixed'], { pipeline: '4' }],
      ['b', ['solo'], ['set'], { pipeline: '8', preload: false }],
    ]);
    expect(g.scenarios[0].target).toEqual({ kind: 'address', host: '::1', port: 6380 });
    expect(g.scenarios[1].target).toMatchObject({ kind: 'redis', preset: 'aof_always', binary: 'redis-server', args: ['--maxmemory', '1gb'], readyTimeoutMs: 10_000 });
    expect(h.scenarios[0].target).toEqual({
      kind: 'command',
      command: 'srv --port {port}',
      host: '127.0.0.1',
      port: null,
      cwd: dir,
      env: { A: '1' },
      readyTimeoutMs: 2000,
      stopTimeoutMs: 5000,
    });
    expect(h.scenarios[1].target).toEqual({ kind: 'address', host: '::1', port: 7000 });
    expect(h.scenarios.map((s) => describeTarget(s.target))).toEqual(['command: srv --port {port}', '::1:7000', 'embedded demo server']);
    expect(spec.lineOf(g.scenarios[0].flagPaths.pipeline)).toBe(12);
  });

  it('defaults: the file name, 3 rounds, set and get; top-level scenarios are one group', () => {
    const spec = load('my study.json', '{ "scenarios": [ { "name": "a", "target": { "embedded": true } } ] }');
    expect(spec).toMatchObject({ name: 'my_study', rounds: 3, modes: [...DEFAULT_MODES] });
    expect(spec.groups).toHaveLength(1);
    expect(spec.groups[0].title).toBe('my_study');
    expect(spec.groups[0].scenarios[0].modes).toEqual(['set', 'get']);
  });

  const BAD: [string, string, string][] = [
    ['a.yaml', '- just a list\n', 'a.yaml:1: a study file is a map with groups (or scenarios); the format: see the README'],
    ['b.yaml', 'scenarios:\n  - name: a\n    target: { embedded: true }\n    reqests: 1\n', 'b.yaml:4: unknown key "reqests" in scenario scenarios[0] (did you mean "requests"?'],
    ['c.yaml', 'rounds: 0\nscenarios: [ { name: a, target: { embedded: true } } ]\n', 'c.yaml:1: rounds must be a whole number from 1 to 1000 '],
    ['d.yaml', 'modes: [set, write]\nscenarios: [ { name: a, target: { embedded: true } } ]\n', 'd.yaml:1: modes: unknown mode "write" (known: set, get, mixed)'],
    ['e.yaml', 'scenarios:\n  - { name: a, target: { embedded: true } }\n  - { name: a, target: { embedded: true } }\n', 'e.yaml:3: scenario name "a" is used twice'],
    ['f.yaml', 'scenarios:\n  - { name: a, target: { address: "localhost" } }\n', 'f.yaml:2: address must be HOST:PORT'],
    ['g.yaml', 'scenarios:\n  - { name: a, target: { port: 0 } }\n', 'g.yaml:2: target port must be a whole number from 1 to 65535'],
    ['h.yaml', 'scenarios:\n  - { name: a, target: { command: "srv" } }\n', 'h.yaml:2: a command target needs a port'],
    ['i.yaml', 'scenarios:\n  - { name: a, mode: set, target: { embedded: true } }\n', 'i.yaml:2: mode cannot be set in a study file (use modes: [set, get])'],
    ['j.yaml', 'scenarios:\n  - { name: a, host: x, target: { embedded: true } }\n', 'j.yaml:2: host cannot be set in a study file'],
    ['k.yaml', 'baseline: z\nscenarios:\n  - { name: a, target: { embedded: true } }\n', 'k.yaml:1: baseline "z" is not a scenario of this study (scenarios: a)'],
    ['l.yaml', 'groups: []\n', 'l.yaml:1: groups must be a non-empty list'],
    ['m.yaml', 'name: x\n', 'm.yaml:1: the study has no groups (or scenarios): nothing to run'],
    ['n.yaml', 'scenarios:\n  - { name: a }\n', 'n.yaml:2: scenario "a": target is missing'],
    ['o.yaml', 'scenarios:\n  - { name: a, verifyGet: 1, target: { embedded: true } }\n', 'o.yaml:2: verifyGet must be true or false (got 1)'],
    ['p.yaml', 'scenarios:\n  - { name: a, target: { redis: none, readyTimeout: 0 } }\n', 'p.yaml:2: target readyTimeout must be a duration'],
    ['q.json', '{\n  "scenarios": [ { "name": "a", } ]\n}\n', 'q.json:2: invalid JSON'],
    ['r.yaml', 'name: "a b"\nscenarios: [ { name: a, target: { embedded: true } } ]\n', 'r.yaml:1: name must be letters, digits'],
  ];

  it.each(BAD)('%s: one line with the file and line', (name, text, expected) => {
    expect(errorOf(name, text)).toContain(expected);
  });

  it('a file that is not there', () => {
    expect(() => loadStudyFile(path.join(dir, 'none.yaml'), runFlags)).toThrow(/none.yaml: cannot read the study file \(no such file\)/);
  });
});

describe('transport target keys', () => {
  it('reads tls on address targets, socket targets, and tls/socket on redis targets', () => {
    const spec = load(
      'transport.yaml',
      `name: t
groups:
  - title: G
    scenarios:
      - { name: a, target: { address: '10.0.0.1:6380', tls: { cacert: ca.pem, cert: /abs/c.pem, key: k.pem, sni: db.example, insecure: false, ciphersuites: TLS_AES_128_GCM_SHA256 } } }
      - { name: b, target: { socket: run/redis.sock } }
      - { name: c, target: { redis: none, tls: true } }
      - { name: d, target: { redis: none, socket: true } }
      - { name: e, target: { host: db, port: 6380, tls: true } }
`,
    );
    const t = spec.groups[0].scenarios.map((s) => s.target);
    expect(t[0]).toEqual({
      kind: 'address', host: '10.0.0.1', port: 6380,
      tls: { cacert: path.join(dir, 'ca.pem'), cert: '/abs/c.pem', key: path.join(dir, 'k.pem'), sni: 'db.example', insecure: false, ciphersuites: 'TLS_AES_128_GCM_SHA256' },
    });
    expect(t[1]).toEqual({ kind: 'address', host: '127.0.0.1', port: 6379, socket: path.join(dir, 'run/redis.sock') });
    expect(t[2]).toMatchObject({ kind: 'redis', preset: 'none', tls: true });
    expect(t[3]).toMatchObject({ kind: 'redis', preset: 'none', socket: true });
    expect(t[4]).toEqual({ kind: 'address', host: 'db', port: 6380, tls: {} });
    expect(t.map(describeTarget)).toEqual(['10.0.0.1:6380 (TLS)', `unix socket ${path.join(dir, 'run/redis.sock')}`, 'redis preset none (TLS)', 'redis preset none (unix socket)', 'db:6380 (TLS)']);
  });

  it('reads a running cluster as a seed: cluster: true on an address, or a redis+cluster:// uri', () => {
    const spec = load(
      'cluster-seed.yaml',
      `name: t
groups:
  - title: G
    scenarios:
      - { name: a, target: { address: '10.0.0.5:7000', cluster: true, pass: pw } }
      - { name: b, target: { uri: 'redis+cluster://bench:pw@10.0.0.6:7001' } }
      - { name: c, target: { address: '10.0.0.7:7002', cluster: false } }
`,
    );
    const t = spec.groups[0].scenarios.map((s) => s.target);
    expect(t[0]).toMatchObject({ kind: 'address', host: '10.0.0.5', port: 7000, cluster: true });
    expect(t[1]).toMatchObject({ kind: 'address', host: '10.0.0.6', port: 7001, cluster: true, credentials: { user: 'bench', password: 'pw' } });
    expect(t[2]).not.toHaveProperty('cluster');
    expect(t.map(describeTarget)).toEqual(['cluster seed 10.0.0.5:7000', 'cluster seed 10.0.0.6:7001', '10.0.0.7:7002']);
    expect(errorOf('bad-cluster.yaml', `name: t\ngroups:\n  - title: G\n    scenarios:\n      - { name: a, target: { address: "h:1", cluster: yes } }\n`)).toBe('bad-cluster.yaml:5: cluster must be true or false (got "yes")');
  });

  it('names the key of each mistake', () => {
    const one = (target: string) => errorOf('bad-transport.yaml', `name: t\ngroups:\n  - title: G\n    scenarios:\n      - { name: a, target: ${target} }\n`);
    expect(one('{ address: "h:1", tls: { cafile: x } }')).toBe('bad-transport.yaml:5: unknown key "cafile" in tls (known: cacert, cacertdir, cert, key, insecure, sni, ciphers, ciphersuites)');
    expect(one('{ address: "h:1", tls: yes }')).toBe('bad-transport.yaml:5: tls must be true or a map with cacert, cacertdir, cert, key, insecure, sni, ciphers, ciphersuites');
    expect(one('{ socket: "" }')).toBe('bad-transport.yaml:5: socket must be the path of a unix socket');
    expect(one('{ redis: none, tls: true, socket: true }')).toBe('bad-transport.yaml:5: a redis target takes tls: true or socket: true, not both (TLS is over TCP)');
    expect(one('{ socket: /x, tls: true }')).toBe('bad-transport.yaml:5: unknown key "tls" in a socket target (known: socket, user, pass, dbnum)');
  });
});

describe('percentiles: (issue 14)', () => {
  const body = 'scenarios:\n  - { name: a, target: { embedded: true } }\n';
  it('takes a list or a comma-separated string, sorted; none when absent', () => {
    expect(load('p1.yaml', `percentiles: [99.99, 50, 99]\n${body}`).percentiles).toEqual([50, 99, 99.99]);
    expect(load('p2.yaml', `percentiles: '50,99.9'\n${body}`).percentiles).toEqual([50, 99.9]);
    expect(load('p3.yaml', body).percentiles).toBeUndefined();
  });

  it('refuses bad ones with file and line, and is study-wide, not a run flag', () => {
    expect(errorOf('p4.yaml', `name: p\npercentiles: [50, 0]\n${body}`)).toMatch(/^p4\.yaml:2: percentiles must be a comma-separated list of numbers above 0 and at most 100/);
    expect(errorOf('p5.yaml', `percentiles: [50, 50]\n${body}`)).toMatch(/^p5\.yaml:1: percentiles lists a percentile twice/);
    expect(errorOf('p6.yaml', `percentiles: { a: 1 }\n${body}`)).toMatch(/^p6\.yaml:1: percentiles must be a list of numbers/);
    expect(errorOf('p7.yaml', `defaults: { percentiles: [50] }\n${body}`)).toMatch(/^p7\.yaml:1: percentiles is set for the whole study .*: put it at the top level of the file, or give --percentiles$/);
  });
});

describe('a capacity study and a redis_cluster target', () => {
  it('loads: a capacity search paces with --rate, which --cluster takes', () => {
    const text = "mode: capacity\nslo: 'p99<=1ms'\nscenarios:\n  - name: c\n    target: { redis_cluster: { primaries: 3, replicas: 0 } }\n";
    const spec = load('capacity-cluster.yaml', text);
    expect(spec.capacity).toBeDefined();
    expect(spec.groups[0].scenarios[0].target.kind).toBe('redis_cluster');
  });
});

describe('a redis_cluster target with tls', () => {
  const text = (tls: string) => `scenarios:\n  - name: c\n    target:\n      redis_cluster: { primaries: 3, replicas: 0 }\n      tls: ${tls}\n`;

  it('tls: true makes every node TLS only, and the target says so', () => {
    const target = load('cluster-tls.yaml', text('true')).groups[0].scenarios[0].target;
    expect(target).toMatchObject({ kind: 'redis_cluster', tls: true });
    expect(describeTarget(target)).toBe('redis cluster 3 primaries × 1 (preset none) (TLS)');
    expect(load('cluster-plain.yaml', text('false')).groups[0].scenarios[0].target).not.toHaveProperty('tls');
  });

  it('tls other than true/false is refused with the file and line (the study makes the certificate)', () => {
    expect(errorOf('cluster-tls-map.yaml', text('{ cacert: ca.pem }'))).toMatch(/^cluster-tls-map\.yaml:5: tls must be true or false/);
  });
});
