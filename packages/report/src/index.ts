/**
 * @respbench/report: a study's run rows → aggregates → CSV, Markdown tables
 * and a self-contained HTML report. Pure functions over rows; no sockets, no
 * files (the caller writes what these return).
 */
export type { CapacityRun, GroupInfo, HistogramData, Lang, LatencyUs, RunRow, RunStatus, ScenarioInfo, StudyInfo } from './rows.js';
export { scenarioLabel, SHORT_RUN_SECONDS, SHORT_RUN_WINDOWS, shortRunReason } from './rows.js';
export { mean, ratioTo, stats, summarize, type RoundCell, type Stats, type SummarizeOptions, type SummaryRow } from './aggregate.js';
export { detailColumns, detailCsv, summaryColumns, summaryCsv, summaryNote } from './csv.js';
export { byGroup, fixed2, groupLine, markdownReport, markdownTable, percent, shortRowsLine, tableCells, type TableOptions } from './markdown.js';
export { htmlReport } from './html.js';
export { latencyChart, throughputChart } from './svg.js';
export { capacityChart, capacityHtml, type CapacityChartInput, type CapacityPage, type CapacityPoint } from './capacity.js';
export { fileTimestamp, labelsFor, localDateTime, type Labels } from './labels.js';
