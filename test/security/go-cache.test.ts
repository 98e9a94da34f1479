import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GO_CACHE_SEED, goCacheMaster, SANDBOX_GOCACHE } from '../../activities/sandbox/go-cache';
import { createSandbox, sandboxConfigFromEnv, type Sandbox } from '../../activities/sandbox/sandbox';
import { runTests } from '../../activities/tests/run-tests';
import { callTool, runShell, toolContext } from '../helpers/sandbox-tools';

/**
 * The warm Go build cache of sandboxed commands (activities/sandbox/go-cache.ts), attacked from
 * inside: the real bubblewrap sandbox, the real go, the agent's run_command and the gate's test
 * runs (runTests). Go trusts its cache by key, so a cache one command writes and a later one
 * reads lets the agent plant a compiled standard library package of its making under the real
 * key, and the gate links it; and a cache only the gate gets tells the gate's runs from the
 * agent's. Each command gets its own copy of a master the worker built, at Go's default path.
 */
const HAS_GO = spawnSync('go', ['version'], { encoding: 'utf8' }).status === 0;
const goTest = HAS_GO ? test : test.skip;
const SKIPPED = HAS_GO ? '' : ' (skipped: no go on this worker)';

/**
 * What a hostile command runs against its GOCACHE: it compiles a `strconv` whose Itoa always
 * returns "5" (an overlay of the real source, so nothing is written to GOROOT), writes it over
 * the real `strconv`'s compiled output and fixes the size in the cache entry of the real one's
 * action id. Both files are written in place (they keep their inodes: a cache made of hard links
 * to a master would carry the change there). Go checks an entry's size, not its content: any
 * later build that reads this cache links the planted package.
 */
const POISON = String.raw`set -e
C=$(go env GOCACHE)
R=$(go env GOROOT)
real=$(go list -export -f '{{.Export}}' strconv)
rid=$(basename "$real" -d)
entry=$(grep -l " $rid " "$C"/??/*-a | head -1)
T=$(mktemp -d)
f=$(grep -l '^func Itoa(i int) string {$' "$R"/src/strconv/*.go)
sed 's/^func Itoa(i int) string {$/func Itoa(i int) string { return "5"/' "$f" > "$T/itoa.go"
printf '{"Replace":{"%s":"%s"}}' "$f" "$T/itoa.go" > "$T/ov.json"
bad=$(go list -overlay "$T/ov.json" -export -f '{{.Export}}' strconv)
aid=$(basename "$entry" -a)
ts=$(awk '{print $5}' "$entry")
cat "$bad" > "$real"
printf 'v1 %s %s %20d %20d\n' "$aid" "$rid" "$(wc -c < "$bad")" "$ts" > "$T/entry"
cat "$T/entry" > "$entry"
echo "planted strconv in $C"
`;

/** A module whose only test fails: Add subtracts, and the test checks strconv.Itoa(Add(2, 3)). */
const VICTIM: Record<string, string> = {
  'go.mod': 'module example.com/victim\n\ngo 1.22\n',
  'add.go': 'package victim\n\nfunc Add(a, b int) int { return a - b }\n',
  'add_test.go': [
    'package victim',
    '',
    'import (',
    '\t"strconv"',
    '\t"testing"',
    ')',
    '',
    'func TestAdd(t *testing.T) {',
    '\tif got := strconv.Itoa(Add(2, 3)); got != "5" {',
    '\t\tt.Fatalf("got %s", got)',
    '\t}',
    '}',
    '',
  ].join('\n'),
};

/**
 * A test that prints what a test can see of its build cache: the variables and `go env` that
 * place it, the mounts that hold it, whether it starts out warm, and the whole environment.
 */
const PROBE: Record<string, string> = {
  'go.mod': 'module example.com/probe\n\ngo 1.22\n',
  'probe.go': 'package probe\n',
  'probe_test.go': String.raw`package probe

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestProbe(t *testing.T) {
	goEnv, err := exec.Command("go", "env", "GOCACHE", "GOFLAGS", "GOENV", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	cache := strings.Split(string(goEnv), "\n")[0]
	var mounts []string
	info, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(info), "\n") {
		f := strings.Fields(l)
		if len(f) > 5 && (strings.Contains(f[4], "go-build") || strings.Contains(f[4], "/.cache")) {
			mounts = append(mounts, f[4]+" "+strings.Split(f[5], ",")[0])
		}
	}
	// Warm: every entry of the worker's master is in this run's cache.
	seed, missing := 0, 0
	filepath.WalkDir("/run/loopwright/go-build", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			seed++
			if _, err := os.Stat(filepath.Join(cache, strings.TrimPrefix(p, "/run/loopwright/go-build"))); err != nil {
				missing++
			}
		}
		return nil
	})
	env := os.Environ()
	sort.Strings(env)
	out, _ := json.Marshal(map[string]any{
		"goEnv": string(goEnv), "mounts": mounts, "warm": seed > 0 && missing == 0, "env": env,
		"GOCACHE": os.Getenv("GOCACHE"), "XDG_CACHE_HOME": os.Getenv("XDG_CACHE_HOME"),
	})
	t.Logf("PROBE %s END", out)
}
`,
};

