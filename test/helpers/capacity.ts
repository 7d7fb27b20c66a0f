/** What the capacity tests (capacity.test.ts, capacity-ends.test.ts) read from a search's --json. */
export interface Step {
  targetRate: number;
  achievedRate: number;
  latencyUs: { p50: number; p99: number; p999: number };
  met: boolean;
  retried: boolean;
  limit: 'client' | 'server' | null;
  limitReason: string | null;
}

/** Steps of 1 s instead of the default 10 s, with a short warmup: the files' searches stay within half a minute. */
export const FAST_STEPS = ['--step-duration', '1s', '--warmup', '300ms'];

/** The steps in one line, for a failed assertion's message. */
export function stepTable(steps: Step[]): string {
  return steps.map((s) => `${s.targetRate}/s: achieved ${s.achievedRate}, p99 ${s.latencyUs.p99} us, ${s.met ? 'met' : 'failed'}${s.retried ? ' (ran again)' : ''}${s.limit ? ` (limit: ${s.limit})` : ''}`).join('; ');
}
