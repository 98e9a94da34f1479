import { ToolError } from './types';

const NO_SHELL =
  'commands run without a shell: no pipes, redirections, `;`, `&&`, backquotes, $( ) or newlines; run one command at a time';

/**
 * Splits `command` into argv with simple shell-word rules: whitespace separates words,
 * '…' is literal, "…" is literal except for backslash escapes of `"`, `\`, `$` and a
 * backquote, and an unquoted backslash escapes the next character. Shell metacharacters
 * outside quotes (`;`, `&`, `|`, `>`, `<`, a backquote, `$(`, newlines) are refused with a
 * ToolError, since nothing would interpret them. No variables, globs or `~` are expanded.
 */
export function splitCommand(command: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  const refuse = (what: string): never => {
    throw new ToolError(`${what} in \`${command}\`: ${NO_SHELL}`);
  };
  while (i < command.length) {
    const c = command.charAt(i);
    if (c === "'") {
      const end = command.indexOf("'", i + 1);
      if (end === -1) throw new ToolError(`unterminated ' quote in \`${command}\``);
      word += command.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i += 1;
      for (;;) {
        if (i >= command.length) throw new ToolError(`unterminated " quote in \`${command}\``);
        const d = command[i];
        if (d === '"') break;
        if (d === '\\' && i + 1 < command.length && '"\\$`'.includes(command.charAt(i + 1))) {
          word += command[i + 1];
          i += 2;
        } else {
          word += d;
          i += 1;
        }
      }
      inWord = true;
      i += 1;
    } else if (c === '\\') {
      if (i + 1 >= command.length) throw new ToolError(`trailing backslash in \`${command}\``);
      if (command[i + 1] === '\n') refuse('a newline');
      word += command.charAt(i + 1);
      inWord = true;
      i += 2;
    } else if (c === ' ' || c === '\t') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i += 1;
    } else if (c === '\n' || c === '\r') {
      refuse('a newline');
    } else if (';&|<>`'.includes(c)) {
      refuse(`\`${c}\``);
    } else if (c === '$' && command[i + 1] === '(') {
      refuse('`$(`');
    } else {
      word += c;
      inWord = true;
      i += 1;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/**
 * The allow-list entry `argv` starts with (word by word), or undefined. Entries are parsed
 * with {@link splitCommand}; an empty list allows nothing.
 */
export function matchAllowed(argv: string[], allowed: string[]): string | undefined {
  return allowed.find((entry) => {
    const prefix = splitCommand(entry);
    return prefix.length > 0 && prefix.length <= argv.length && prefix.every((w, k) => argv[k] === w);
  });
}
