import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { redact } from '../../common/redact';
import type { RunRecord } from '../../common/run-record';
import demoScript from '../../loops/fixtures/fix-test-demo.json';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../loops/fixtures/sample-repo';
import { parseModelScript } from '../../model-server/script';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { sandboxConfigFromEnv } from '../../activities/sandbox/sandbox';
import { findBubblewrap } from '../../server/bubblewrap';
import { LoopwrightClient } from '../loopwright-client';
import { progressLine, summarize, type Output } from '../output';
import { renderReview } from '../review';
import { escapeLine } from '../../common/terminal';
import { generateSigningKey, publicKeyOf } from '../signing';
import { DECISION_NAMESPACE, GRANT_NAMESPACE, parseAllowedSigners, publicKeyLine } from '../../common/sshsig';
import { loopwrightHome } from '../../server/paths';
import { withoutConnectionSettings } from '../../server/temporal-connection';
import { defaultKeysPath, initKeyFile } from '../../crypto/key-file';
import type { CommandDefinition } from '../cli-command';
import { signedBy } from './decide';
import { untilSignal } from './process';
import { colorFor, reviewOf } from './review';

/** A link to a run's page in the Web UI. */
export function runUrl(uiUrl: string, namespace: string, workflowId: string): string {
  return `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

async function ask(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

/**
 * `demo` (what `npm start` runs): the embedded stack, a sample repository with a real failing
 * test, and a `fix-test` run on it (L2). Without ANTHROPIC_API_KEY the scripted model plays a
 * recorded session: the first candidate deletes the failing test and the change policy rejects
 * it; the second fixes the bug and adds a regression test. The demo prints the review (what
 * `loopwright review` shows: the checks, the test results, the diff), then asks whether to approve
 * (the real decision signal; `--yes` approves without asking), the fix lands as one commit,
 * and the stack stays up for the Web UI until Ctrl-C (unless --exit).
 */
export async function demoCommand(
  opts: { exit?: boolean; yes?: boolean },
  env: Record<string, string | undefined>,
  io: Output,
): Promise<number> {
  // The worker side loads @temporalio/worker (about 0.3 s), so only the commands that run it load it.
  const { startEmbeddedStack } = await import('../../workers/embedded-stack');
  const { sandboxNotice } = await import('../../workers/create-worker');
  const runEnv = { ...env };
  let model: ModelServer | undefined;
  if (!env.ANTHROPIC_API_KEY && !env.ANTHROPIC_BASE_URL) {
    model = await startModelServer({
      script: parseModelScript(demoScript, 'loops/fixtures/fix-test-demo.json'),
      port: 0,
    });
    runEnv.ANTHROPIC_BASE_URL = model.url;
    io.out(
      `No ANTHROPIC_API_KEY is set, so the demo uses the scripted model server (a recorded session) at ${model.url}.`,
    );
    io.out('Set ANTHROPIC_API_KEY to run the same demo against Claude.');
  }
  // The agent's commands and the checks run in bubblewrap: install it first where this process may (root with apt-get).
  if (sandboxConfigFromEnv(env).mode === 'bwrap') await findBubblewrap({ env, log: io.err });
  const signer = demoSigning(runEnv);
  if (signer) io.out(signer.note);
  const keys = demoKeys(runEnv);
  if (keys) io.out(keys);
  const repo = createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'loopwright-demo-')), 'sample-math'));
  io.out(`Sample repository with a failing test: ${repo}`);
  const stack = await startEmbeddedStack({ env: runEnv, log: io.err });
  // The demo's own dev server speaks plain TCP, whatever TLS or API key the environment holds.
  const client = await LoopwrightClient.connect({ env: withoutConnectionSettings(runEnv), address: stack.address });
  try {
    io.out(
      `Temporal dev server: ${stack.address}${stack.uiUrl ? `, Web UI: ${stack.uiUrl}` : ''}${stack.metricsUrl ? `, metrics: ${stack.metricsUrl}` : ''}`,
    );
    io.out(sandboxNotice(stack.sandbox).line);
    if (stack.codec)
      io.out(
        `The Web UI decodes payloads through the codec server at ${stack.codec.url} (127.0.0.1 only); the database holds ciphertext.`,
      );
    const input = {
      repo,
      testCommand: 'node --test',
      failingTest: SAMPLE_FAILING_TEST,
      allowedPaths: ['src/', 'test/'],
    };
    const { workflowId } = await client.run('fix-test', input, { trigger: { kind: 'cli', by: 'demo' } });
    io.out(`Started fix-test: ${workflowId}`);
    const progress = (r: RunRecord) => io.out(progressLine(r));
    let record = await client.wait(workflowId, progress);
    if (record.state === 'awaiting_human' && record.escalation?.kind === 'approval') {
      const safe = (line: string) => escapeLine(redact(line, client.redaction));
      for (const a of record.attempts)
        io.out(safe(`  attempt ${a.n}: ${a.passed ? 'passed' : `failed: ${a.reasons.join(' | ')}`}`));
      io.out(
        safe(
          `The fix is verified and waits for approval on branch ${record.workspace?.branch}. What you would approve (\`npx loopwright review ${workflowId}\`):`,
        ),
      );
      io.out('');
      renderReview(await reviewOf(record, { redaction: client.redaction }), {
        color: colorFor(process.stdout, env),
      }).forEach((l) => io.out(l));
      io.out('');
      const yes =
        opts.yes || (process.stdin.isTTY ? await ask('Approve it and commit the fix to main? [y/N] ') : false);
      if (yes) {
        const applied = await client.decide(workflowId, { kind: 'approve', by: signer?.principal ?? demoName(env) });
        io.out(`Approved by ${escapeLine(applied.by)}: ${signedBy(applied)}`);
      } else if (!process.stdin.isTTY) {
        const how = signer
          ? `LOOPWRIGHT_SIGNING_KEY=${runEnv.LOOPWRIGHT_SIGNING_KEY} npx loopwright approve ${workflowId} --by ${signer.principal}`
          : `npx loopwright approve ${workflowId} --by YOU`;
        io.out(`Approve it from another terminal: ${how} (or rerun with npm start -- --yes)`);
      } else
        await client.decide(workflowId, {
          kind: 'reject',
          by: signer?.principal ?? demoName(env),
          reason: 'not approved in the demo',
        });
      record = await waitForEnd(client, workflowId);
    }
    summarize(record, client.redaction).forEach((l) => io.out(l));
    const effect = record.effects[0];
    if (effect)
      io.out(`The fix is commit ${effect.commit.slice(0, 12)} on ${effect.target} in ${repo} (git -C ${repo} log -1).`);
    if (stack.uiUrl) io.out(`See the run in the Web UI: ${runUrl(stack.uiUrl, stack.namespace, workflowId)}`);
    io.out(`Its record: npx loopwright status ${workflowId}`);
    io.out(`Its trace:  npx loopwright trace ${workflowId}`);
    if (!opts.exit) {
      io.out('The server and worker keep running so you can browse the run; Ctrl-C stops them.');
      await Promise.race([untilSignal(), stack.done]);
    }
    return record.state === 'completed' ? 0 : 3;
  } finally {
    await client.close();
    await stack.stop();
    await model?.close();
  }
}

