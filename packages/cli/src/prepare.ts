/**
 * The one completion of a Plan. buildPlan (validate.ts) reads the flags;
 * here the Plan gets what the command running it adds (redis-benchmark's
 * habits for -t or a command on the line, this machine's share of a
 * multi-machine run), what the engine can run (its threads), where it runs
 * (--cpus, the embedded server) and, under --cluster, the topology. Run, the
 * suite, capacity and study finish their Plans here and nowhere else, and
 * each step returns a new Plan: none is changed once built.
 */
import type { EngineName, Plan } from './engine-js/plan.js';
import { planForCommand, withBenchmarkDefaults } from './suite.js';
import type { ClientShare } from './validate.js';

export interface Completion {
  /** The engine that runs the Plan: the JS engine runs on one thread. */
  engine: EngineName;
  /** -t or a command on the line: redis-benchmark's defaults for what the line left out (`given`), and the command. */
  benchmark?: { given: (option: string) => boolean; command: readonly string[] | null } | null;
  /** --client-index/--client-count, as checkRunCommand read them. */
  share?: ClientShare | null;
  /** --cpus, checked. */
  cpus?: number[] | null;
  /** The server the CLI started itself (--embedded): where the Plan connects instead of --host/--port. */
  server?: { host: string; port: number } | null;
}

/** Everything but the topology: no I/O, no refusal (validate.ts refused every bad combination before). */
export function completePlan(built: Plan, c: Completion): Plan {
  let plan = built;
  if (c.benchmark) {
    plan = withBenchmarkDefaults(plan, c.benchmark.given);
    if (c.benchmark.command) plan = planForCommand(plan, c.benchmark.command);
  }
  // After the defaults: each machine's share is -c connections as this machine's line says (-c 50 for -t without -c).
  if (c.share) plan = { ...plan, connections: plan.connections * c.share.count, clientIndex: c.share.index, clientCount: c.share.count };
  // The Plan (and so --json) says what runs: one thread in JS, at most one per connection in native.
  plan = { ...plan, threads: c.engine === 'js' ? 1 : Math.min(plan.threads, plan.connections) };
  if (c.cpus) plan = { ...plan, cpus: c.cpus };
  if (c.server) plan = { ...plan, host: c.server.host, port: c.server.port };
  return plan;
}

/**
 * The Plan completed and, under --cluster, its topology found (the one
 * place discovery runs: once, so a header, every capacity step and every
 * run share it). Rejects as discoverCluster does.
 */
export async function preparePlan(built: Plan, c: Completion, signal?: AbortSignal): Promise<Plan> {
  const plan = completePlan(built, c);
  if (!plan.cluster || plan.cluster.nodes.length > 0) return plan;
  // Discovery's modules load only for a cluster to discover: a single-server run parses none of them.
  const { discoverCluster } = await import('./cluster.js');
  return discoverCluster(plan, signal);
}
