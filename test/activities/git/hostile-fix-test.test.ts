import { readFileSync } from 'node:fs';
import path from 'node:path';
import demoScript from '../../../loops/fixtures/fix-test-demo.json';
import { SAMPLE_FAILING_TEST } from '../../../loops/fixtures/sample-repo';
import { parseModelScript } from '../../../model-server/script';
import { workerGit } from '../../../activities/git/worker-git';
import { scriptedStacks } from '../../helpers/temporal';
import { createHostileRepo, removeHostileRepos } from './hostile-repo';

/**
 * The fix-test loop (L2, the demo's scripted session) on a real dev server, on a repository
 * pre-seeded with a hostile core.fsmonitor, every hook in .git/hooks, filters, diff and merge
 * drivers, signing and pager programs (see hostile-repo.ts): the worker makes the worktree,
 * the agent's attempts are checked and committed, the approved fix lands, and not one of the
 * repository's programs runs in any of it.
 */
const setup = scriptedStacks();
const saved = process.env.LW_TEST_SECRET_TOKEN;

afterAll(removeHostileRepos);
afterEach(() => {
  if (saved === undefined) delete process.env.LW_TEST_SECRET_TOKEN;
  else process.env.LW_TEST_SECRET_TOKEN = saved;
});

test('a fix-test run on a repository with a pre-seeded fsmonitor and hooks is approved, lands exactly once, and no hostile program runs', async () => {
  process.env.LW_TEST_SECRET_TOKEN = 'sk-lw-secret';
  const hostile = createHostileRepo('.git/hooks');
  const { stack: s } = await setup.with('hostile-fix-test', parseModelScript(demoScript, 'demo'));
  const record = await s.run(async () => {
    const { workflowId } = await s.client.run('fix-test', {
      repo: hostile.repo,
      testCommand: 'node --test',
      failingTest: SAMPLE_FAILING_TEST,
      allowedPaths: ['src/', 'test/'],
    });
    expect(await s.client.wait(workflowId)).toMatchObject({
      state: 'awaiting_human',
      escalation: { kind: 'approval' },
    });
    await s.client.decide(workflowId, { kind: 'approve', by: 'ada' });
    for (;;) {
      const r = await s.client.status(workflowId);
      if (r.state === 'completed' || r.state === 'blocked') return r;
      await new Promise((res) => setTimeout(res, 200));
    }
  });
  expect(record).toMatchObject({ state: 'completed', stopReason: 'passed' });
  expect(record.attempts.map((a) => a.passed)).toEqual([false, true]);
  expect(record.effects).toHaveLength(1);
  const git = async (...args: string[]) => (await workerGit(hostile.repo, args)).trim();
  expect((await git('log', 'main', '--format=%H', '--grep=Loopwright-Effect')).split('\n')).toEqual([
    record.effects[0]?.commit,
  ]);
  expect(await git('rev-parse', 'main')).toBe(record.effects[0]?.commit);
  expect(readFileSync(path.join(hostile.repo, 'src/math.js'), 'utf8')).toContain('return a + b;');
  expect(await git('status', '--porcelain', '--ignore-submodules=dirty')).toBe('');
  expect(hostile.ran()).toBe('');
});
