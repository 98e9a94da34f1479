import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createToolRegistry, executeTool } from '../../../activities/tools/registry';
import type { ToolOutcome } from '../../../activities/tools/types';
import { git, gitInit, removeDir, tempDir, toolContext } from './workspace';

let root: string;
const registry = createToolRegistry();

beforeEach(() => {
  root = tempDir('git');
});
afterEach(() => removeDir(root));

const call = (name: string, overrides = {}): Promise<ToolOutcome> =>
  executeTool(registry, name, {}, toolContext(root, overrides));

function commitBaseline(): void {
  gitInit(root);
  writeFileSync(path.join(root, 'a.txt'), 'old line\nsame\n');
  git(root, 'add', 'a.txt');
  git(root, 'commit', '-q', '-m', 'baseline');
}

describe('git_diff', () => {
  test('shows the change to a tracked file and lists the untracked file', async () => {
    commitBaseline();
    writeFileSync(path.join(root, 'a.txt'), 'new line\nsame\n');
    writeFileSync(path.join(root, 'untracked.txt'), 'fresh\n');
    const outcome = await call('git_diff');
    expect(outcome.isError).toBe(false);
    expect(outcome.content).toContain('diff --git a/a.txt b/a.txt');
    expect(outcome.content).toContain('-old line\n+new line');
    expect(outcome.content).toMatch(/untracked files:\n {2}untracked\.txt$/);
  });

  test('includes staged changes, since it diffs against HEAD', async () => {
    commitBaseline();
    writeFileSync(path.join(root, 'a.txt'), 'staged line\nsame\n');
    git(root, 'add', 'a.txt');
    expect((await call('git_diff')).content).toContain('+staged line');
  });

  test('a clean repository says there is nothing to show', async () => {
    commitBaseline();
    expect(await call('git_diff')).toEqual({
      content: 'no changes to tracked files since HEAD\n\nno untracked files',
      isError: false,
    });
  });

  test('a repository without commits diffs the added files against the empty tree', async () => {
    gitInit(root);
    writeFileSync(path.join(root, 'first.txt'), 'first\n');
    git(root, 'add', 'first.txt');
    const outcome = await call('git_diff');
    expect(outcome.isError).toBe(false);
    expect(outcome.content).toContain('+first');
  });

  test('a workspace that is not a git repository is an error', async () => {
    const outcome = await call('git_diff');
    expect(outcome).toEqual({
      content: 'the workspace is not a git repository: git_diff and git_status need one',
      isError: true,
    });
  });

  test('a large diff is capped at outputCapChars', async () => {
    commitBaseline();
    writeFileSync(path.join(root, 'a.txt'), Array.from({ length: 500 }, (_, i) => `line ${i}`).join('\n'));
    const outcome = await call('git_diff', { outputCapChars: 800 });
    expect(outcome.content).toMatch(/\[… \d+ chars cut …\]/);
    expect(outcome.content.length).toBeLessThan(900);
  });
});

describe('git_status', () => {
  test('shows the branch, the modified file and the untracked file', async () => {
    commitBaseline();
    writeFileSync(path.join(root, 'a.txt'), 'new line\nsame\n');
    writeFileSync(path.join(root, 'untracked.txt'), 'fresh\n');
    const outcome = await call('git_status');
    expect(outcome).toEqual({ content: '## main\n M a.txt\n?? untracked.txt', isError: false });
  });

  test('a workspace that is not a git repository is an error', async () => {
    const outcome = await call('git_status');
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toContain('not a git repository');
  });
});

describe('on a repository with hostile config and hooks', () => {
  test('git_diff and git_status show the change and run none of its programs (fsmonitor, filter, textconv, external diff, pager, hooks)', async () => {
    gitInit(root);
    writeFileSync(path.join(root, 'a.txt'), 'old line\nsame\n');
    writeFileSync(path.join(root, '.gitattributes'), '* filter=x diff=x\n');
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'baseline');
    const evil = path.join(`${root}-evil`);
    const marker = `${evil}.ran`;
    mkdirSync(evil);
    const program = (role: string) => {
      writeFileSync(path.join(evil, role), `#!/bin/sh\necho ${role} >> '${marker}'\ncat\n`);
      chmodSync(path.join(evil, role), 0o755);
      return path.join(evil, role);
    };
    for (const [key, role] of [
      ['core.fsmonitor', 'fsmonitor'],
      ['filter.x.clean', 'clean'],
      ['filter.x.smudge', 'smudge'],
      ['diff.x.textconv', 'textconv'],
      ['diff.x.command', 'diff-command'],
      ['diff.external', 'external-diff'],
      ['core.pager', 'pager'],
      ['pager.status', 'pager-status'],
    ] as const) {
      git(root, 'config', key, program(role));
    }
    git(root, 'config', 'color.ui', 'always');
    for (const hook of ['post-index-change', 'reference-transaction', 'post-checkout']) {
      writeFileSync(path.join(root, '.git', 'hooks', hook), `#!/bin/sh\n'${program(`hook-${hook}`)}' </dev/null\n`);
      chmodSync(path.join(root, '.git', 'hooks', hook), 0o755);
    }
    writeFileSync(path.join(root, 'a.txt'), 'new line\nsame\n');
    try {
      const diff = await call('git_diff');
      expect(diff.isError).toBe(false);
      expect(diff.content).toContain('-old line\n+new line');
      expect(await call('git_status')).toEqual({ content: '## main\n M a.txt', isError: false });
      expect(existsSync(marker)).toBe(false);
    } finally {
      removeDir(evil);
      removeDir(marker);
    }
  });
});
