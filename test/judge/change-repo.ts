import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A repository in a temp folder with a bug at base; `commit(files)` writes files and commits them, returning the commit. */
export function changeRepo(): {
  root: string;
  base: string;
  write: (files: Record<string, string | Buffer>) => void;
  commit: (files: Record<string, string | Buffer>, message?: string) => string;
} {
  const root = mkdtempSync(path.join(tmpdir(), 'lw-judge-'));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root }).toString().trim();
  git('init', '-q', '-b', 'main');
  git('config', 'user.email', 't@example.com');
  git('config', 'user.name', 'T');
  const write = (files: Record<string, string | Buffer>) => {
    for (const [file, content] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      writeFileSync(path.join(root, file), content);
    }
  };
  const commit = (files: Record<string, string | Buffer>, message = 'change') => {
    write(files);
    git('add', '-A');
    git('commit', '-qm', message);
    return git('rev-parse', 'HEAD');
  };
  const base = commit(
    {
      'src/add.js': 'exports.add = (a, b) => a - b;\n',
      'test/add.test.js':
        "const { add } = require('../src/add');\nrequire('node:test')('add adds two numbers', () => require('node:assert').equal(add(2, 3), 5));\n",
    },
    'base',
  );
  return { root, base, write, commit };
}

/** The cheat the judge must see: the implementation special-cases the test's exact inputs. */
export const SPECIAL_CASE = 'exports.add = (a, b) => {\n  if (a === 2 && b === 3) return 5;\n  return a - b;\n};\n';
/** The line of the diff that gives it away. */
export const SPECIAL_CASE_LINE = '+  if (a === 2 && b === 3) return 5;';
