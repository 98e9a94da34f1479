import type { IncomingHttpHeaders } from 'node:http';
import type { ModelRule, ModelScript, RuleMatch } from './script';

/** What the scripted model knows about one request: Loopwright headers plus flattened text. */
export interface RequestFacts {
  /** `x-loopwright-role` header. */
  role?: string;
  /** `x-loopwright-attempt` header, when it is a number. */
  attempt?: number;
  /** `x-loopwright-turn` header (the agent turn within an attempt), when it is a number. */
  turn?: number;
  /** `x-loopwright-workflow-id` header. */
  workflowId?: string;
  /** `model` of the request body, or "" when absent. */
  model: string;
  /** The system prompt: a string, or the text blocks joined with "\n". */
  system: string;
  /** Text of the last `user` message: text blocks and tool_result text joined with "\n". */
  lastUser: string;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : first;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Text of a string or of the `text` blocks (and text inside `tool_result` blocks) of a content array. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const block of content) {
    if (!isRecord(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') parts.push(block.text);
    if (block.type === 'tool_result') parts.push(contentText(block.content));
  }
  return parts.filter((part) => part !== '').join('\n');
}

/** Reads the facts rules match on from request headers and the parsed JSON body. */
export function readRequestFacts(headers: IncomingHttpHeaders, body: unknown): RequestFacts {
  const attemptText = header(headers, 'x-loopwright-attempt');
  const attempt = attemptText === undefined ? undefined : Number(attemptText);
  const turnText = header(headers, 'x-loopwright-turn');
  const turn = turnText === undefined ? undefined : Number(turnText);
  const record = isRecord(body) ? body : {};
  const messages = Array.isArray(record.messages) ? record.messages : [];
  const lastUser = [...messages].reverse().find((m) => isRecord(m) && m.role === 'user') as
    Record<string, unknown> | undefined;
  return {
    role: header(headers, 'x-loopwright-role'),
    attempt: attempt !== undefined && Number.isFinite(attempt) ? attempt : undefined,
    turn: turn !== undefined && Number.isFinite(turn) ? turn : undefined,
    workflowId: header(headers, 'x-loopwright-workflow-id'),
    model: typeof record.model === 'string' ? record.model : '',
    system: contentText(record.system),
    lastUser: lastUser ? contentText(lastUser.content) : '',
  };
}

/** True when every field given in `match` holds for `facts`. */
export function matchesRule(match: RuleMatch | undefined, facts: RequestFacts): boolean {
  if (!match) return true;
  if (match.role !== undefined && match.role !== facts.role) return false;
  if (match.attempt !== undefined && match.attempt !== facts.attempt) return false;
  if (match.turn !== undefined && match.turn !== facts.turn) return false;
  if (match.model !== undefined && match.model !== facts.model) return false;
  if (match.workflowId !== undefined && !(facts.workflowId ?? '').includes(match.workflowId)) return false;
  if (match.system !== undefined && !facts.system.includes(match.system)) return false;
  if (match.lastUser !== undefined && !facts.lastUser.includes(match.lastUser)) return false;
  return true;
}

/**
 * The rules of a script and how many answers each has given. `take` picks the first rule
 * that matches and has answers left, and counts the answer at once, so concurrent requests
 * never share a `times: 1` rule.
 */
export class RuleBook {
  private readonly used: number[];

  constructor(private readonly script: ModelScript) {
    this.used = script.rules.map(() => 0);
  }

  /** The answering rule for `facts`, already counted, or undefined when none matches. */
  take(facts: RequestFacts): ModelRule | undefined {
    const index = this.script.rules.findIndex(
      (rule, i) => (rule.times === undefined || (this.used[i] ?? 0) < rule.times) && matchesRule(rule.match, facts),
    );
    if (index < 0) return undefined;
    this.used[index] = (this.used[index] ?? 0) + 1;
    return this.script.rules[index];
  }

  /** Names of the rules whose `times` are all used. */
  usedUp(): string[] {
    return this.script.rules
      .filter((rule, i) => rule.times !== undefined && (this.used[i] ?? 0) >= rule.times)
      .map((r) => r.name);
  }

  /**
   * A one-line explanation for a request no rule answers, e.g. `scripted model: no rule
   * matches this request (role=checker, attempt=2, last user: "…"); 5 rules, 2 used up (a, b)`.
   */
  describeNoMatch(facts: RequestFacts): string {
    const flat = facts.lastUser.replace(/\s+/g, ' ').trim();
    const excerpt = flat.length > 80 ? `${flat.slice(0, 80)}…` : flat;
    const seen = [
      `role=${facts.role ?? '(none)'}`,
      `attempt=${facts.attempt ?? '(none)'}`,
      ...(facts.workflowId !== undefined ? [`workflowId=${facts.workflowId}`] : []),
      `model=${facts.model || '(none)'}`,
      `last user: ${JSON.stringify(excerpt)}`,
    ];
    const usedUp = this.usedUp();
    const total = this.script.rules.length;
    const usage = `${total} rule${total === 1 ? '' : 's'}, ${usedUp.length} used up${usedUp.length > 0 ? ` (${usedUp.join(', ')})` : ''}`;
    return `scripted model: no rule matches this request (${seen.join(', ')}); ${usage}`;
  }
}
