import { isSafeEnvName, redact, redactDeep, redactionFromEnv, REDACTED, type Redaction } from '../../common/redact';

/** Each bypass class of issue 14, several cases each: the secret shows in no form afterwards. */
const GITHUB = 'ghp_0123456789abcdefghijABCDEFGHIJ0123';
const ANTHROPIC = 'sk-ant-api03-SECRETSECRET0123456789';
const VALUE = 'hunter2-s3cret-Xy';
const r = { values: [VALUE], names: ['DB_PASSWORD'] };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const b64url = (s: string) => Buffer.from(s).toString('base64url');
const spaced = (s: string, sep = ' ') => s.split('').join(sep);
const zw = (s: string, ch: string) => `${s.slice(0, 5)}${ch}${s.slice(5, 11)}${ch}${s.slice(11)}`;

/** What must not show: the secret, its parts long enough to be useful, and its encodings. */
function forms(secret: string): string[] {
  return [
    secret,
    secret.slice(0, 12),
    secret.slice(-12),
    b64(secret),
    b64url(secret),
    Buffer.from(secret).toString('hex'),
    encodeURIComponent(secret),
  ];
}
function expectGone(text: string, secret: string, red: Redaction = r): string {
  const out = redact(text, red);
  for (const f of forms(secret)) expect({ out, leaked: out.includes(f) ? f : null }).toEqual({ out, leaked: null });
  expect(out).toContain(REDACTED);
  return out;
}

describe('encoded secrets are redacted where they stand', () => {
  test.each([
    ['standard base64 of a token', `see ${b64(GITHUB)} here`, GITHUB],
    ['url-safe base64 of a value', `see ${b64url(`${VALUE}??>>`)} here`, VALUE],
    ['base64 of prose holding a key', `blob=${b64(`the key is ${ANTHROPIC} ok`)};`, ANTHROPIC],
    ['base64 without padding after a prefix', `x:${b64(`pw ${VALUE}`).replace(/=+$/, '')}`, VALUE],
    ['base64 of base64', b64(b64(`token ${GITHUB}`)), GITHUB],
    ['hex of a value', `dump ${Buffer.from(`v=${VALUE}`).toString('hex')} end`, VALUE],
  ])('%s', (_, text, secret) => {
    expect(expectGone(text, secret).length).toBeLessThan(text.length);
  });

  test.each([
    [
      'a fully percent-encoded value',
      `q=${[...VALUE].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}&x=1`,
      VALUE,
    ],
    ['a partly percent-encoded value', `u=${encodeURIComponent(VALUE).replace('-', '%2D')}`, VALUE],
    ['a percent-encoded token', `https://x.test/?t=${GITHUB.replace('_', '%5F')}`, GITHUB],
    ['a doubly encoded value', `q=${encodeURIComponent(encodeURIComponent('hunter2 s3cret-Xy'))}`, 'hunter2 s3cret-Xy'],
  ])('%s', (_, text, secret) => {
    expectGone(text, secret, { values: [...r.values, 'hunter2 s3cret-Xy'] });
  });
});

describe('obfuscated secrets are redacted', () => {
  test.each([
    ['a zero-width space', zw(GITHUB, '\u200B'), GITHUB],
    ['a zero-width joiner in a value', zw(VALUE, '\u200D'), VALUE],
    ['a word joiner and a BOM', zw(ANTHROPIC, '\u2060').replace('api', 'a\uFEFFpi'), ANTHROPIC],
    ['a soft hyphen', zw(VALUE, '\u00AD'), VALUE],
  ])('with %s inside', (_, secret, plain) => {
    const out = expectGone(`before ${secret} after`, plain);
    expect(out).toBe(`before ${REDACTED} after`);
  });

  test.each([
    ['spaced out', `token: ${spaced(GITHUB)} thanks`, GITHUB],
    ['spaced out with dashes', `t ${spaced(GITHUB.slice(4), '-').replace(/^/, 'ghp_')} end`, GITHUB],
    ['split by a space after its prefix', `key sk-ant- ${ANTHROPIC.slice(7)} and more words`, ANTHROPIC],
    [
      'split by dashes',
      `t ${GITHUB.slice(0, 8)}-${GITHUB.slice(8, 16)}-${GITHUB.slice(16, 24)}-${GITHUB.slice(24)} end`,
      GITHUB,
    ],
    ['a value spaced out', `pw ${spaced(VALUE)} end`, VALUE],
  ])('%s', (_, text, secret) => {
    const out = expectGone(text, secret);
    expect(out.split(' ').pop()).toMatch(/^(thanks|words|end)$/);
  });

  test.each([
    ['a token wrapped over two lines', `${GITHUB.slice(0, 20)}\n${GITHUB.slice(20)}\nnext line`, GITHUB],
    ['a key wrapped with indentation', `  ${ANTHROPIC.slice(0, 15)}\n    ${ANTHROPIC.slice(15)}`, ANTHROPIC],
    ['a value broken by a line break', `pw: ${VALUE.slice(0, 9)}\r\n${VALUE.slice(9)} done`, VALUE],
  ])('split across lines: %s', (_, text, secret) => {
    expectGone(text, secret);
  });
});

