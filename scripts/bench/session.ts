import { randomBytes } from 'node:crypto';
import type { temporal } from '@temporalio/proto';
import { BENCH_FILE } from './bench-model';

/** Workflow code for a worker: a bundle's text or the path of a bundle file. */
export type WorkflowCode = { code: string } | { codePath: string };

/** What both session runners need: where the servers are and how long the session is. */
export interface SessionOptions {
  /** Temporal gRPC address, e.g. 127.0.0.1:7233. */
  address: string;
  /** Base URL of the scripted model server (its ANTHROPIC_BASE_URL). */
  modelUrl: string;
  /** Model turns in the session: turns 1..turns−1 read the file, the last answers. */
  turns: number;
  /** Folder holding the bench file (see makeBenchWorkspace). */
  workspace: string;
  /** The runner's workflow bundle (Loopwright's, resp. the naive baseline's). */
  workflowCode: WorkflowCode;
  /** Task queue of the runner's own worker; a fresh one by default. */
  taskQueue?: string;
}

/** A finished session: its id, its full history, and the new content of each turn. */
export interface SessionRun {
  workflowId: string;
  history: temporal.api.history.v1.IHistory;
  /** Characters of tool output each tool turn added (index 0 = turn 1). */
  newContent: number[];
  /** Wall time of the session, ms. */
  ms: number;
}

/** The `evaluate-optimize` input of the bench session (the naive run uses the same prompts). */
export function benchInput(turns: number, workspace: string) {
  return {
    task: `Read ${BENCH_FILE} and summarize the incidents.`,
    rubric: ['summarizes the incidents'],
    tools: ['read_file'],
    workspace,
    maxTurns: Math.max(turns + 10, 60),
    maxAttempts: 1,
    budget: { maxTokens: 100_000_000, maxCostUsd: 10_000 },
  };
}

/** `<prefix>-<8 hex>`: ids and task queues no other run shares. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** Quiet logger for bundleWorkflowCode: errors only. */
export const BUNDLER_LOGGER = { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} };
