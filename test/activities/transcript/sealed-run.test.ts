import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { traceCommand } from '../../../client/commands/trace';
import type { Output } from '../../../client/output';
import type { Trace } from '../../../trace/types';
import { keyRingFromEnv, newKey } from '../../../crypto/keyring';
import { createFileBlobStore } from '../../../activities/transcript/store';
import { turnAnswers, turnCalls } from '../../helpers/agent-scripts';
import { notesRepo } from '../../helpers/notes-repo';
import { judgeSays } from '../../helpers/scripts';
import { scriptedStacks } from '../../helpers/temporal';
import { must } from '../../../common/must';

/**
 * An agent run on the real dev server with the operator's key ring: what a tool read (kept in
 * the transcript store) is ciphertext on disk, and still reaches the model and the trace.
 * The in-process worker's activities read LOOPWRIGHT_KEYS and LOOPWRIGHT_TRANSCRIPTS from
 * process.env (createActivities' default), so this file sets both for its own tests only.
 */
const MARKER = 'ORCHID-vault-combination-4417-MARKER';
const setup = scriptedStacks();

let home: string;
let transcripts: string;
const saved = { keys: process.env.LOOPWRIGHT_KEYS, transcripts: process.env.LOOPWRIGHT_TRANSCRIPTS };

beforeAll(() => {
  home = mkdtempSync(path.join(tmpdir(), 'lw-sealed-run-'));
  transcripts = path.join(home, 'transcripts');
  writeFileSync(path.join(home, 'keys'), `k1=${newKey()}\n`, { mode: 0o600 });
  process.env.LOOPWRIGHT_KEYS = path.join(home, 'keys');
  process.env.LOOPWRIGHT_TRANSCRIPTS = transcripts;
});
afterAll(() => {
  for (const [name, value] of [
    ['LOOPWRIGHT_KEYS', saved.keys],
    ['LOOPWRIGHT_TRANSCRIPTS', saved.transcripts],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  rmSync(home, { recursive: true, force: true });
});

function capture(): Output & { lines: string[] } {
  const lines: string[] = [];
  return { lines, out: (l) => lines.push(l), err: () => undefined };
}

function filesUnder(root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

test('a secret a tool read is ciphertext in every transcript blob, while the model got it and the trace shows the output decoded', async () => {
  const workspace = notesRepo('lw-sealed-ws-');
  writeFileSync(path.join(workspace, 'vault.txt'), `combination: ${MARKER}\n`);
  execFileSync('git', ['add', '.'], { cwd: workspace });
  execFileSync('git', ['commit', '-qm', 'vault'], { cwd: workspace });
  const { model, stack } = await setup(
    'sealed-transcripts',
    turnCalls(1, [['read_file', { path: 'vault.txt' }]]),
    turnAnswers(2, 'The vault file holds a combination (vault.txt:1).'),
    judgeSays(1, true),
  );
  const workflowId = await stack.run(async () => {
    const { workflowId: id } = await stack.client.run('evaluate-optimize', {
      task: 'What does vault.txt hold?',
      rubric: ['cites a file'],
      tools: ['read_file'],
      workspace,
      autonomy: 'L1',
    });
    expect(await stack.client.wait(id)).toMatchObject({ state: 'completed' });
    return id;
  });
  // The tool output went through the store: the model read it back from there in turn 2.
  expect(model.requests.find((r) => r.role === 'worker' && r.turn === 2)!.lastUser).toContain(MARKER);

  const files = filesUnder(transcripts);
  expect(files.length).toBeGreaterThanOrEqual(4); // task, assistant turn, tool output, tool results, answer
  for (const file of files) {
    const raw = readFileSync(file);
    expect(raw.subarray(0, 14).toString('ascii')).toBe('lwsealed:1:k1\n');
    expect(raw.includes(Buffer.from(MARKER))).toBe(false);
    expect(raw.includes(Buffer.from('ORCHID'))).toBe(false);
  }
  // ...and the ring opens them: one of them is the tool's full output.
  const store = createFileBlobStore(transcripts, { keys: keyRingFromEnv(process.env) });
  const values = await Promise.all(files.map((f) => store.get(`sha256:${path.basename(f, '.json')}`)));
  expect(values.some((v) => typeof v === 'string' && v.includes(`combination: ${MARKER}`))).toBe(true);

  const out = capture();
  expect(await traceCommand(stack.client, workflowId, { json: true }, out)).toBe(0);
  const trace = JSON.parse(out.lines.join('\n')) as Trace;
  const call = must(trace.attempts[0], 'the run has an attempt').toolCalls.find((c) => c.name === 'read_file')!;
  expect(call).toMatchObject({ allowed: true, isError: false });
  expect(call.preview).toContain(MARKER);
  rmSync(workspace, { recursive: true, force: true });
});
