/**
 * engine-native.ts through the real addon: the result has RawResult's exact
 * field names (null, not undefined, for absent values), progress reaches
 * onProgress, and an AbortSignal interrupts a run. The server is a few lines
 * of node:net: it answers +OK to every command (one `*` per command: keys
 * and values never contain one) or, stalling, nothing.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadNativeEngine } from '../src/engine-native.js';
import type { Plan } from '../src/engine-js/plan.js';
import type { ProgressSnapshot } from '../src/engine-js/progress.js';
import { nativeRequired } from '../../../test/helpers/engines.js';

const loaded = loadNativeEngine();

const servers: net.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

function okServer(stall = false): Promise<number> {
  const server = net.createServer((socket) => {
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk) => {
      if (stall) return;
      let n = 0;
      for (const b of chunk) if (b === 0x2a) n++;
      if (n > 0) socket.write(Buffer.from('+OK\r\n'.repeat(n)));
    });
  });
  servers.push(server);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
}

function plan(port: number, more: Partial<Plan> = {}): Plan {
  return {
    host: '127.0.0.1',
    port,
    socket: null,
    tls: null,
    connections: 2,
    pipeline: 32,
    requests: 50_000,
    mode: 'set',
    keyspace: 1000,
    keyPattern: 'uniform',
    keyStddev: null,
    zipfExponent: 0.99,
    valueSizeMin: 32,
    valueSizeMax: 32,
    setRatio: 50,
    setCmd: 'SET',
    getCmd: 'GET',
    keyPrefix: 'bench:key:',
    literalCommands: false,
    seed: 1,
    verifyGet: false,
    preload: true,
    threads: 2,
    timeoutMs: 0,
    durationMs: 0,
    warmupMs: 0,
    rate: 0,
    user: null,
    password: null,
    dbnum: null,
    resp3: false,
    ...more,
  };
}

const RAW_RESULT_FIELDS = [
  'engine', 'requests', 'sets', 'gets', 'ok', 'errors', 'misses', 'mismatches', 'lostWrites', 'pushes', 'bytesOut', 'bytesIn', 'elapsedNs',
  'histogram', 'setHistogram', 'getHistogram', 'preloadRequests', 'preloadElapsedNs', 'warmupRequests', 'warmupElapsedNs', 'serviceHistogram',
  'scheduleLagHistogram', 'eventLoopDelay', 'firstError', 'firstMismatch', 'failure', 'intervals', 'startedUnixMs',
].sort();

describe.skipIf(!loaded.engine)('native engine adapter', () => {
  it('returns a RawResult with exactly its field names, absent values as null', async () => {
    const port = await okServer();
    const r = await loaded.engine!.run(plan(port));
    expect(Object.keys(r).sort()).toEqual(RAW_RESULT_FIELDS);
    expect(r).toMatchObject({ engine: 'native', requests: 50_000, sets: 50_000, ok: 50_000, errors: 0, failure: null, firstError: null, firstMismatch: null, serviceHistogram: null, scheduleLagHistogram: null, eventLoopDelay: null });
    expect(r.histogram.unit).toBe('ns');
    expect(r.histogram.buckets.reduce((n, [, c]) => n + c, 0)).toBe(50_000);
  });

  it('reports progress while the run goes on', async () => {
    const port = await okServer();
    const seen: ProgressSnapshot[] = [];
    const r = await loaded.engine!.run(plan(port, { requests: 3_000_000, pipeline: 64 }), { onProgress: (p) => seen.push(p) });
    expect(r.requests).toBe(3_000_000);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((p) => p.phase === 'run' && p.total === 3_000_000 && p.done <= 3_000_000)).toBe(true);
    // Long enough to see progress (a second or more); a busy machine may take several.
  }, 30_000);

  it('an AbortSignal interrupts a run that gets no replies', async () => {
    const port = await okServer(true);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = Date.now();
    const r = await loaded.engine!.run(plan(port), { signal: controller.signal });
    expect(r.failure).toEqual({ kind: 'interrupted', message: 'interrupted' });
    expect(r.requests).toBe(0);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('a bad plan is refused before any connection', async () => {
    await expect(loaded.engine!.run(plan(1, { setCmd: 'SET __key__ __nope__' }))).rejects.toThrow(/__nope__/);
  });
});

/**
 * Whether the built .node file is where @respbench/native's generated loader
 * looks for it: first beside its index.js (a local build puts it there),
 * then in the platform package, resolved from @respbench/native (an install).
 */
function platformBinaryInstalled(): boolean {
  const triple = `${process.platform}-${process.arch}-gnu`;
  let nativeIndex: string;
  try {
    nativeIndex = createRequire(import.meta.url).resolve('@respbench/native');
  } catch {
    return false;
  }
  if (existsSync(path.join(path.dirname(nativeIndex), `respbench.${triple}.node`))) return true;
  try {
    createRequire(nativeIndex).resolve(`@respbench/native-${triple}`);
    return true;
  } catch {
    return false;
  }
}

describe('loading', () => {
  // CI builds the addon: there a native engine that does not load must fail, not skip the adapter's tests.
  it.runIf(nativeRequired())('loads, as RESPBENCH_REQUIRE_NATIVE=1 asks', () => {
    expect(loaded.reason).toBeNull();
  });

  it('loads the addon exactly when its platform binary is installed, and otherwise says so in one line', () => {
    if (platformBinaryInstalled()) {
      expect(loaded.reason).toBeNull();
      expect(loaded.engine?.name).toBe('native');
    } else {
      expect(loaded.engine).toBeNull();
      expect(loaded.reason).toBe(
        `no native binary for ${process.platform}-${process.arch} (@respbench/native-${process.platform}-${process.arch}-* is not installed or not built; building needs cargo)`,
      );
    }
  });
});

describe('a window that cannot fit', () => {
  it('is refused before any connection, by both engines with the same text', async () => {
    const { jsEngine } = await import('../src/engine-js/index.js');
    const huge = plan(1, { pipeline: 65536, valueSizeMin: 64 << 20, valueSizeMax: 64 << 20 });
    const text = 'pipeline × valueSizeMax is 65536 × 67108864 = 4398046511104 bytes in flight per connection, more than windowBytes 1073741824 (1 GiB)';
    await expect(jsEngine.run(huge)).rejects.toThrow(text);
    if (loaded.engine) await expect(loaded.engine.run(huge)).rejects.toThrow(text);
  });
});
