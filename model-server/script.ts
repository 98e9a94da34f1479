import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { InputError, UsageError } from '../common/errors';

/**
 * What a rule asks of a request. Every field is optional and all given fields must match:
 * `role`, `attempt`, `turn` and `model` exactly; `workflowId`, `system` and `lastUser` as substrings.
 * `role`, `attempt`, `turn` and `workflowId` come from the `x-loopwright-*` request headers
 * (`turn` is the agent turn within an attempt, from 1).
 */
export const RuleMatchSchema = z.strictObject({
  role: z.string().min(1).optional(),
  attempt: z.number().int().nonnegative().optional(),
  turn: z.number().int().positive().optional(),
  workflowId: z.string().min(1).optional(),
  system: z.string().optional(),
  lastUser: z.string().optional(),
  model: z.string().min(1).optional(),
});
/** See {@link RuleMatchSchema}. */
export type RuleMatch = z.infer<typeof RuleMatchSchema>;

/** A text block of a scripted reply. */
export const ScriptTextBlockSchema = z.strictObject({ type: z.literal('text'), text: z.string() });

/** A tool_use block of a scripted reply; the server gives it an id `toolu_...` when `id` is absent. */
export const ScriptToolUseBlockSchema = z.strictObject({
  type: z.literal('tool_use'),
  id: z.string().min(1).optional(),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
});

/** Token usage of a scripted reply; a missing field is estimated (tokens) or 0 (cache fields). */
export const ScriptUsageSchema = z.strictObject({
  input_tokens: z.number().int().nonnegative().optional(),
  output_tokens: z.number().int().nonnegative().optional(),
  cache_read_input_tokens: z.number().int().nonnegative().optional(),
  cache_creation_input_tokens: z.number().int().nonnegative().optional(),
});

/**
 * A successful answer: the assistant message's content blocks, its `stop_reason` (default
 * `tool_use` when a tool_use block is present, else `end_turn`) and its usage.
 */
export const ScriptReplySchema = z.strictObject({
  content: z.array(z.discriminatedUnion('type', [ScriptTextBlockSchema, ScriptToolUseBlockSchema])),
  stop_reason: z.enum(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'pause_turn', 'refusal']).optional(),
  usage: ScriptUsageSchema.optional(),
});
/** See {@link ScriptReplySchema}. */
export type ScriptReply = z.infer<typeof ScriptReplySchema>;

/**
 * A failed answer: an HTTP status (400-599) with optional headers and JSON body. Without a
 * body the server sends Anthropic's error shape with a type that fits the status.
 */
export const ScriptErrorSchema = z.strictObject({
  status: z.number().int().min(400).max(599),
  headers: z.record(z.string(), z.string()).optional(),
  body: z.unknown().optional(),
});
/** See {@link ScriptErrorSchema}. */
export type ScriptError = z.infer<typeof ScriptErrorSchema>;

/** The events of a streamed reply, in the order they are sent (`fault.after` may name one). */
export const STREAM_EVENT_NAMES = [
  'message_start',
  'ping',
  'content_block_start',
  'content_block_delta',
  'content_block_stop',
  'message_delta',
  'message_stop',
] as const;

/**
 * What goes wrong in a streamed reply, after `after` events (a count, 0 = right after the
 * headers, or the name of an event: right after the first one of that name):
 * `drop` closes the connection mid-response; `end` ends the response properly, early (a
 * stream without its last events); `stall` sends nothing more and keeps the connection open; `malformed` sends an event whose data is not JSON, then ends the response;
 * `error` sends an SSE `error` event (`error`: its type and message, default
 * `overloaded_error`), then ends the response.
 */
export const StreamFaultSchema = z
  .strictObject({
    kind: z.enum(['drop', 'end', 'stall', 'malformed', 'error']),
    after: z.union([z.number().int().nonnegative(), z.enum(STREAM_EVENT_NAMES)]),
    error: z.strictObject({ type: z.string().min(1), message: z.string() }).optional(),
  })
  .refine((f) => f.error === undefined || f.kind === 'error', {
    message: '"error" goes with kind "error" only',
    path: ['error'],
  });
/** See {@link StreamFaultSchema}. */
export type StreamFault = z.infer<typeof StreamFaultSchema>;

/**
 * One scripted answer. A rule answers a request when all of `match` holds and it has answers
 * left (`times` omitted = unlimited); it waits `delayMs` first, then sends exactly one of
 * `reply` or `error`. A streamed reply waits `eventDelayMs` between events and breaks as
 * `fault` says.
 */
export const ModelRuleSchema = z
  .strictObject({
    name: z.string().min(1),
    match: RuleMatchSchema.optional(),
    times: z.number().int().positive().optional(),
    delayMs: z.number().int().nonnegative().optional(),
    eventDelayMs: z.number().int().nonnegative().optional(),
    fault: StreamFaultSchema.optional(),
    reply: ScriptReplySchema.optional(),
    error: ScriptErrorSchema.optional(),
  })
  .refine((rule) => (rule.reply === undefined) !== (rule.error === undefined), {
    message: 'a rule needs exactly one of "reply" or "error"',
    // Checked even when other fields are wrong, so one run of the loader lists every problem.
    when: (payload) => typeof payload.value === 'object' && payload.value !== null,
  })
  .refine((rule) => rule.reply !== undefined || (rule.fault === undefined && rule.eventDelayMs === undefined), {
    message: '"fault" and "eventDelayMs" shape a streamed reply: they need "reply"',
    when: (payload) => typeof payload.value === 'object' && payload.value !== null,
  });
/** See {@link ModelRuleSchema}. */
export type ModelRule = z.infer<typeof ModelRuleSchema>;

/**
 * A script for the scripted model server: rules tried in order, first match answers.
 * Rule names must be unique so that logs and recorded requests say which rule answered.
 */
export const ModelScriptSchema = z
  .strictObject({ rules: z.array(ModelRuleSchema).min(1, 'a script needs at least one rule') })
  .superRefine((script, ctx) => {
    const seen = new Set<string>();
    script.rules.forEach((rule, index) => {
      if (seen.has(rule.name)) {
        ctx.addIssue({ code: 'custom', path: ['rules', index, 'name'], message: `duplicate rule name "${rule.name}"` });
      }
      seen.add(rule.name);
    });
  });
/** See {@link ModelScriptSchema}. */
export type ModelScript = z.infer<typeof ModelScriptSchema>;

/**
 * Validates an already-parsed script. Throws {@link InputError} with a one-line message
 * naming `source` and listing `path: message` problems joined with "; ".
 */
export function parseModelScript(data: unknown, source: string): ModelScript {
  const parsed = ModelScriptSchema.safeParse(data);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) =>
    `${issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)'}: ${issue.message}`.replace(
      /\s*\n\s*/g,
      ' ',
    ),
  );
  throw new InputError(`invalid model script ${source}: ${issues.join('; ')}`, issues);
}

/**
 * Reads and validates a JSON model script. Throws {@link UsageError} when the file cannot be
 * read and {@link InputError} (one-line message naming the file) when it is not valid JSON or
 * does not fit {@link ModelScriptSchema}.
 */
export async function loadModelScript(path: string): Promise<ModelScript> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new UsageError(`cannot read model script ${path}: ${reason}`, { cause: err });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    const issue = `(json): ${err instanceof Error ? err.message : String(err)}`.replace(/\s*\n\s*/g, ' ');
    throw new InputError(`invalid model script ${path}: ${issue}`, [issue]);
  }
  return parseModelScript(data, path);
}
