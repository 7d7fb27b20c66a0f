/**
 * The sandbox each e2e file runs in (helpers/file-sandbox.ts), on which the
 * leftover checks of every other file rest now that files run side by side:
 * what this file starts is seen (a redis-server, which writes its title over
 * its environment, by its working directory; anything else by its
 * environment), and another file's processes are not. If the first half
 * failed, every "nothing left behind" check would pass without looking.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { setExtraCaAside, withExtraCa } from './helpers/extra-ca.js';
import { liveProcesses, startRedis, type RedisServer } from './helpers/servers.js';

const linux = process.platform === 'linux';
let started: ChildProcess[] = [];
let redis: RedisServer | null = null;

afterEach(async () => {
  for (const child of started) child.kill('SIGKILL');
  started = [];
  await redis?.stop();
  redis = null;
});

/** A process whose command line is unique to this test: `sleep <seconds>`. */
function sleeper(seconds: string, env: NodeJS.ProcessEnv, cwd?: string): ChildProcess {
  const child = spawn('sleep', [seconds], { env, cwd, stdio: 'ignore' });
  started.push(child);
  return child;
}

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.runIf(linux)('each e2e file in its own sandbox', () => {
  it('TMPDIR is the file\'s own directory, which everything it starts inherits', () => {
    const sandbox = process.env.RESPBENCH_TEST_SANDBOX;
    expect(sandbox).toMatch(/respbench-e2e-/);
    expect(tmpdir()).toBe(sandbox);
  });

  it('liveProcesses lists a process this file started, by its environment or its working directory', async () => {
    sleeper('41.25', process.env);
    sleeper('41.5', { PATH: process.env.PATH }, process.env.RESPBENCH_TEST_SANDBOX);
    await until(() => liveProcesses('sleep 41.25').length === 1 && liveProcesses('sleep 41.5').length === 1);
    redis = await startRedis();
    expect(liveProcesses(`redis-server 127.0.0.1:${redis.port}`)).toHaveLength(1);
  });

  it('liveProcesses does not list another file\'s process (another sandbox, elsewhere)', async () => {
    const other = sleeper('41.75', { PATH: process.env.PATH, RESPBENCH_TEST_SANDBOX: `${process.env.RESPBENCH_TEST_SANDBOX}-other`, TMPDIR: '/' }, '/');
    // It is running (ps sees it), and it is not this file's.
    await until(() => spawnSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).stdout.includes('sleep 41.75'));
    expect(other.exitCode).toBeNull();
    expect(liveProcesses('sleep 41.75')).toEqual([]);
  });

  it('the run\'s processes go without the machine\'s NODE_EXTRA_CA_CERTS (read at every Node start); npm gets it back', () => {
    const env: NodeJS.ProcessEnv = { PATH: '/bin', NODE_EXTRA_CA_CERTS: '/etc/extra.pem' };
    setExtraCaAside(env);
    expect(env.NODE_EXTRA_CA_CERTS).toBeUndefined();
    expect(withExtraCa(env)).toEqual({ PATH: '/bin', NODE_EXTRA_CA_CERTS: '/etc/extra.pem' });
    // And so in this file's process, whatever the machine has.
    expect(process.env.NODE_EXTRA_CA_CERTS).toBeUndefined();
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.env.NODE_EXTRA_CA_CERTS))'], { encoding: 'utf8' });
    expect(child.stdout).toBe('undefined');
  });
});
