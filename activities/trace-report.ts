import path from 'node:path';
import type { Client } from '@temporalio/client';
import { buildTrace } from '../trace/build-trace';
import { fetchHistories } from '../trace/fetch-histories';
import { renderTraceMarkdown } from '../trace/render-markdown';
import type { RunRecord } from '../common/run-record';
import { fileKey } from '../common/file-key';
import { loopwrightHome } from '../server/paths';
import type { KeyRing } from '../crypto/keyring';
import { processRedaction } from '../crypto/ring-redaction';
import { reportRing, writeReportFile } from './report-file';
import { reportDir } from './reports';

/** Input of `writeTraceReport`. */
export interface TraceReportInput {
  workflowId: string;
  /** Absolute folder of the trace reports; default `<LOOPWRIGHT_HOME>/traces` on the worker. */
  dir?: string;
  /** The record the run is about to return (its history has no close event yet). */
  record: RunRecord;
  /** The run's workspace: a folder inside it must not lead out of it through a symlink. */
  workspace?: string;
}

/**
 * Writes `<dir>/<fileKey(workflow id)>.md` (common/file-key.ts): the run's trace (`loopwright trace`) as Markdown, rebuilt
 * from its Temporal history (every run of its continue-as-new chain) and the record it ends
 * with. Secrets are redacted. Idempotent: a retry rewrites the same story. With a key ring and
 * a folder outside the workspace (the default `<LOOPWRIGHT_HOME>/traces` among them) the file
 * is sealed, `<name>.md.enc` (see report-file.ts): `loopwright report <file>` prints it.
 */
export async function writeTraceReport(
  client: Client,
  input: TraceReportInput,
  keys?: KeyRing,
): Promise<{ path: string }> {
  const trace = buildTrace(await fetchHistories(client, input.workflowId), {
    ending: input.record,
    redaction: processRedaction(process.env, [], keys),
  });
  const dir = reportDir(input.dir ?? path.join(loopwrightHome(), 'traces'), input.workspace);
  const file = writeReportFile(
    dir,
    `${fileKey(input.workflowId)}.md`,
    renderTraceMarkdown(trace),
    reportRing(keys, dir, input.workspace),
  );
  return { path: file };
}
