/**
 * Words the reports show, in the two languages users read them in. `zh`
 * gives the headers of the tables users keep today (场景, 模式, 均值QPS, …).
 */
import type { Lang } from './rows.js';

export interface Labels {
  scenario: string;
  mode: string;
  round: (n: number) => string;
  meanQps: string;
  /** The spread beside the mean: sample standard deviation of the rounds' ops/s. */
  sdQps: string;
  meanAvgUs: string;
  meanElapsed: string;
  vsBaseline: (baseline: string) => string;
  heading: (name: string, rounds: number, when: string) => string;
  roundsLine: (rounds: number) => string;
  parameters: string;
  detail: string;
  summary: string;
  engine: string;
  partial: (done: number, planned: number) => string;
  stopped: string;
  only: (scenarios: string[]) => string;
  failed: string;
  notRun: string;
  throughputChart: string;
  latencyChart: string;
  opsPerSec: string;
  latencyAxis: string;
  spreadNote: string;
  latencyNote: string;
  noData: string;
  /** Latency columns of the HTML table (merged over the ok rounds). */
  latencyHeader: (percentile: string) => string;
  /** A command mix's table per command: its heading and its own columns. */
  perCommand: string;
  command: string;
  requests: string;
  totals: string;
  commands: string;
  verification: string;
  verifyOff: string;
  verifyNoReads: string;
  verifyClean: string;
  verifyFailed: (runs: number) => string;
  /** Preamble warning: how many finished runs were too short. */
  shortRuns: (short: number, runs: number) => string;
  /** Under a table: the rows with short rounds. */
  shortRows: string;
  /** Under a table: a round not counted, and why (its status in words). */
  roundNotOk: (status: 'failed' | 'errors' | 'mismatches') => string;
  /** Under a table: a round whose connect phase took seconds. */
  slowConnect: (seconds: string) => string;
  /** The over-time charts (each run's time series), per mode. */
  overTimeThroughput: (mode: string) => string;
  overTimeLatency: (mode: string) => string;
  secondsAxis: string;
  intervalOpsAxis: string;
  intervalP99Axis: string;
  overTimeNote: string;
  /** The series CSV's line in the HTML preamble. */
  seriesFile: string;
  /** The column of the rounds' coefficient of variation. */
  cv: string;
  /** Preamble warning: rows whose rounds disagree by more than the threshold. */
  unsteady: (rows: string, threshold: string) => string;
  /** A capacity study: the mean column (`slo`: `p99 ≤ 1 ms`), the spread, min and max. */
  meanCapacity: (slo: string) => string;
  sdCapacity: string;
  minCapacity: string;
  maxCapacity: string;
  /** `kvstore reaches 4,950 ops/s at p99 ≤ 1 ms, redis (aof_always) 3,100` (one mode's). */
  reaches: (mode: string, first: string, value: string, slo: string, share: string, others: string[]) => string;
  capacityChart: string;
  /** Above one target's chart: its label, mode and the round drawn. */
  capacityOf: (label: string, mode: string, round: number) => string;
  capacityNote: string;
  /** `62.5% of redis`: a figure as a share of the baseline's. */
  shareOf: (pct: string, baseline: string) => string;
}

