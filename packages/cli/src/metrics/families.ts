/**
 * The metric families `--metrics-listen` serves and `--statsd` pushes: one
 * table, so the exposition, the docs' list and the Grafana dashboard's test
 * all read the same names. Conventional Prometheus names: base units
 * (seconds, bytes), `_total` on counters.
 */

export type FamilyType = 'counter' | 'gauge' | 'histogram';

export interface Family {
  /** The name as queried (counters with their `_total`). */
  name: string;
  type: FamilyType;
  /** OpenMetrics' UNIT line: the name's unit suffix. */
  unit?: 'seconds';
  help: string;
  /** Labels beside the run's (target, engine, client_index, node). */
  labels: readonly string[];
}

/** Labels every series carries: which load machine measured what. */
export const RUN_LABELS = ['target', 'engine', 'client_index', 'node'] as const;

/** Reply outcomes of respbench_requests_total: disjoint, adding up to the run's requests (lost apart). */
export const OUTCOMES = ['ok', 'error', 'miss', 'mismatch', 'lost_write', 'lost'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export const FAMILIES = {
  requests: {
    name: 'respbench_requests_total',
    type: 'counter',
    help: 'Requests of the measured phase by outcome: ok, error (error reply), miss (nil read), mismatch and lost_write (--verify-get), lost (--reconnect: dropped before its reply, not in the run\'s requests). command is "all" when the run sends several commands.',
    labels: ['command', 'outcome'],
  },
  duration: {
    name: 'respbench_request_duration_seconds',
    type: 'histogram',
    unit: 'seconds',
    help: 'Per-request latency (reply parsed minus request written; from the intended send under --rate), classic buckets folded from the HDR histograms of each interval.',
    labels: ['command'],
  },
  // Named as the issue and the dashboards know them; OpenMetrics wants a unit to end the family's name, so none is declared.
  bytesSent: { name: 'respbench_bytes_sent_total', type: 'counter', help: 'Bytes written to the server in the measured phase.', labels: [] },
  bytesReceived: { name: 'respbench_bytes_received_total', type: 'counter', help: 'Bytes read from the server in the measured phase.', labels: [] },
  connections: { name: 'respbench_connections', type: 'gauge', help: 'Connections open at the end of the last interval.', labels: [] },
  targetRate: { name: 'respbench_target_rate', type: 'gauge', help: 'The --rate asked for, requests per second (only under --rate).', labels: [] },
  scheduleLag: {
    name: 'respbench_schedule_lag_seconds',
    type: 'gauge',
    unit: 'seconds',
    help: 'Under --rate: how late requests went out against their schedule, at each quantile, over the run so far (set when the run ends).',
    labels: ['quantile'],
  },
  clientLag: {
    name: 'respbench_client_lag_seconds',
    type: 'gauge',
    unit: 'seconds',
    help: "The client's own lag, p99: the JS engine's event-loop delay over the last interval while it runs; at the end, the run's clientLag.p99 (schedule lag or event-loop delay).",
    labels: [],
  },
  running: { name: 'respbench_running', type: 'gauge', help: '1 while a measured phase runs, 0 between runs and after the last.', labels: [] },
  nodeRequests: {
    name: 'respbench_node_requests_total',
    type: 'counter',
    help: '--cluster: requests answered per primary (node), set when the run ends.',
    labels: [],
  },
} as const satisfies Record<string, Family>;

/** Upper bounds (seconds) of respbench_request_duration_seconds' buckets, +Inf apart: 25 us to 10 s, 1-2.5-5 steps. */
export const DURATION_BUCKETS_SECONDS: readonly number[] = [
  25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 5, 10,
];

/** The quantiles respbench_schedule_lag_seconds is given at. */
export const LAG_QUANTILES = ['0.5', '0.99', '0.999'] as const;
