/**
 * SIGINT, SIGTERM and SIGHUP (the terminal or the ssh session closed) while
 * a run or a study is under way. The rule: a signal never loses the result.
 * The first one stops the work in order; any further ones are counted, not
 * obeyed, until the partial result is printed and the servers respbench
 * started are stopped; then the program exits 128 + the first signal's
 * number (130, 143, 129).
 *
 * `onStopSignals` is what a command uses while it works. `guardSignals`
 * (installed once by bin.ts, the real program) covers the rest of the
 * process's life: before any work starts a signal ends the program at once
 * with its status, and after the work's handler is gone (the result being
 * printed, servers being stopped) signals are ignored, so the program ends
 * by itself with the result written. Nothing here is installed by merely
 * importing the CLI (tests call `main` in-process).
 */
import { EXIT } from './exit.js';

export type StopSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';

export const STOP_SIGNALS: readonly StopSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** The exit status a signal ends the program with (128 + signal number). */
export const SIGNAL_EXIT: Record<StopSignal, number> = { SIGINT: EXIT.sigint, SIGTERM: EXIT.sigterm, SIGHUP: EXIT.sighup };

/** Handlers of onStopSignals now installed. */
let working = 0;
/** A stop handler ran its course: the result is being written and the program is about to end. */
let finishing = false;

/**
 * One Ctrl-C can arrive more than once: the terminal signals the whole
 * process group, and `pnpm run` forwards it to its script once more (and
 * turns a second one into SIGTERM). Signals this soon after the first are
 * the same request, not a second one.
 */
export const REPEAT_WINDOW_MS = 500;

/**
 * Calls `onSignal(signal, n)` on SIGINT/SIGTERM/SIGHUP until the returned
 * function is called: n is 1 for the first, then counts the later ones
 * (those within REPEAT_WINDOW_MS of the first are dropped). While it is
 * installed no signal kills the process: the handler decides.
 */
export function onStopSignals(onSignal: (signal: StopSignal, n: number) => void): () => void {
  let n = 0;
  let firstAt = 0;
  const listeners = STOP_SIGNALS.map((sig) => {
    const listener = () => {
      const now = Date.now();
      if (n === 0) firstAt = now;
      else if (now - firstAt < REPEAT_WINDOW_MS) return;
      onSignal(sig, ++n);
    };
    process.on(sig, listener);
    return [sig, listener] as const;
  });
  working++;
  let removed = false;
  return () => {
    if (removed) return;
    removed = true;
    working--;
    // From here to the end of the program a signal must not kill it half-way through its output.
    finishing = true;
    for (const [sig, listener] of listeners) process.off(sig, listener);
  };
}

/** How long a program that is finishing may take after a signal before it is made to exit. */
const FINISHING_GRACE_MS = 5_000;

/**
 * For the program's whole life (bin.ts): a signal with nobody else to handle
 * it exits with 128 + its number, or, once a command has stopped its work and
 * is writing the result, is ignored (the program is ending anyway; should it
 * hang, it exits after a few seconds).
 */
export function guardSignals(): void {
  for (const sig of STOP_SIGNALS) {
    process.on(sig, () => {
      // A command's own handler (or `serve`'s) is there: it decides.
      if (working > 0 || process.listenerCount(sig) > 1) return;
      if (finishing) {
        setTimeout(() => process.exit(process.exitCode ?? SIGNAL_EXIT[sig]), FINISHING_GRACE_MS).unref();
        return;
      }
      process.exit(SIGNAL_EXIT[sig]);
    });
  }
}
