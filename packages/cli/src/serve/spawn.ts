/**
 * The one way the demo server is started for someone else: `respbench serve
 * --port 0 --exit-with-stdin` in a child process, for `--embedded` runs and
 * `{ embedded: true }` study targets. It picks its own free port and says
 * which on stdout (no race for a port picked beforehand); it runs in its own
 * process group, so a Ctrl-C at the terminal reaches respbench, which stops
 * it in order; and it ends with its stdin, a pipe from respbench, so it
 * cannot outlive a respbench that was killed.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

export interface EmbeddedServer {
  port: number;
  /** SIGTERM, then SIGKILL if it has not exited within 5 s; resolves once it is gone. */
  stop(): Promise<void>;
  /** SIGKILL now (a second Ctrl-C). */
  kill(): void;
  /** Why the server is gone, if it exited by itself. */
  exitReason(): string | null;
}

/**
 * The argv that runs respbench itself: `node bundle/bin.js` from the bundle
 * (this module is then part of bundle/cli.js,
 * beside bin.js), `node dist/bin.js` from the
 * compiled modules (this one is dist/serve/spawn.js).
 */
export function respbenchArgv(): string[] {
  const beside = new URL('./bin.js', import.meta.url);
  return [process.execPath, fileURLToPath(existsSync(fileURLToPath(beside)) ? beside : new URL('../bin.js', import.meta.url))];
}

/** Starts the demo server and resolves with its port once it listens; `signal` abandons the start. */
export function spawnEmbedded(signal?: AbortSignal): Promise<EmbeddedServer> {
  const [node, ...args] = respbenchArgv();
  const child = spawn(node, [...args, 'serve', '--port', '0', '--exit-with-stdin'], { stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  let exitReason: string | null = null;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, sig) => {
      exitReason = sig ? `killed by ${sig}` : `exited with status ${code}`;
      resolve();
    });
  });
  const gone = () => exitReason !== null;
  const kill = () => {
    if (!gone()) child.kill('SIGKILL');
  };
  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      if (gone()) return;
      child.kill('SIGTERM');
      const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), STOP_TIMEOUT_MS).unref());
      if ((await Promise.race([exited.then(() => 'exited' as const), timer])) === 'timeout') {
        kill();
        await exited;
      }
    })();
    return stopping;
  };
  return new Promise((resolve, reject) => {
    let text = '';
    const fail = (message: string) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      kill();
      reject(new Error(message));
    };
    const timer = setTimeout(() => fail(`the embedded server did not start within ${START_TIMEOUT_MS / 1000} s`), START_TIMEOUT_MS);
    const onAbort = () => fail('interrupted while the embedded server was starting');
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    child.once('error', (err) => fail(`the embedded server could not start: ${err.message}`));
    void exited.then(() => fail(`the embedded server ${exitReason} before listening`));
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const m = /listening on .+:(\d+)\n/.exec(text);
      if (!m) return;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      child.stdout!.removeAllListeners('data');
      child.stdout!.resume();
      resolve({ port: Number(m[1]), stop, kill, exitReason: () => exitReason });
    });
  });
}
