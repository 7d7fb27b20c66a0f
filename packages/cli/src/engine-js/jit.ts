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
 * plain requests a second on this machine's core (closed loop at P1 c50:
 * 77,000/s against 180,000/s optimised), fewer when each request is more
 * work (--multi-key-get 30: 22,000/s asked 39,000). So above
 * UNOPTIMISED_RATE_LIMIT the compilers stay on, and under it a run that
 * falls behind its schedule turns them back on (watchSchedule) and says so.
 * A process started with its own compiler flags (node --no-opt, --jitless,
 * NODE_OPTIONS) is left as it was started. The native engine needs none of
 * this: it has no JIT.
 */
import { setFlagsFromString } from 'node:v8';
import type { LatencyHistogram } from './histogram.js';

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
 * turns them back on once no other paced run of the process is still going
 * (null: nothing was turned off).
 * Code optimised before stays optimised; code that gets hot during the run
 * is optimised after it, if it is still hot.
 */
export function optimisingCompilersOffFor(ratePerSec: number, setFlags: SetV8Flags = setFlagsFromString, chosenAtStart = compilersChosenAtStart()): (() => void) | null {
  if (!(ratePerSec > 0 && ratePerSec <= UNOPTIMISED_RATE_LIMIT) || chosenAtStart) return null;
  const flags = OPTIMISING_COMPILERS;
  if (pacedRuns++ === 0) setFlags(flags.map((f) => `--no-${f}`).join(' '));
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    if (--pacedRuns === 0) setFlags(flags.map((f) => `--${f}`).join(' '));
  };
}

/** How often the schedule's lateness is looked at, and how late a request may go out before it counts as behind. */
const WATCH_EVERY_MS = 250;
const BEHIND_NS = 1_000_000;

/**
 * Under a paced run with the compilers off: every 250 ms, the share of the
 * requests sent since the last look that went out 1 ms or more late; when
 * it is over a tenth twice running, the unoptimised engine cannot keep this
 * schedule (measured: plain SETs at 20,000/s and 39,000/s kept under 1%;
 * 30-key MGETs at 20,000/s, p99 8-25 ms late against 2 ms optimised), so the
 * compilers come back on (`backOn`) and `said` is told, once. Returns the
 * function that stops the watch.
 */
export function watchSchedule(lag: LatencyHistogram, backOn: () => void, said: (line: string) => void): () => void {
  let seen = lag.total;
  let late = lag.countAtLeast(BEHIND_NS);
  let behindLooks = 0;
  const timer = setInterval(() => {
    const [total, lateNow] = [lag.total, lag.countAtLeast(BEHIND_NS)];
    const [sent, sentLate] = [total - seen, lateNow - late];
    [seen, late] = [total, lateNow];
    behindLooks = sent > 0 && sentLate * 10 > sent ? behindLooks + 1 : 0;
    if (behindLooks < 2) return;
    clearInterval(timer);
    backOn();
    said("the JS engine fell behind the --rate schedule with V8's optimising compilers off (over a tenth of its requests 1 ms late or more): they are on again for the rest of the run");
  }, WATCH_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
