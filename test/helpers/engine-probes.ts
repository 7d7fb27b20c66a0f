/**
 * The two questions helpers/engines.ts asks the built CLI (does the native
 * engine load here, does `--io uring` run here), asked once per suite run by
 * vitest's global setup instead of once per test file: each answer costs a
 * CLI start, and some forty files ask. helpers/engines.ts reads the answers
 * with inject(), and asks itself when a file runs without this setup.
 */
import { spawnSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';
import { CLI } from './paths.js';

export interface EngineProbes {
  nativeLoads: boolean;
  uringWorks: boolean;
}

declare module 'vitest' {
  /** Absent when a file runs without the global setup. */
  export interface ProvidedContext {
    nativeLoads?: boolean;
    uringWorks?: boolean;
  }
}

/** Port 1 refuses at once: the probe only asks whether the engine loads, which it did when the (failed) run's result names it. */
export function probeNativeLoads(): boolean {
  const r = spawnSync(process.execPath, [CLI, '--engine', 'native', '--port', '1', '--requests', '1', '--timeout', '2s', '--json'], { encoding: 'utf8' });
  try {
    return !/cannot be loaded/.test(r.stderr) && JSON.parse(r.stdout).engine === 'native';
  } catch {
    return false;
  }
}

/** `--io uring` refused (kernel, sandbox, RESPBENCH_IO_URING_REFUSE) says so on stderr before any connection. */
export function probeUring(): boolean {
  const r = spawnSync(process.execPath, [CLI, '--engine', 'native', '--io', 'uring', '--port', '1', '--requests', '1', '--timeout', '2s', '--json'], { encoding: 'utf8' });
  return !/--io uring:/.test(r.stderr);
}

/** vitest globalSetup: both answers, provided to every test file. */
export default function setup(project: TestProject): void {
  project.provide('nativeLoads', probeNativeLoads());
  project.provide('uringWorks', probeUring());
}