describe('escaped, folded and look-alike secrets are redacted', () => {
  const fullwidth = (s: string) => s.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));
  const each = (s: string, f: (c: string) => string) => [...s].map(f).join('');
  test.each([
    ['HTML decimal references', each(VALUE, (c) => `&#${c.charCodeAt(0)};`), VALUE],
    ['HTML hex references', each(GITHUB, (c) => `&#x${c.charCodeAt(0).toString(16)};`), GITHUB],
    ['HTML named references around a value', `pw=${VALUE.replace('-', '&hyphen;').replace('-', '&#45;')}`, VALUE],
    ['double-escaped HTML', each(VALUE, (c) => `&amp;#${c.charCodeAt(0)};`), VALUE],
    ['\\x escapes', each(ANTHROPIC, (c) => `\\x${c.charCodeAt(0).toString(16)}`), ANTHROPIC],
    ['\\u escapes', each(VALUE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`), VALUE],
    ['\\u{} escapes', each(GITHUB, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`), GITHUB],
    ['fullwidth forms', fullwidth(GITHUB), GITHUB],
    ['mathematical letters', `k ${GITHUB.replace('p', '\u{1D429}')} end`, GITHUB],
    ['combining marks on each character', each(VALUE, (c) => `${c}\u0301`), VALUE],
    ['Cyrillic look-alikes', ANTHROPIC.replace(/a/g, '\u0430').replace(/e/g, '\u0435'), ANTHROPIC],
    ['a value split by dashes and dots', `${VALUE.slice(0, 4)}-${VALUE.slice(4, 9)}.${VALUE.slice(9)}`, VALUE],
    ['a value split by slashes and underscores', `${VALUE.slice(0, 6)}/_${VALUE.slice(6)}`, VALUE],
    ['base64 after a letter that makes the first alignment read as text', `x${b64(`token=${VALUE}`)}`, VALUE],
  ])('%s', (_, text, secret) => {
    expectGone(`seen: ${text} (end)`, secret);
  });

  test('accented and non-Latin prose is left alone', () => {
    for (const text of [
      'café résumé naïve — “quoted”',
      '这是一个测试句子，包含一些中文字符。',
      'Привет, мир: ошибка в строке 42',
      'a%20b &amp; c',
    ])
      expect(redact(text, r)).toBe(text);
  });
});

describe('credentials in URLs and assignments', () => {
  test.each([
    ['postgres://admin:pa55w0rd-xyz@db.example.com:5432/app', 'postgres://admin:[redacted]@db.example.com:5432/app'],
    [
      'git clone https://x-access-token:abcd1234zzzz@github.com/o/r',
      'git clone https://x-access-token:[redacted]@github.com/o/r',
    ],
    ['https://ghp0123456789abcdefXYZ@github.com/o/r', 'https://[redacted]@github.com/o/r'],
    ['ssh://git@github.com/o/r stays', 'ssh://git@github.com/o/r stays'],
  ])('%s', (text, expected) => {
    expect(redact(text)).toBe(expected);
  });

  test('values of names like OPENAI_KEY, GH_PAT, AWS_ACCESS_KEY_ID and SENTRY_DSN are redacted, ordinary keys are not', () => {
    expect(
      redact(
        'OPENAI_KEY=abcdEFGH1234 GH_PAT=zzzz1234yyyy AWS_ACCESS_KEY_ID=QQQQ1111WWWW SENTRY_DSN=dsnvalue99 sort_key=name max_tokens: 100',
      ),
    ).toBe(
      'OPENAI_KEY=[redacted] GH_PAT=[redacted] AWS_ACCESS_KEY_ID=[redacted] SENTRY_DSN=[redacted] sort_key=name max_tokens: 100',
    );
  });

  test('Basic credentials are redacted when they decode to user:password; prose after "Basic" is not', () => {
    expect(redact(`Basic authentication; Authorization: Basic ${b64('user:s3cretpass')}`)).toBe(
      'Basic authentication; Authorization: Basic [redacted]',
    );
  });
});