/** Who the demo's decisions are from: the user's login name, when it is a plain one. */
function demoName(env: Record<string, string | undefined>): string {
  return env.USER && /^[A-Za-z0-9._-]{1,64}$/.test(env.USER) ? env.USER : 'demo';
}

/**
 * The demo's decisions are signed, as they would be in production: unless the user configured
 * signing (LOOPWRIGHT_SIGNING_KEY or LOOPWRIGHT_ALLOWED_SIGNERS), a demo key in
 * `<LOOPWRIGHT_HOME>/signing/demo_ed25519` (made once) and an allowed-signers file that trusts
 * it for the user's name (`<LOOPWRIGHT_HOME>/allowed_signers`, made once; an existing one is
 * used only when it already lists the key). Sets both in `runEnv` for the embedded worker and
 * this client; undefined when the user's own settings apply.
 */
function demoSigning(runEnv: Record<string, string | undefined>): { principal: string; note: string } | undefined {
  if (runEnv.LOOPWRIGHT_SIGNING_KEY?.trim() || runEnv.LOOPWRIGHT_ALLOWED_SIGNERS?.trim()) return undefined;
  const home = loopwrightHome(runEnv as NodeJS.ProcessEnv);
  const keyFile = path.join(home, 'signing', 'demo_ed25519');
  const publicKey = publicKeyOf(keyFile) ?? generateSigningKey(keyFile, 'loopwright demo key').publicKey;
  const allowed = path.join(home, 'allowed_signers');
  const principal = demoName(runEnv);
  if (!existsSync(allowed)) {
    writeFileSync(
      allowed,
      `# Who may sign Loopwright decisions and grants (git's allowed_signers format).\n${principal} namespaces="${DECISION_NAMESPACE},${GRANT_NAMESPACE}" ${publicKey} loopwright demo key\n`,
    );
  }
  const listed = parseAllowedSigners(readFileSync(allowed, 'utf8')).entries.find(
    (e) => publicKeyLine(e.key) === publicKey,
  );
  const as = listed?.principals[0];
  if (as === undefined) return undefined;
  runEnv.LOOPWRIGHT_SIGNING_KEY = keyFile;
  runEnv.LOOPWRIGHT_ALLOWED_SIGNERS = allowed;
  return {
    principal: as,
    note: `Decisions are signed: the demo signs as ${as} with ${keyFile}, which ${allowed} trusts (the worker checks every approval of effects against it).`,
  };
}

/**
 * The demo's payloads are encrypted, as they would be in production: unless the user chose
 * (LOOPWRIGHT_KEYS set, to a ring or empty for none), the demo uses `<LOOPWRIGHT_HOME>/keys`,
 * making it once (`keys init`). Every client and worker with this LOOPWRIGHT_HOME reads that file
 * when LOOPWRIGHT_KEYS is unset, so `status` and `trace` from another terminal decode the run.
 */
function demoKeys(runEnv: Record<string, string | undefined>): string | undefined {
  if (runEnv.LOOPWRIGHT_KEYS !== undefined) return undefined;
  const file = defaultKeysPath(runEnv);
  if (existsSync(file)) return `Payloads, transcripts and reports are encrypted with the key ring ${file}.`;
  initKeyFile(file);
  return `Payloads, transcripts and reports are encrypted with a key ring the demo made: ${file} (back it up; \`npx loopwright keys rotate\` adds a key).`;
}

async function waitForEnd(client: LoopwrightClient, workflowId: string): Promise<RunRecord> {
  for (;;) {
    const record = await client.status(workflowId);
    if (
      record.state !== 'awaiting_human' &&
      record.state !== 'applying' &&
      record.state !== 'running' &&
      record.state !== 'verifying'
    )
      return record;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

/** `demo [--exit] [--yes]`: what `npm start` runs. */
export const demoDefinition: CommandDefinition = (program, { action, env, io }) => {
  program
    .command('demo')
    .description('what `npm start` runs: the embedded stack and a fix-test run on a sample repository')
    .option('--exit', 'stop once the run is done instead of keeping the stack up')
    .option('--yes', 'approve the verified fix without asking')
    .action(action((opts) => demoCommand(opts, env, io)));
};