let dir: string;
let sandbox: Sandbox;
let master: string | undefined;

function writeTree(root: string, files: Record<string, string>): string {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
  return realpathSync(root);
}

/** A hash of every file's path, mode and content under `root`. */
function treeHash(root: string): string {
  const h = createHash('sha256');
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(d, e.name);
      const st = statSync(p);
      h.update(`${path.relative(root, p)} ${st.mode}\n`);
      if (e.isDirectory()) walk(p);
      else h.update(readFileSync(p));
    }
  };
  walk(root);
  return h.digest('hex');
}

/** The gate's way: a clean copy of `workspace` elsewhere, `go test` through runTests (the go runner's socket wrapper). */
async function gateRun(workspace: string, command = 'go test ./...') {
  const checkout = mkdtempSync(path.join(dir, 'gate-'));
  cpSync(workspace, checkout, { recursive: true });
  return runTests({ command, runner: 'go' }, { sandbox, workspace: checkout, timeoutMs: 180_000 });
}

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'lw-go-cache-')));
  sandbox = createSandbox(sandboxConfigFromEnv({ PATH: process.env.PATH, LOOPWRIGHT_HOME: path.join(dir, 'home') }));
  if (HAS_GO) {
    const ws = writeTree(path.join(dir, 'first'), VICTIM);
    master = await goCacheMaster(sandboxConfigFromEnv({ PATH: process.env.PATH }), ws);
  }
}, 600_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

goTest(
  `a command that plants a compiled strconv under the real one's key in its cache reaches neither a later command nor the gate: their TestAdd still fails; the same attack on a cache shared by commands makes it pass${SKIPPED}`,
  async () => {
    expect(master).toBeDefined();
    const before = treeHash(master!);
    const ws = writeTree(path.join(dir, 'victim'), VICTIM);
    const agent = toolContext(sandbox, ws, ['sh', 'go'], 180_000);

    // The attack works: within the command that planted it, the failing test passes.
    const planted = await runShell(agent, `${POISON}\ngo test -count=1 ./... && echo POISONED-PASS`);
    expect(planted).toContain('planted strconv in /tmp/home/.cache/go-build');
    expect(planted).toContain('POISONED-PASS');

    // The next command of the agent, and the gate's runs, build with the real strconv.
    const next = (await callTool(agent, 'run_command', { command: 'go test -count=1 ./...' })).content;
    expect(next).toContain('got -1');
    expect(next).toContain('FAIL');
    for (let i = 0; i < 2; i++) {
      const gate = await gateRun(ws);
      expect(gate.tampered).toBeUndefined();
      expect(gate.results).toEqual([
        expect.objectContaining({ name: 'example.com/victim > TestAdd', outcome: 'failed' }),
      ]);
    }
    expect(treeHash(master!)).toBe(before);

    // Control: the same attack on a cache every command reads and writes (a GOCACHE shared by
    // the agent's commands and the gate's) makes the gate's run pass the failing test.
    const shared = path.join(dir, 'shared-cache');
    cpSync(master!, shared, { recursive: true });
    const naive = { env: { GOCACHE: shared }, writable: [shared], timeoutMs: 180_000, capChars: 100_000 };
    const poisoned = await sandbox.run(['sh', '-c', POISON], { workspace: ws, ...naive });
    expect(poisoned.output).toContain(`planted strconv in ${shared}`);
    const checkout = mkdtempSync(path.join(dir, 'naive-gate-'));
    cpSync(ws, checkout, { recursive: true });
    const fooled = await sandbox.run(['sh', '-c', 'go test -count=1 ./...'], { workspace: checkout, ...naive });
    expect(fooled.output).toMatch(/^ok\s+example\.com\/victim/m);
  },
  600_000,
);

