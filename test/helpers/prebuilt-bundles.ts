import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { BUNDLE_FILES } from '../../workers/workflow-bundle';

const ROOT = path.join(__dirname, '..', '..');

/** What `npm run build` compiles and bundles from (tsconfig.build.json's folders) and what pins its packages. */
const SOURCE_DIRS = [
  'common',
  'crypto',
  'workflows',
  'activities',
  'workers',
  'client',
  'loops',
  'server',
  'model-server',
  'scripts',
  'harness',
  'trace',
];
const PINNING_FILES = [
  'package.json',
  'package-lock.json',
  'node_modules/.package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
];

/** The latest modification under `dir`: its files and its folders (a folder changes when a file is added, removed or renamed). */
function latestChange(dir: string): number {
  let latest = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, latestChange(full));
    else latest = Math.max(latest, statSync(full).mtimeMs);
  }
  return latest;
}

/**
 * The two workflow bundles `npm run build` wrote to dist/ (plain and encrypted), when they are
 * newer than every source file, folder and package pin they could have been built from, so
 * bundling the sources again would give the same workflow code; undefined otherwise (never
 * built, or anything changed since the build: the caller bundles the sources). `npm test` builds
 * right before Jest, so its global setup reuses them instead of bundling twice more.
 */
export function freshPrebuiltBundles(): { plain: string; encrypted: string } | undefined {
  const plain = path.join(ROOT, 'dist', BUNDLE_FILES.plain);
  const encrypted = path.join(ROOT, 'dist', BUNDLE_FILES.encrypted);
  if (!existsSync(plain) || !existsSync(encrypted)) return undefined;
  const built = Math.min(statSync(plain).mtimeMs, statSync(encrypted).mtimeMs);
  const sources = SOURCE_DIRS.map((d) => path.join(ROOT, d)).filter((d) => existsSync(d));
  const pins = PINNING_FILES.map((f) => path.join(ROOT, f)).filter((f) => existsSync(f));
  const changed = Math.max(...sources.map(latestChange), ...pins.map((f) => statSync(f).mtimeMs));
  return changed < built ? { plain, encrypted } : undefined;
}