describe('prose is left alone', () => {
  test.each([
    'sk-learn is a great library for machine learning',
    'I like risk-adjusted returns and task-list management tools',
    'commit 3f2a9c1b4d5e6f708192a3b4c5d6e7f8091a2b3c in /usr/local/lib/node_modules/typescript/lib',
    'a b c d e f g h i j k: the alphabet, spaced',
    'the function redactionFromEnvironmentVariables returns a Redaction',
  ])('%s', (text) => {
    expect(redact(text, r)).toBe(text);
  });
});

describe('redactionFromEnv', () => {
  const env = {
    OPENAI_KEY: 'abcdEFGH1234zz',
    GH_PAT: 'pat-9876543210',
    DATABASE_URL: 'postgres://u:pw123456@h/db',
    AWS_ACCESS_KEY_ID: 'QQQQ1111WWWW2222',
    SSH_AUTH_SOCK: '/tmp/ssh-XYZabc/agent.1234',
    WHATEVER_NAME: 'Zx9-opaque-value',
    MY_SETTING: 'sunshine2024',
    HOME: '/home/someone',
    PATH: '/usr/local/bin:/usr/bin',
    LANG: 'en_US.UTF-8',
    NODE_OPTIONS: '--max-old-space-size=4096',
    LOOPWRIGHT_HOME: '/var/lib/loopwright',
    TEMPORAL_ADDRESS: '127.0.0.1:7233',
    APP_ENV: 'production',
    LOOPWRIGHT_CODEC_TOKEN: 'codec-token-123456',
    NODE_AUTH_TOKEN: 'npm-token-abcdef',
    LOOPWRIGHT_REDACT: 'TZ, HOSTNAME',
    TZ: 'Europe/Amsterdam',
    HOSTNAME: 'build-box-17',
    SHORT: 'abc123',
  };
  const red = redactionFromEnv(env);

  test.each([
    'OPENAI_KEY',
    'GH_PAT',
    'DATABASE_URL',
    'AWS_ACCESS_KEY_ID',
    'SSH_AUTH_SOCK',
    'WHATEVER_NAME',
    'MY_SETTING',
    'LOOPWRIGHT_CODEC_TOKEN',
    'NODE_AUTH_TOKEN',
  ] as const)('the value of %s is a secret, on its own and encoded', (name) => {
    expect(red.values).toContain(env[name]);
    expectGone(`saw ${env[name]} and ${b64(`x ${env[name]}`)} here`, env[name], red);
  });

  test('names in LOOPWRIGHT_REDACT always count, even on the allow-list', () => {
    expect(red.values).toEqual(expect.arrayContaining([env.TZ, env.HOSTNAME]));
    expect(red.names).toEqual(expect.arrayContaining(['tz', 'hostname']));
    expect(redact('HOSTNAME: anything-here', red)).toBe('HOSTNAME: [redacted]');
  });

  test('allow-listed settings, short values and ordinary words are not secrets', () => {
    for (const v of [
      env.HOME,
      env.PATH,
      env.LANG,
      env.NODE_OPTIONS,
      env.LOOPWRIGHT_HOME,
      env.TEMPORAL_ADDRESS,
      env.APP_ENV,
      env.SHORT,
    ])
      expect(red.values).not.toContain(v);
    expect(redact('deployed to production from /home/someone', red)).toBe('deployed to production from /home/someone');
  });

  test('the allow-list keeps names that read like secrets out, whatever their prefix', () => {
    expect([
      isSafeEnvName('LC_ALL'),
      isSafeEnvName('NODE_ENV'),
      isSafeEnvName('LOOPWRIGHT_SANDBOX'),
      isSafeEnvName('GITHUB_SHA'),
    ]).toEqual([true, true, true, true]);
    expect([
      isSafeEnvName('NODE_AUTH_TOKEN'),
      isSafeEnvName('LOOPWRIGHT_SIGNING_KEY'),
      isSafeEnvName('GITHUB_TOKEN'),
      isSafeEnvName('OPENAI_KEY'),
    ]).toEqual([false, false, false, false]);
  });
});

test('redactDeep redacts every string of a record, keeping its shape', () => {
  const out = redactDeep({ a: [b64(GITHUB), 3, null], b: { c: zw(VALUE, '\u200B') } }, r);
  expect(out).toEqual({ a: [REDACTED, 3, null], b: { c: REDACTED } });
});
