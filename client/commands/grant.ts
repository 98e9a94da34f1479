import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../../common/errors';
import { GRANT_NAMESPACE } from '../../common/sshsig';
import { requireOneLine } from '../../common/terminal';
import { grantMessage, type Grant, type SignedGrant } from '../../common/trust';
import { trustPathsFromEnv } from '../../activities/trust';
import { describeRule } from '../../common/promotion';
import type { LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { signingKeyPath, signMessage } from '../signing';
import { loopEvidence } from './autonomy';

export interface GrantOptions {
  level?: string;
  by?: string;
  out?: string;
  json?: boolean;
  taskQueue?: string;
}

/**
 * `grant <loop> --level L3 --by NAME`: an operator's signed grant of an autonomy level to a loop.
 * Only when `autonomy <loop>` shows the loop's promotion rule to that level met (counting only
 * verified approvals), it signs the grant (with the evidence) with the operator's SSH key and
 * writes it to the grants folder (LOOPWRIGHT_GRANTS, else <LOOPWRIGHT_HOME>/grants), where
 * workers read it as each run starts. A worker honours it only when its allowed signers let the
 * key sign grants (namespace loopwright-grant) for NAME. Revoke it by deleting the file.
 */
export async function grantCommand(
  client: LoopwrightClient,
  loop: string,
  opts: GrantOptions,
  io: Output,
  env: Record<string, string | undefined>,
): Promise<number> {
  const level = opts.level?.toUpperCase();
  if (level !== 'L2' && level !== 'L3') throw new UsageError(`--level must be L2 or L3, not "${opts.level ?? ''}"`);
  const by = requireOneLine('--by', (opts.by ?? '').trim());
  if (!by)
    throw new UsageError("grant needs --by NAME: the principal your key is listed for in the workers' allowed signers");
  const key = signingKeyPath(env);
  if (!key)
    throw new UsageError(
      'grant needs your signing key: set LOOPWRIGHT_SIGNING_KEY to your ed25519 private key (or configure git ssh signing)',
    );
  const { evidence, rule } = await loopEvidence(client, loop, { taskQueue: opts.taskQueue });
  if (!rule || rule.to !== level)
    throw new UsageError(`loop ${loop} has no promotion rule to ${level}: it cannot be granted ${level}`);
  if (!evidence.meets)
    throw new UsageError(
      `loop ${loop} does not meet its rule for ${level} yet (${describeRule(rule, evidence.level)}: streak ${evidence.streak}); see \`loopwright autonomy ${loop}\``,
    );
  const grant: Grant = {
    loop,
    level,
    by,
    at: new Date().toISOString(),
    evidence: {
      level: evidence.level,
      rule: describeRule(rule, evidence.level),
      runs: evidence.runs,
      streak: evidence.streak,
      verdict: evidence.verdict,
    },
  };
  const signed: SignedGrant = { grant, signature: signMessage(key, GRANT_NAMESPACE, grantMessage(grant)) };
  const file = opts.out ?? path.join(trustPathsFromEnv(env).grantsDir, `${loop}-${level}.json`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(signed, null, 2)}\n`);
  if (opts.json) io.out(JSON.stringify({ file, ...signed }));
  else {
    io.out(`granted ${loop} ${level} by ${by}: ${file}`);
    io.out(`  evidence: ${grant.evidence.rule}, streak ${evidence.streak} of ${evidence.runs} runs`);
    io.out(
      '  workers read grants from LOOPWRIGHT_GRANTS (default <LOOPWRIGHT_HOME>/grants): put this file there on every worker; delete it to revoke',
    );
  }
  return 0;
}

/** `grant <loop> --level L3 --by NAME [--out FILE] [--json]`. */
export const grantDefinition: CommandDefinition = (program, { action, withClient, io, env }) => {
  program
    .command('grant <loop>')
    .description(
      "an operator's signed grant of an autonomy level to a loop, once `autonomy <loop>` shows its promotion rule met (verified approvals only); workers honour it from LOOPWRIGHT_GRANTS",
    )
    .requiredOption('--level <level>', 'the level to grant: L3 (or L2 for loops that need a grant for it)')
    .requiredOption('--by <name>', 'you: the principal your key is listed for in the allowed signers')
    .option('--out <file>', 'where to write the grant (default <LOOPWRIGHT_GRANTS>/<loop>-<level>.json)')
    .option('--json', 'print the grant as JSON')
    .action(
      action(
        withClient(
          (client, loop: string, opts) =>
            grantCommand(client, loop, { ...opts, taskQueue: client.config.taskQueue }, io, env),
          (_loop: string, opts) => {
            if (!/^L[23]$/i.test(opts.level ?? ''))
              throw new UsageError(`--level must be L2 or L3, not "${opts.level ?? ''}"`);
          },
        ),
      ),
    );
};
