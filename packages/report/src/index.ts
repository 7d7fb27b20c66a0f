/**
 * @respbench/report: a study's run rows → aggregates → CSV, Markdown tables
 * and self-contained HTML reports (a study's, one run's, a capacity
 * search's). Pure functions over rows; no sockets, no files (the caller
 * writes what these return).
 */
export type { CapacityRun, GroupInfo, HistogramData, IntervalLatencyUs, Lang, LatencyUs, RunRow, RunStatus, ScenarioInfo, SeriesPoint, StudyInfo } from './rows.js';
export { scenarioLabel, SHORT_RUN_SECONDS, SHORT_RUN_WINDOWS, shortRunReason } from './rows.js';
export { coefficientOfVariation, DEFAULT_CV_WARN, mean, ratioTo, stats, summarize, unsteadyRows, type CommandSummary, type RoundCell, type Stats, type SummarizeOptions, type SummaryRow } from './aggregate.js';
export { detailColumns, detailCsv, SERIES_COLUMNS, seriesCsv, summaryColumns, summaryCsv, summaryNote } from './csv.js';
export { byGroup, commandTableCells, fixed2, groupLine, markdownCommandTable, markdownReport, markdownTable, percent, shortRowsLine, tableCells, type TableOptions } from './markdown.js';
export { htmlReport } from './html.js';
export { DEFAULT_CSV_PERCENTILES, DEFAULT_TABLE_PERCENTILES, latencyAt, percentileColumns, percentileKey } from './percentiles.js';
export { latencyChart, logTicks, throughputChart, usLabel } from './svg.js';
export { htmlPage, htmlTable, metaList, PAGE_STYLE } from './page.js';
export { latencyPoints, lineColor, overTimeChart, pointTime, seriesEnd, throughputPoints, type ChartLine, type OverTimeOptions } from './series.js';
export { LATENCY_AXIS, runCharts, runHtml, THROUGHPUT_AXIS, X_AXIS, type RunPage } from './run-page.js';
export { capacityChart, capacityHtml, type CapacityChartInput, type CapacityPage, type CapacityPoint } from './capacity.js';
export { fileTimestamp, labelsFor, localDateTime, type Labels } from './labels.js';
