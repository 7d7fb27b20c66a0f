/**
 * The one place tests choose engines: always js, and native whenever its
 * addon loads here (`pnpm install` builds it when cargo is present). With
 * RESPBENCH_REQUIRE_NATIVE=1 (CI sets it, having built the addon) a native
 * engine that does not load fails the tests that would run it, instead of
 * letting them skip it silently.
 *
 * The native engine's I/O backend (`--io`): RESPBENCH_IO=uring|epoll makes
 * every native run of the suite use that one (the CLI reads it as --io's
 * default); `ioEngines()` lists the native engine once per backend for the
 * tests that exercise the I/O path (faults, reconnect, cluster, --rate,
 * SIGINT, parity), so they run on both where io_uring works here.
 */
import { spawnSync } from 'node:child_process';
import { CLI } from './servers.js';

/** Whether the native engine is required (RESPBENCH_REQUIRE_NATIVE=1). */
export function nativeRequired(): boolean {
  return process.env.RESPBENCH_REQUIRE_NATIVE === '1';
}

/** Throws when the native engine is required and does not load; `why` says what did not load. */
export function requireNativeIfAsked(loads: boolean, why: string): void {
  if (!loads && nativeRequired()) throw new Error(`the native engine does not load (${why}), and RESPBENCH_REQUIRE_NATIVE=1`);
}

let loadsCached: boolean | null = null;

/**
 * Whether the CLI runs the native engine here. Port 1 refuses at once: the
 * probe only asks whether the engine loads, which it did when the (failed)
 * run's result names it.
 */
function nativeLoads(): boolean {
  if (loadsCached !== null) return loadsCached;
  const r = spawnSync(process.execPath, [CLI, '--engine', 'native', '--port', '1', '--requests', '1', '--timeout', '2s', '--json'], { encoding: 'utf8' });
  let loads = false;
  try {
    loads = !/cannot be loaded/.test(r.stderr) && JSON.parse(r.stdout).engine === 'native';
  } catch {
    loads = false;
  }
  loadsCached = loads;
  return loads;
}

/** The engines to run a test through: js, and native when it loads (required under RESPBENCH_REQUIRE_NATIVE=1). */
export function engines(): string[] {
  const loads = nativeLoads();
  requireNativeIfAsked(loads, 'respbench --engine native says it cannot be loaded');
  return loads ? ['js', 'native'] : ['js'];
}

/** Whether the tests that need both engines (parity, one engine against the other) run here. */
export function bothEngines(): boolean {
  return engines().includes('native');
}

let uringCached: boolean | null = null;

/** Whether `--io uring` runs here (the kernel and sandbox allow io_uring, and RESPBENCH_IO_URING_REFUSE is not set). */
export function uringWorks(): boolean {
  if (uringCached !== null) return uringCached;
  const r = spawnSync(process.execPath, [CLI, '--engine', 'native', '--io', 'uring', '--port', '1', '--requests', '1', '--timeout', '2s', '--json'], { encoding: 'utf8' });
  uringCached = !/--io uring:/.test(r.stderr);
  return uringCached;
}

/** The I/O backends the native engine runs on in tests: RESPBENCH_IO's one, else both where io_uring works here, else epoll. */
export function ioBackends(): string[] {
  const chosen = process.env.RESPBENCH_IO;
  if (chosen === 'uring' || chosen === 'epoll') return [chosen];
  return uringWorks() ? ['uring', 'epoll'] : ['epoll'];
}

/** engines() with the native engine once per I/O backend: 'js', 'native/uring', 'native/epoll' (helpers/servers.ts cliArgs). */
export function ioEngines(): string[] {
  return engines().flatMap((e) => (e === 'native' ? ioBackends().map((io) => `native/${io}`) : [e]));
}

/** The engine a result names for a test's engine name ('native/uring' ran 'native'). */
export function engineOf(name: string): string {
  return name.split('/')[0];
}