const en: Labels = {
  scenario: 'scenario',
  mode: 'mode',
  round: (n) => `Round${n}`,
  meanQps: 'mean QPS',
  sdQps: 'sd QPS',
  meanAvgUs: 'mean avg(us/op)',
  meanElapsed: 'mean elapsed(s)',
  vsBaseline: (b) => `vs ${b}`,
  heading: (name, rounds, when) => `${name}: mean of ${rounds} round${rounds === 1 ? '' : 's'} (${when})`,
  roundsLine: (rounds) => `rounds: ${rounds} (mean)`,
  parameters: 'parameters',
  detail: 'detail',
  summary: 'summary',
  engine: 'engine',
  partial: (done, planned) => `partial: ${done} of ${planned} runs finished`,
  stopped: 'stopped',
  only: (names) => `only: ${names.join(', ')} (--only; the study's other scenarios did not run)`,
  failed: 'failed',
  notRun: '-',
  throughputChart: 'Throughput: mean ops/s per scenario and mode',
  latencyChart: "Latency percentiles (all ok rounds' requests together)",
  opsPerSec: 'ops/s',
  latencyAxis: 'latency (us, log scale)',
  spreadNote: 'Bar: mean over ok rounds; whisker: min to max; dots: each round.',
  latencyNote: "Per-request latency, reply parsed minus request written (pipelined requests included); percentiles of the rounds' histograms merged.",
  noData: 'no finished round',
  latencyHeader: (p) => `${p}(us)`,
  perCommand: "per command (the mix's commands merged over the ok rounds; they add up to Totals)",
  command: 'command',
  requests: 'requests',
  totals: 'Totals',
  commands: 'commands',
  verification: 'verification (--verify-get)',
  verifyOff: 'off',
  verifyNoReads: 'on, no reads to verify',
  verifyClean: 'on, every read verified',
  verifyFailed: (runs) => `on, ${runs} run${runs === 1 ? '' : 's'} did not verify`,
  shortRuns: (short, runs) =>
    `warning: ${short} of ${runs} finished run${runs === 1 ? '' : 's'} too short to mean much (under 1 s, or under 10 × pipeline × connections requests): raise requests or set a duration`,
  shortRows: 'too short to mean much',
  roundNotOk: (status) => (status === 'mismatches' ? 'did not verify' : status === 'errors' ? 'got error replies' : 'failed'),
  slowConnect: (seconds) => `slow connect: ${seconds} s to open its connections before the first request (the server was slow to accept; not in the figures)`,
  overTimeThroughput: (mode) => `Throughput over time (${mode}): ops/s per interval, a line per scenario and round`,
  overTimeLatency: (mode) => `p99 latency over time (${mode}): per interval, a line per scenario and round`,
  secondsAxis: 'seconds into the measured phase',
  intervalOpsAxis: 'ops/s per interval',
  intervalP99Axis: 'p99 per interval (log scale)',
  seriesFile: 'series (a row per run per interval)',
  overTimeNote: "Each ok round's time series (the series CSV); one dot per interval, at its middle; a hollow dot on the bottom edge is an interval without replies.",
  cv: 'CV',
  unsteady: (rows, threshold) =>
    `warning: rounds disagree (ops/s coefficient of variation above ${threshold}): ${rows}; run more rounds, or pin the load and the server to separate CPUs (--cpus, a target's cpus:)`,
  meanCapacity: (slo) => `mean ops/s at ${slo}`,
  sdCapacity: 'sd ops/s',
  minCapacity: 'min ops/s',
  maxCapacity: 'max ops/s',
  reaches: (mode, first, value, slo, share, others) => `${mode}: ${first} reaches ${value} ops/s at ${slo}${share}${others.map((o) => `, ${o}`).join('')}`,
  capacityChart: 'Capacity: mean ops/s within the SLO per scenario and mode',
  capacityOf: (label, mode, round) => `${label} · ${mode}: latency against throughput (round ${round})`,
  shareOf: (pct, baseline) => `${pct} of ${baseline}`,
  capacityNote: 'Each round is a search: open-loop steps at rising rates, then a bisection; a round\'s figure is the highest rate that met the SLO (latency from when each request was due). Filled points met it, hollow ones did not.',
};

