/** Programmatic API: run a Plan through an engine, read the result. */
export type { Engine, EngineName, Failure, Mode, Plan, Progress, RawResult, RunOptions, RunResult } from './plan.js';
export { jsEngine } from './engine-js.js';
export { loadNativeEngine } from './engine-native.js';
export { selectEngine } from './engines.js';
export { EXIT } from './exit.js';
export { exitCodeFor, finishResult, runPlan } from './run.js';
export { buildPlan, UsageError } from './validate.js';
export { formatHuman, formatJson } from './output.js';
export { startServer } from './serve/server.js';
export { spawnEmbedded } from './serve/spawn.js';
export { Histogram } from './histogram.js';
