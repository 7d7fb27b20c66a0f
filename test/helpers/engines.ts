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
import { inject } from 'vitest';
import { probeNativeLoads, probeUring, type EngineProbes } from './engine-probes.js';

const answers: Partial<EngineProbes> = {};

/** A probe's answer: the global setup's when it ran, else this file's own, asked once. */
function probed(name: keyof EngineProbes, probe: () => boolean): boolean {
  if (answers[name] === undefined) answers[name] = inject(name) ?? probe();
  return answers[name];
}

/** Whether the native engine is required (RESPBENCH_REQUIRE_NATIVE=1). */
export function nativeRequired(): boolean {
  return process.env.RESPBENCH_REQUIRE_NATIVE === '1';
}

/** Throws when the native engine is required and does not load; `why` says what did not load. */
export function requireNativeIfAsked(loads: boolean, why: string): void {
  if (!loads && nativeRequired()) throw new Error(`the native engine does not load (${why}), and RESPBENCH_REQUIRE_NATIVE=1`);
}

/**
 * Whether the CLI runs the native engine here: the suite's global setup
 * (helpers/engine-probes.ts) asked once for the whole run; a file run
 * without that setup asks itself, once.
 */
function nativeLoads(): boolean {
  return probed('nativeLoads', probeNativeLoads);
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

/** Whether `--io uring` runs here (the kernel and sandbox allow io_uring, and RESPBENCH_IO_URING_REFUSE is not set); asked as nativeLoads() is. */
export function uringWorks(): boolean {
  return probed('uringWorks', probeUring);
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
