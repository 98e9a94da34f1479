import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildTrace } from '../../trace/build-trace';
import { fetchHistories } from '../../trace/fetch-histories';
import { summaryOf } from '../../trace/history';
import { DISPLAY_MARK } from '../../common/redact';
import { EncryptionCodec } from '../../crypto/codec';
import { decodeHistory } from '../../crypto/decode-history';
import { keyRingFromEnv } from '../../crypto/keyring';
import type { RunRecord } from '../../common/run-record';
import { turnAnswers, turnCalls } from '../helpers/agent-scripts';
import { notesRepo } from '../helpers/notes-repo';
import { judgeSays } from '../helpers/scripts';
import { scriptedStacks } from '../helpers/temporal';

/**
 * The Web UI's summaries and current details are written by workflow code, which cannot see the
 * worker's environment; the worker's display codec redacts them with the worker's own secret
 * values on their way out. Here a value only the worker holds (a variable whose name is on no
 * allow-list and does not read like a secret, and one named in LOOPWRIGHT_REDACT) reaches the run
 * through the repository: the agent reads a file whose name and contents hold it, and the judge
 * quotes it. The tool still gets the real path (payloads that are not for display are untouched),
 * while no summary in the history and no current details show it.
 */
const setup = scriptedStacks();

test("the worker's own secret values never reach the Web UI's summaries or current details, while the tools get their real input", async () => {
  const plain = `sunshine${randomBytes(6).toString('hex')}`;
  const named = `zq8X${randomBytes(6).toString('hex')}`;
  const workspace = notesRepo('lw-display-');
  const file = `notes-${plain}.txt`;
  writeFileSync(path.join(workspace, file), `the value is ${named}\n`);
  execFileSync('git', ['add', '.'], { cwd: workspace });
  execFileSync('git', ['commit', '-qm', 'notes'], { cwd: workspace });
  const { model, stack } = await setup.with(
    'display',
    [
      turnCalls(1, [['read_file', { path: file }]]),
      turnAnswers(2, `It holds ${named}.`),
      judgeSays(1, false, [`mentions ${plain} and ${named}`], 'do not'),
    ],
    { env: { MY_SETTING: plain, OTHER_VALUE: named, LOOPWRIGHT_REDACT: 'OTHER_VALUE' } },
  );
  const s = stack;
  await s.run(async () => {
    const { workflowId } = await s.client.run('evaluate-optimize', {
      task: 'Read the notes file and say what it holds.',
      rubric: ['is short'],
      tools: ['read_file'],
      workspace,
      autonomy: 'L1',
      maxAttempts: 1,
    });
    let record: RunRecord;
    for (;;) {
      record = await s.client.status(workflowId);
      if (record.state === 'awaiting_human') break;
      expect(record.state).not.toMatch(/completed|failed|blocked|budget_exhausted|canceled|rejected/);
      await new Promise((r) => setTimeout(r, 200));
    }
    // The tool read the real file (its input was not redacted): its output reached the next turn.
    expect(model.requests.find((r) => r.role === 'worker' && r.turn === 2)!.lastUser).toContain(named);
    expect(record.attempts[0]?.reasons.join(' ')).toContain(plain);

    // What the Web UI shows: the summaries of every event, and the current details (the metadata query).
    const handle = s.client.temporal.workflow.getHandle(workflowId);
    // Decoded as the Web UI's codec server decodes it (the suite encrypts with its own ring).
    const ring = keyRingFromEnv(process.env);
    const history = await decodeHistory(await handle.fetchHistory(), ring ? [new EncryptionCodec(ring)] : []);
    const summaries = history.events!.map((e) => summaryOf(e as never)).filter((x): x is string => x !== null);
    const toolSummary = summaries.find((x) => x.startsWith('tool read_file'));
    expect(toolSummary).toBe('tool read_file notes-[redacted].txt');
    const waitSummary = summaries.find((x) => x.startsWith('wait for a human'));
    expect(waitSummary).toBeDefined();
    for (const x of summaries)
      expect({ x, leaks: x.includes(plain) || x.includes(named) }).toEqual({ x, leaks: false });
    const meta = (await handle.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(meta.currentDetails).toContain('awaiting_human');
    expect(meta.currentDetails).toContain('[redacted]');
    expect(meta.currentDetails).not.toContain(plain);
    expect(meta.currentDetails).not.toContain(named);
    // The mark that asked for the worker's redaction is gone from what the history holds.
    const marked = history.events!.filter(
      (e) =>
        e.userMetadata?.summary?.data && Buffer.from(e.userMetadata.summary.data).includes(Buffer.from(DISPLAY_MARK)),
    );
    expect(marked).toEqual([]);
    expect(buildTrace(await fetchHistories(s.client.temporal, workflowId)).workflowId).toBe(workflowId);
    await handle.cancel();
  });
});
