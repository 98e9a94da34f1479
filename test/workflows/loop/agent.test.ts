import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { Tool } from '../../../activities/tools/types';
import type { ModelServer } from '../../../model-server/server';
import { turnAnswers, turnCalls } from '../../helpers/agent-scripts';
import { judgeSays } from '../../helpers/scripts';
import { notesRepo } from '../../helpers/notes-repo';
import { operatorTrust } from '../../helpers/trust';
import { scriptedStacks, uiSummaries, type TestStack } from '../../helpers/temporal';
import { must } from '../../../common/must';

/** Agent sessions with tools on a real dev server: the autonomy gate, confinement, L2 branches. */
const setup = scriptedStacks();

const repo = () => notesRepo('lw-repo-');

const run = (s: TestStack, input: Record<string, unknown>) =>
  s.run(async () => s.client.wait((await s.client.run('evaluate-optimize', input)).workflowId));
const turnRequest = (m: ModelServer, turn: number) => m.requests.find((r) => r.role === 'worker' && r.turn === turn)!;

describe('agent sessions', () => {
  test('L1 reads with read tools, a write is denied with the reason, and the denial is in the record', async () => {
    const workspace = repo();
    const { model, stack } = await setup(
      'l1',
      turnCalls(1, [
        ['read_file', { path: 'notes.txt' }],
        ['list_files', { path: '.' }],
      ]),
      turnCalls(2, [['write_file', { path: 'hacked.txt', content: 'x' }]]),
      turnAnswers(3, 'The crash happened at 3am (notes.txt:1).'),
      judgeSays(1, true),
    );
    const record = await run(stack, {
      task: 'When was the crash?',
      rubric: ['cites a file'],
      tools: ['read_file', 'list_files', 'write_file'],
      workspace,
      autonomy: 'L1',
    });
    expect(record).toMatchObject({
      state: 'completed',
      output: 'The crash happened at 3am (notes.txt:1).',
      workspace: { branch: null },
    });
    const calls = must(record.attempts[0], 'the run has an attempt').toolCalls!;
    expect(calls.map((c) => [c.turn, c.name, c.allowed])).toEqual([
      [1, 'read_file', true],
      [1, 'list_files', true],
      [2, 'write_file', false],
    ]);
    expect(calls[2]?.reason).toMatch(/write_file is a write tool and this run is L1 \(report only\)/);
    expect(existsSync(path.join(workspace, 'hacked.txt'))).toBe(false);
    expect(record.attempts[0]?.turns).toBe(3);
    // the model saw the file in turn 2 and the denial in turn 3; L1 is offered read tools only
    expect(turnRequest(model, 2).lastUser).toContain('the crash happened at 3am');
    expect(turnRequest(model, 3).lastUser).toContain('denied: write_file is a write tool');
    const offered = (turnRequest(model, 1).body as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
    expect(offered.sort()).toEqual(['list_files', 'read_file']);
    // The Web UI's summaries of the model calls name the role and the model id, not the provider.
    const summaries = await uiSummaries(stack.client, record.workflowId);
    const checker = model.requests.find((r) => r.role === 'checker')!.model;
    expect(summaries.filter((x) => / turn \d|check judge/.test(x))).toEqual([
      `worker ${turnRequest(model, 1).model}: turn 1 (attempt 1)`,
      `worker ${turnRequest(model, 1).model}: turn 2 (attempt 1)`,
      `worker ${turnRequest(model, 1).model}: turn 3 (attempt 1)`,
      `checker ${checker}: check judge (attempt 1)`,
    ]);
  });

  test('file tools refuse paths that leave the workspace, and the model gets the error as a tool result', async () => {
    const workspace = repo();
    const { model, stack } = await setup(
      'confine',
      turnCalls(1, [
        ['read_file', { path: '../../../etc/passwd' }],
        ['read_file', { path: '/etc/passwd' }],
      ]),
      turnAnswers(2, 'I cannot read outside the workspace.'),
      judgeSays(1, true),
    );
    const record = await run(stack, {
      task: 'Read /etc/passwd.',
      rubric: ['honest'],
      tools: ['read_file'],
      workspace,
      autonomy: 'L1',
    });
    expect(record.state).toBe('completed');
    expect(record.attempts[0]?.toolCalls!.every((c) => c.allowed && c.isError)).toBe(true);
    const seen = turnRequest(model, 2).lastUser;
    expect(seen).not.toContain('root:');
    expect(seen).toMatch(/leaves the workspace|absolute/);
  });

  test("L2 writes land on the run's own branch in a repository of its own, never in the repository's working tree or refs", async () => {
    const workspace = repo();
    const { stack } = await setup(
      'l2',
      turnCalls(1, [
        ['write_file', { path: 'fix.txt', content: 'fixed\n' }],
        ['edit_file', { path: 'notes.txt', old_text: '3am', new_text: '4am' }],
      ]),
      turnAnswers(2, 'Wrote fix.txt and corrected the time.'),
      judgeSays(1, true),
    );
    const record = await run(stack, {
      task: 'Fix it.',
      rubric: ['done'],
      tools: ['read_file', 'write_file', 'edit_file'],
      workspace,
      autonomy: 'L2',
    });
    expect(record.state).toBe('completed');
    const branch = record.workspace!.branch!;
    expect(branch).toMatch(/^loopwright\//);
    expect(record.workspace!.root).not.toBe(workspace);
    expect(existsSync(path.join(workspace, 'fix.txt'))).toBe(false);
    expect(readFileSync(path.join(workspace, 'notes.txt'), 'utf8')).toContain('3am');
    // The branch and its commits are in the run's own repository (its workspace), not the repository's.
    const git = (...args: string[]) => execFileSync('git', args, { cwd: record.workspace!.root }).toString();
    expect(git('show', `${branch}:fix.txt`)).toBe('fixed\n');
    expect(git('show', `${branch}:notes.txt`)).toContain('4am');
    expect(git('rev-parse', branch).trim()).toBe(record.attempts[0]?.commit);
    const repoGit = (...args: string[]) => execFileSync('git', args, { cwd: workspace }).toString();
    expect(repoGit('for-each-ref', '--format=%(refname)')).not.toContain('loopwright/');
    expect(repoGit('rev-parse', 'main').trim()).not.toBe(record.attempts[0]?.commit);
  });

  test.each([
    ['L2', false],
    ['L3', true],
  ])(
    "a loop's own external tool is denied at %s unless the level allows it (allowed: %s)",
    async (autonomy, allowed) => {
      const workspace = repo();
      const sent: string[] = [];
      const notify: Tool<{ text: string }> = {
        name: 'notify_team',
        description: 'Posts a message to the team channel.',
        class: 'external',
        input: z.object({ text: z.string() }),
        run: async ({ text }) => {
          sent.push(text);
          return 'posted';
        },
      };
      const { stack } = await setup.with(
        `external-${autonomy}`,
        [turnCalls(1, [['notify_team', { text: 'build is red' }]]), turnAnswers(2, 'told them'), judgeSays(1, true)],
        { tools: [notify as Tool], env: operatorTrust(['evaluate-optimize']).env },
      );
      const record = await run(stack, {
        task: 'Tell the team.',
        rubric: ['r'],
        tools: ['notify_team'],
        workspace,
        autonomy,
      });
      expect(record.state).toBe('completed');
      expect(record.attempts[0]?.toolCalls![0]).toMatchObject({ name: 'notify_team', allowed });
      expect(sent).toEqual(allowed ? ['build is red'] : []);
      if (!allowed)
        expect(record.attempts[0]?.toolCalls![0]?.reason).toMatch(/notify_team is an external tool and this run is L2/);
    },
  );

  test('an attempt that reaches maxTurns without a final answer fails with a step-cap reason', async () => {
    const workspace = repo();
    const { stack } = await setup(
      'step-cap',
      turnCalls(1, [['list_files', { path: '.' }]]),
      turnCalls(2, [['list_files', { path: '.' }]]),
    );
    const record = await run(stack, {
      task: 'Loop.',
      rubric: ['r'],
      tools: ['list_files'],
      workspace,
      maxTurns: 2,
      maxAttempts: 1,
    });
    expect(record.state).toBe('awaiting_human');
    expect(record.attempts[0]?.reasons[0]).toMatch(/step cap: the agent used all 2 turns without a final answer/);
    await stack.client.temporal.workflow.getHandle(record.workflowId).terminate('test done');
  });

  test('a run whose tools need a workspace it cannot have ends blocked with the reason', async () => {
    const { stack } = await setup('no-workspace', turnAnswers(1, 'x'));
    const record = await run(stack, { task: 'T.', rubric: ['r'], tools: ['read_file'], workspace: '/no/such/folder' });
    expect(record).toMatchObject({ state: 'blocked', stopReason: 'setup_error' });
    expect(record.error).toMatch(/workspace \/no\/such\/folder is not a folder/);
  });
});
