import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateSigningKey, publicKeyOf, signMessage } from '../../client/signing';
import {
  DECISION_NAMESPACE,
  GRANT_NAMESPACE,
  canonicalJson,
  parseAllowedSigners,
  verifySignature,
} from '../../common/sshsig';

const hasSshKeygen = spawnSync('ssh-keygen', ['-?']).error === undefined;
const dir = mkdtempSync(path.join(tmpdir(), 'sshsig-'));
const alice = generateSigningKey(path.join(dir, 'alice'), 'alice@example.com');
const mallory = generateSigningKey(path.join(dir, 'mallory'), 'mallory');
const allowedText = [
  '# operators and reviewers',
  `alice@example.com namespaces="${DECISION_NAMESPACE},${GRANT_NAMESPACE}" ${alice.publicKey} alice's laptop`,
  `"*@ops.example.com" ${mallory.publicKey}`,
  `carol cert-authority ${alice.publicKey}`,
  'dave ecdsa-sha2-nistp256 AAAAE2VjZHNh',
].join('\n');
const allowed = parseAllowedSigners(allowedText);
const now = Date.UTC(2026, 11, 1);

describe('SSH signatures (SSHSIG, allowed_signers)', () => {
  test('parses allowed_signers lines and skips what it cannot honour, saying why', () => {
    expect(allowed.entries.map((e) => [e.principals, e.namespaces, e.line])).toEqual([
      [['alice@example.com'], [DECISION_NAMESPACE, GRANT_NAMESPACE], 2],
      [['*@ops.example.com'], null, 3],
    ]);
    expect(allowed.skipped).toEqual([
      { line: 4, reason: 'option cert-authority is not supported' },
      { line: 5, reason: 'ecdsa-sha2-nistp256 keys are not supported (use ssh-ed25519)' },
    ]);
    expect(allowed.entries[0]?.fingerprint).toBe(alice.fingerprint);
    expect(publicKeyOf(path.join(dir, 'alice'))).toBe(alice.publicKey);
  });

  test('a signature verifies for its principal, message and namespace only', () => {
    const armored = signMessage(path.join(dir, 'alice'), DECISION_NAMESPACE, 'approve run A');
    expect(
      verifySignature({
        armored,
        message: 'approve run A',
        namespace: DECISION_NAMESPACE,
        principal: 'alice@example.com',
        allowed,
        now,
      }),
    ).toEqual({ ok: true, principal: 'alice@example.com', fingerprint: alice.fingerprint });
    const bad = (over: Partial<Parameters<typeof verifySignature>[0]>) =>
      verifySignature({
        armored,
        message: 'approve run A',
        namespace: DECISION_NAMESPACE,
        principal: 'alice@example.com',
        allowed,
        now,
        ...over,
      });
    expect(bad({ message: 'approve run B' })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('does not match this decision'),
    });
    expect(bad({ principal: 'mallory' })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('may not sign as "mallory"'),
    });
    expect(bad({ namespace: 'git' })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('namespace "loopwright-decision", not "git"'),
    });
    expect(bad({ allowed: parseAllowedSigners('') })).toMatchObject({
      ok: false,
      reason: expect.stringContaining("not in the worker's allowed signers"),
    });
    expect(bad({ armored: armored.replace(/[A-Za-z](?=\n-----END)/, (c) => (c === 'A' ? 'B' : 'A')) }).ok).toBe(false);
    expect(bad({ armored: 'hello' })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('not an SSH signature'),
    });
  });

  test('wildcard principals, namespaces and validity windows are honoured', () => {
    const armored = signMessage(path.join(dir, 'mallory'), GRANT_NAMESPACE, 'grant');
    const check = (principal: string, list = allowed) =>
      verifySignature({ armored, message: 'grant', namespace: GRANT_NAMESPACE, principal, allowed: list, now }).ok;
    expect(check('eve@ops.example.com')).toBe(true);
    expect(check('eve@example.com')).toBe(false);
    const windowed = parseAllowedSigners(`m valid-after="20270101",valid-before="20280101" ${mallory.publicKey}`);
    expect(windowed.skipped).toEqual([]);
    expect(check('m', windowed)).toBe(false);
    expect(
      verifySignature({
        armored,
        message: 'grant',
        namespace: GRANT_NAMESPACE,
        principal: 'm',
        allowed: windowed,
        now: Date.UTC(2027, 5, 1),
      }).ok,
    ).toBe(true);
  });

  test('canonical JSON sorts keys at every level and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 'x' }], c: undefined } })).toBe(
      '{"a":{"d":[2,{"y":"x","z":1}]},"b":1}',
    );
  });

  // OpenSSH is the reference: what it signs verifies here, and what is signed here verifies with it.
  (hasSshKeygen ? test : test.skip)(
    'interoperates with ssh-keygen -Y sign / -Y verify (skipped only where OpenSSH is not installed)',
    () => {
      const allowedFile = path.join(dir, 'allowed_signers');
      writeFileSync(allowedFile, allowedText);
      const ours = signMessage(path.join(dir, 'alice'), DECISION_NAMESPACE, 'message one');
      const verified = spawnSync(
        'ssh-keygen',
        [
          '-Y',
          'verify',
          '-f',
          allowedFile,
          '-I',
          'alice@example.com',
          '-n',
          DECISION_NAMESPACE,
          '-s',
          writeTemp('ours.sig', ours),
        ],
        { input: 'message one', encoding: 'utf8' },
      );
      expect(verified.stdout + verified.stderr).toContain('Good "loopwright-decision" signature for alice@example.com');
      const theirs = execFileSync(
        'ssh-keygen',
        ['-Y', 'sign', '-f', path.join(dir, 'alice'), '-n', DECISION_NAMESPACE],
        { input: 'message two', encoding: 'utf8', stdio: ['pipe', 'pipe', 'ignore'] },
      );
      expect(
        verifySignature({
          armored: theirs,
          message: 'message two',
          namespace: DECISION_NAMESPACE,
          principal: 'alice@example.com',
          allowed,
          now,
        }),
      ).toMatchObject({ ok: true });
      const generated = execFileSync('ssh-keygen', ['-y', '-f', path.join(dir, 'alice')], { encoding: 'utf8' });
      expect(generated.trim()).toBe(`${alice.publicKey} alice@example.com`);
    },
  );
});

function writeTemp(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}
