import { matchAllowed, splitCommand } from '../../../activities/tools/shell-words';
import { ToolError } from '../../../activities/tools/types';

function refusal(command: string): string {
  try {
    splitCommand(command);
  } catch (err) {
    expect(err).toBeInstanceOf(ToolError);
    return (err as Error).message;
  }
  throw new Error(`${command} was not refused`);
}

describe('splitCommand', () => {
  test('splits on whitespace and honours single quotes, double quotes and backslashes', () => {
    expect(splitCommand('npm  test\t-- --runInBand')).toEqual(['npm', 'test', '--', '--runInBand']);
    expect(splitCommand(`node -e 'a "b" \\c' "d \\"e\\" \\\\ \\n" f\\ g ''`)).toEqual([
      'node',
      '-e',
      'a "b" \\c',
      'd "e" \\ \\n',
      'f g',
      '',
    ]);
    expect(splitCommand(`pre'mid'"post"`)).toEqual(['premidpost']);
  });

  test('metacharacters inside quotes are kept literally', () => {
    expect(splitCommand(`node -e "a; b && c | d > e < f \`g\` $(h)" 'x\ny'`)).toEqual([
      'node',
      '-e',
      'a; b && c | d > e < f `g` $(h)',
      'x\ny',
    ]);
  });

  test('an escaped metacharacter outside quotes is literal', () => {
    expect(splitCommand('echo a\\;b')).toEqual(['echo', 'a;b']);
  });

  test.each([
    'npm test; rm -rf /',
    'npm test && echo',
    'npm test | cat',
    'npm test > out.txt',
    'npm test < in',
    'echo `id`',
    'echo $(id)',
    'npm test &',
    'npm test\nrm -rf /',
  ])('refuses %j because there is no shell', (command) => {
    expect(refusal(command)).toContain('commands run without a shell');
  });

  test('an unterminated quote is refused', () => {
    expect(refusal(`node -e "oops`)).toContain('unterminated " quote');
    expect(refusal(`node -e 'oops`)).toContain("unterminated ' quote");
  });
});

describe('matchAllowed', () => {
  const allowed = ['npm test', 'node', 'git log'];
  test('matches word-wise prefixes only', () => {
    expect(matchAllowed(['npm', 'test', '--', 'x'], allowed)).toBe('npm test');
    expect(matchAllowed(['node', '-v'], allowed)).toBe('node');
    expect(matchAllowed(['npm', 'testing'], allowed)).toBeUndefined();
    expect(matchAllowed(['nodejs'], allowed)).toBeUndefined();
    expect(matchAllowed(['npm'], allowed)).toBeUndefined();
    expect(matchAllowed(['git', 'push'], allowed)).toBeUndefined();
  });

  test('an empty allow-list (or a blank entry) allows nothing', () => {
    expect(matchAllowed(['node'], [])).toBeUndefined();
    expect(matchAllowed(['node'], ['', '  '])).toBeUndefined();
  });
});