goTest(
  `the master cache cannot be written from the sandbox, by any means a command has, and its own path on the worker is not there at all${SKIPPED}`,
  async () => {
    expect(master).toBeDefined();
    const before = treeHash(master!);
    const ws = writeTree(path.join(dir, 'writer'), { 'go.mod': 'module example.com/writer\n\ngo 1.22\n' });
    const agent = toolContext(sandbox, ws, ['sh'], 60_000);
    const entry = readdirSync(path.join(master!, '00'))[0];
    const seedEntry = `${GO_CACHE_SEED}/00/${entry}`;
    const tries = [
      `touch ${GO_CACHE_SEED}/planted`,
      `echo x > ${GO_CACHE_SEED}/00/planted`,
      `echo x > ${seedEntry}`,
      `echo x >> ${seedEntry}`,
      `truncate -s 0 ${seedEntry}`,
      `rm -f ${seedEntry}`,
      `mv ${seedEntry} ${seedEntry}.x`,
      `chmod 777 ${seedEntry}`,
      `touch -d 2001-01-01 ${seedEntry}`,
      `rm -rf ${GO_CACHE_SEED}/01`,
      `mount -o remount,rw ${GO_CACHE_SEED}`,
      `umount ${GO_CACHE_SEED}`,
      `ln ${seedEntry} ${SANDBOX_GOCACHE}/hardlink`,
    ];
    const out = await runShell(
      agent,
      tries.map((t) => `if ${t} 2>/dev/null; then echo "WROTE: ${t.replace(/"/g, '')}"; fi`).join('\n') +
        `\nls ${master!} 2>&1; ls ${path.dirname(master!)} 2>&1; ls -d ${SANDBOX_GOCACHE}/00 && echo done`,
    );
    expect(out).not.toContain('WROTE');
    expect(out).toContain(`ls: cannot access '${master!}': No such file or directory`);
    expect(out).toContain('done');
    expect(treeHash(master!)).toBe(before);
  },
  300_000,
);

/** The PROBE line a run printed. */
function probeOf(output: string): Record<string, unknown> {
  const m = /PROBE (\{.*\}) END/.exec(output);
  if (!m) throw new Error(`no probe in: ${output.slice(0, 2000)}`);
  const probe = JSON.parse(m[1]!) as Record<string, unknown>;
  // go test runs a test in its package's folder (PWD): the gate's checkout lies elsewhere than the agent's worktree, as before.
  return { ...probe, env: (probe.env as string[]).filter((v) => !v.startsWith('PWD=')) };
}

goTest(
  `the gate's go runs and the agent's see the same build cache: the same GOCACHE, the same environment and mounts, warm alike${SKIPPED}`,
  async () => {
    const ws = writeTree(path.join(dir, 'probe'), PROBE);
    const agent = toolContext(sandbox, ws, ['go'], 180_000);
    const mine = probeOf((await callTool(agent, 'run_command', { command: 'go test -count=1 -v ./...' })).content);
    const gate = await gateRun(ws, 'go test -count=1 -v ./...');
    const theirs = probeOf(gate.output);
    expect(theirs).toEqual(mine);
    expect(mine).toMatchObject({ GOCACHE: '', XDG_CACHE_HOME: '', warm: true });
    expect(String(mine.goEnv).split('\n')[0]).toBe(SANDBOX_GOCACHE);
    expect(mine.mounts).toEqual([`${GO_CACHE_SEED} ro`]);
  },
  300_000,
);

goTest(
  `the copy is used: a command in a Go module compiles only the module's own packages, not testing or the standard library${SKIPPED}`,
  async () => {
    const ws = writeTree(path.join(dir, 'used'), VICTIM);
    const agent = toolContext(sandbox, ws, ['sh'], 180_000);
    const out = await runShell(agent, 'go test -count=1 -x ./... 2>&1');
    const compiled = [...out.matchAll(/compile -o \S+ .*?-p (\S+)/g)].map((m) => m[1]);
    // The module's package and its test main: proof that -x shows what is compiled.
    expect(compiled.sort()).toEqual(['example.com/victim', 'main']);
  },
  300_000,
);

goTest(
  `in a Go module, the agent's commands behave as elsewhere: a program missing from PATH is the same tool error, and what the command prints and exits with is its own${SKIPPED}`,
  async () => {
    const ws = writeTree(path.join(dir, 'plain'), { 'go.mod': 'module example.com/plain\n\ngo 1.22\n' });
    const agent = toolContext(sandbox, ws, ['no-such-program-loopwright', 'sh'], 60_000);
    expect(await callTool(agent, 'run_command', { command: 'no-such-program-loopwright' })).toEqual({
      content:
        'cannot run no-such-program-loopwright: no-such-program-loopwright was not found on the PATH inside the sandbox',
      isError: true,
    });
    expect(await runShell(agent, 'echo "$0 $# $*"; ls -A "$HOME/.cache"; exit 3')).toBe(
      'sh 0 \ngo-build\n[exit code 3]',
    );
  },
  120_000,
);
