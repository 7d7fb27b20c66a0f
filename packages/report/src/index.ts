/**
 * @respbench/report: a study's run rows → aggregates → CSV, Markdown tables
 * and a self-contained HTML report. Pure functions over rows; no sockets, no
 * files (the caller writes what these return).
 */
export type { GroupInfo, Lang, LatencyUs, RunRow, RunStatus, ScenarioInfo, StudyInfo } from './rows.js';
export { scenarioLabel } from './rows.js';
export { mean, ratioTo, stats, summarize, type RoundCell, type Stats, type SummaryRow } from './aggregate.js';
export { detailColumns, detailCsv, summaryColumns, summaryCsv } from './csv.js';
export { byGroup, fixed2, markdownReport, markdownTable, percent, tableCells, type TableOptions } from './markdown.js';
export { htmlReport } from './html.js';
export { latencyChart, throughputChart } from './svg.js';
export { fileTimestamp, labelsFor, localDateTime, type Labels } from './labels.js';
