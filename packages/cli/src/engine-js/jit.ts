/**
 * V8's optimising compilers, off while the JS engine keeps a --rate
 * schedule it can keep without them.
 *
 * Why: TurboFan (and Maglev, where V8 turns it on) compiles hot code on V8's
 * own background threads, one job after another through a run (74 compiles
 * in a 3 s run at 5,000/s, still going at its end). On a 2-core machine a
 * compile holds a core for milliseconds, and the kernel's scheduler lets a
 * running thread finish its slice before a woken one gets the core, so the
 * Pacer's alarm thread or the event loop, woken at a due time, waited behind
 * it: the schedule lag's p99 was 1.5-1.8 ms at --rate 20000 -c 4 on a quiet
 * machine (issue 20 item 14). With the optimising compilers off, nothing
 * compiles on those threads, and the p99 was 250-330 µs in the same
 * alternating rounds (docs/reliability.md). Sparkplug, V8's baseline
 * compiler, stays on: it compiles on the event loop's own thread, fast, and
 * keeps the engine at about 2.4 times the interpreter's speed.
 *
 * The cost is throughput: unoptimised, the engine keeps about 60,000
 * requests a second on this machine's core (closed loop at P1 c50: 77,000/s
 * against 180,000/s optimised). So above UNOPTIMISED_RATE_LIMIT the
 * compilers stay on and the run's `client lag:` line says what that costs.
 * A process started with its own compiler flags (node --no-opt, --jitless,
 * NODE_OPTIONS) is left as it was started. The native engine needs none of
 * this: it has no JIT.
 */
import { setFlagsFromString } from 'node:v8';

/** The highest --rate (requests a second, this process's share) run with the optimising compilers off. */
export const UNOPTIMISED_RATE_LIMIT = 40_000;

/** V8 turned Maglev on by default in 11.7 (Node 22); Node 20's V8 11.3 has it off. */
const MAGLEV_BY_DEFAULT = Number(process.versions.v8.split('.')[0]) * 100 + Number(process.versions.v8.split('.')[1]) >= 1107;

/** The optimising compilers V8 runs by default here. */
export const OPTIMISING_COMPILERS: readonly string[] = MAGLEV_BY_DEFAULT ? ['turbofan', 'maglev'] : ['turbofan'];

/**
 * Flags a user may have given node that say how it compiles (V8 spells a
 * flag with `-` or `_`, and its negation `--no-x` or `--nox`): then it is
 * theirs to say.
 */
const COMPILER_FLAG = /^--(no-?)?(opt|turbofan|maglev|sparkplug|jitless|always-turbofan|always-opt|max-opt|lite-mode)(=|$)/;

/** Whether this process's compilers were chosen by whoever started node. */
export function compilersChosenAtStart(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): boolean {
  return [...execArgv, ...nodeOptions.split(/\s+/)].some((flag) => COMPILER_FLAG.test(flag.replace(/_/g, '-')));
}

/** Paced runs in progress in this process: the compilers come back on when the last one ends. */
let pacedRuns = 0;

/** What a run asks of V8 (a fake in unit tests). */
export type SetV8Flags = (flags: string) => void;

/**
 * Turns the optimising compilers off when a run paces `ratePerSec` requests
 * a second (0: a closed loop) at or under the limit; the returned function
 * turns them back on once no other paced run of the process is still going.
 * Code optimised before stays optimised; code that gets hot during the run
 * is optimised after it, if it is still hot.
 */
export function optimisingCompilersOffFor(ratePerSec: number, setFlags: SetV8Flags = setFlagsFromString, chosenAtStart = compilersChosenAtStart()): () => void {
  if (!(ratePerSec > 0 && ratePerSec <= UNOPTIMISED_RATE_LIMIT) || chosenAtStart) return () => {};
  const flags = OPTIMISING_COMPILERS;
  if (pacedRuns++ === 0) setFlags(flags.map((f) => `--no-${f}`).join(' '));
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    if (--pacedRuns === 0) setFlags(flags.map((f) => `--${f}`).join(' '));
  };
}
