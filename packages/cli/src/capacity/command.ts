/**
 * `respbench capacity --slo 'p99<=1ms'`: how much load the server carries
 * while the SLO holds. The run flags say the workload (as for a run); the
 * search (driver.ts) sets the rate and the length of each step.
 */
import { Command } from 'commander';
import type { CliIo } from '../io.js';
import { addRunOptions } from '../run-options.js';
import { addTelemetryOptions, runWithTelemetry, type TelemetryFlags } from '../metrics/session.js';
import type { CapacityFlags } from './settings.js';

// The search and its reports (action.ts) are loaded when a capacity search
// runs: a plain run does not pay for them at start-up.

const CAPACITY_HELP = `
Examples:
  respbench capacity --slo 'p99<=1ms' --port 6379
  respbench capacity --slo 'p99<=1ms,p99.9<=5ms,errors<=0.1%' --port 6379 --mode get -c 16 -P 4
  respbench capacity --slo 'p99<=20ms' --port 8888 --step-duration 5s --json > curve.json

Each step runs the workload open loop (--rate) for --step-duration after
--warmup (default 1s), latency counted from when each request was due, so a
server that falls behind cannot hide it. A step meets the SLO when every
percentile is within its bound, the share of error replies is within
errors<= (default: none), and the achieved rate is at least 95% of the
target. The rates ramp up x2 from --start-rate (default: 10% of what a
short closed-loop probe achieved), then bisect between the highest rate
that met the SLO and the lowest that did not, until the two are within
--precision. A step that kept its rate but broke the SLO runs once more
before it counts (--no-retry: at once). A step that fails says whether the
client or the server held it back (client CPU, event-loop delay, schedule
lag, service time).

A step whose client lag alone (schedule lag or event-loop delay p99) broke
the SLO measured the client or the machine, not the server: it runs again,
and if the lowest rate that failed still rests on such a step, no capacity
is printed.

Exit status: 0 the search found a capacity; 5 no rate met the SLO
(capacity: none), a gate missed as with --slo on a run; 1 a step could not
run, or the capacity rests on steps the client's own lag broke; 2 bad
usage; 130/143/129 interrupted (the bracket so far is printed).
`;

export function registerCapacityCommand(program: Command, io: CliIo): void {
  const cmd = program
    .command('capacity')
    .description('the highest rate the server carries within a latency SLO: open-loop steps, ramped then bisected')
    .option('--slo <conditions>', "latency percentiles and optionally errors, e.g. 'p99<=1ms,p99.9<=5ms,errors<=0.1%'")
    .option('--start-rate <n>', 'the first step, requests per second (default: 10% of a short closed-loop probe)')
    .option('--step-duration <duration>', 'measured length of each step', '10s')
    .option('--precision <percent>', 'stop when the lowest failed rate is within this of the highest met one', '5%')
    .option('--no-retry', 'believe a step that kept its rate but broke the SLO at once (default: run it once more, so one pause of the machine does not set the capacity)')
    .option('--json', 'print the search as JSON on one line (--pretty indents it): every step (the curve), the bracket, the capacity, the limit; compare reads it', false)
    .option('--pretty', 'with --json: indented', false)
    .option('--html <file>', 'write an HTML report: latency against throughput, the SLO, the capacity, the steps')
    .option('-q, --quiet', 'no header or steps on stderr with --json', false);
  addRunOptions(cmd);
  addTelemetryOptions(cmd);
  cmd.addHelpText('after', CAPACITY_HELP).action(async (opts: CapacityFlags & TelemetryFlags, c: Command) => {
    const { capacityCommand } = await import('./action.js');
    await runWithTelemetry(opts, io, opts.quiet, () => capacityCommand(opts, io, (name) => c.getOptionValueSource(name) === 'cli'));
  });
}
