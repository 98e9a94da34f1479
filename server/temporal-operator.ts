import { SEARCH_ATTRIBUTES } from '../common/search-attributes';
import { type CommandResult, failureReason, runCommand } from './run-command';
import { withoutConnectionSettings } from './temporal-connection';

/** Where and how to reach a server with the Temporal CLI. */
export interface OperatorTarget {
  cli: string;
  address: string;
  namespace: string;
  /** The CLI's environment (default this process's): TEMPORAL_TLS_* and TEMPORAL_API_KEY for a secured frontend. */
  env?: NodeJS.ProcessEnv;
}

function operator(target: OperatorTarget, args: string[]): Promise<CommandResult> {
  return runCommand(target.cli, ['operator', ...args, '--address', target.address], {
    timeoutMs: 15_000,
    // Without an environment of its own, the CLI talks to a local server: not with a developer's Cloud settings.
    env: target.env ?? withoutConnectionSettings(process.env),
  });
}

/** True when `temporal operator cluster health` answers SERVING. */
export async function isServing(target: OperatorTarget): Promise<boolean> {
  const result = await operator(target, ['cluster', 'health']);
  return result.code === 0 && result.stdout.includes('SERVING');
}

/** Sets how long closed runs are kept: `temporal operator namespace update --retention`. */
export async function setRetention(target: OperatorTarget, retention: string): Promise<void> {
  const result = await operator(target, [
    'namespace',
    'update',
    '--namespace',
    target.namespace,
    '--retention',
    retention,
  ]);
  if (result.code !== 0 || result.error)
    throw new Error(`could not set retention ${retention} on namespace ${target.namespace}: ${failureReason(result)}`);
}

/**
 * Registers every Loopwright search attribute the namespace lacks. The dev server's
 * `--search-attribute` flags only apply when it creates the database, so attributes added to
 * {@link SEARCH_ATTRIBUTES} later reach an existing database here. Returns the names it added.
 */
export async function ensureSearchAttributes(target: OperatorTarget): Promise<string[]> {
  const listed = await operator(target, ['search-attribute', 'list', '--namespace', target.namespace, '-o', 'json']);
  if (listed.code !== 0 || listed.error) throw new Error(`could not list search attributes: ${failureReason(listed)}`);
  const existing = Object.keys(
    (JSON.parse(listed.stdout) as { customAttributes?: Record<string, string> }).customAttributes ?? {},
  );
  const missing = SEARCH_ATTRIBUTES.filter((attr) => !existing.includes(attr.name));
  // One create call per type: the CLI takes many --name but a single --type.
  for (const type of new Set(missing.map((attr) => attr.type))) {
    const names = missing.filter((attr) => attr.type === type).flatMap((attr) => ['--name', attr.name]);
    const created = await operator(target, [
      'search-attribute',
      'create',
      '--namespace',
      target.namespace,
      ...names,
      '--type',
      type,
    ]);
    if (created.code !== 0 || created.error)
      throw new Error(`could not register search attributes (${type}): ${failureReason(created)}`);
  }
  return missing.map((attr) => attr.name);
}