const zh: Labels = {
  scenario: '场景',
  mode: '模式',
  round: (n) => `Round${n}`,
  meanQps: '均值QPS',
  sdQps: '标准差QPS',
  meanAvgUs: '均值avg(us/op)',
  meanElapsed: '均值elapsed(s)',
  vsBaseline: (b) => `相对${b}`,
  heading: (name, rounds, when) => `${name} ${rounds}轮均值复测（${when}）`,
  roundsLine: (rounds) => `轮次：${rounds} 轮（取均值）`,
  parameters: '参数',
  detail: '明细数据',
  summary: '汇总数据',
  engine: '引擎',
  partial: (done, planned) => `未完成：已完成 ${done}/${planned} 次运行`,
  stopped: '中止',
  only: (names) => `仅运行：${names.join(', ')}（--only；其余场景未运行）`,
  failed: '失败',
  notRun: '-',
  throughputChart: '吞吐：各场景、各模式的均值 ops/s',
  latencyChart: '延迟分位数（所有成功轮次的请求合并）',
  opsPerSec: 'ops/s',
  latencyAxis: '延迟（us，对数坐标）',
  spreadNote: '柱：成功轮次的均值；须线：最小到最大；圆点：每一轮。',
  latencyNote: '单请求延迟：解析到回复的时间减去发出请求的时间（含 pipeline）；分位数取自各轮直方图合并。',
  noData: '没有完成的轮次',
  latencyHeader: (p) => `${p}(us)`,
  perCommand: '按命令（混合命令各自的数据，合并所有成功轮次；合计即 Totals）',
  command: '命令',
  requests: '请求数',
  totals: 'Totals',
  commands: '命令',
  verification: '读校验（--verify-get）',
  verifyOff: '关闭',
  verifyNoReads: '开启，没有需要校验的读',
  verifyClean: '开启，全部通过',
  verifyFailed: (runs) => `开启，${runs} 次运行校验失败`,
  shortRuns: (short, runs) => `警告：${runs} 次完成的运行中有 ${short} 次太短，数据参考意义不大（不足 1 秒，或请求数不足 10 × pipeline × 连接数）：请加大请求数或设置时长`,
  shortRows: '运行太短，参考意义不大',
  roundNotOk: (status) => (status === 'mismatches' ? '校验失败' : status === 'errors' ? '收到错误回复' : '失败'),
  slowConnect: (seconds) => `连接缓慢：第一个请求之前建立连接用了 ${seconds} 秒（服务器接受连接慢；不计入数据）`,
  overTimeThroughput: (mode) => `吞吐随时间变化（${mode}）：每个区间的 ops/s，每个场景每一轮一条线`,
  overTimeLatency: (mode) => `p99 延迟随时间变化（${mode}）：每个区间，每个场景每一轮一条线`,
  secondsAxis: '测量阶段开始后的秒数',
  intervalOpsAxis: '每区间 ops/s',
  intervalP99Axis: '每区间 p99（对数坐标）',
  seriesFile: '时间序列（每次运行每个区间一行）',
  overTimeNote: '每个成功轮次的时间序列（见 series CSV）；每个区间一个点，位于区间中点；底边上的空心点表示该区间没有回复。',
  cv: '变异系数',
  unsteady: (rows, threshold) => `警告：各轮结果差异较大（QPS 变异系数超过 ${threshold}）：${rows}；请增加轮数，或把压测端与服务端绑定到不同的 CPU（--cpus，目标的 cpus:）`,
  meanCapacity: (slo) => `满足 ${slo} 的均值ops/s`,
  sdCapacity: '标准差ops/s',
  minCapacity: '最小ops/s',
  maxCapacity: '最大ops/s',
  reaches: (mode, first, value, slo, share, others) => `${mode}：${first} 在 ${slo} 下可达 ${value} ops/s${share}${others.map((o) => `，${o}`).join('')}`,
  capacityChart: '容量：各场景、各模式满足 SLO 的均值 ops/s',
  capacityOf: (label, mode, round) => `${label} · ${mode}：延迟与吞吐（第 ${round} 轮）`,
  shareOf: (pct, baseline) => `为 ${baseline} 的 ${pct}`,
  capacityNote: '每一轮是一次搜索：开环按速率逐级加压，再二分；一轮的数值是满足 SLO 的最高速率（延迟从请求应发出的时刻算起）。实心点满足，空心点不满足。',
};

export function labelsFor(lang: Lang = 'en'): Labels {
  return lang === 'zh' ? zh : en;
}

/** `YYYY-MM-DD HH:MM:SS` in local time, as the original tool's headings show it. */
export function localDateTime(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** `YYYYMMDD_HHMMSS` in local time: the original tool's file name stamp. */
export function fileTimestamp(d: Date): string {
  return localDateTime(d).replace(/-/g, '').replace(' ', '_').replace(/:/g, '');
}
