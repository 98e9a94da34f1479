/** FNV-1a, 32 bits, as 8 hex digits: a stable short hash without Node built-ins. */
export function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/** Longest slug kept whole; longer ones are cut and get a hash of the full name. */
export const MAX_SLUG = 60;

/**
 * The stable key of a test name (a work item): lower-case letters, digits and dashes, e.g.
 * `add adds two numbers` → `add-adds-two-numbers`. Names that slug to nothing, or longer than
 * 60 characters, end with an 8-hex hash of the full name so different names keep different keys.
 */
export function testKey(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (slug && slug.length <= MAX_SLUG) return slug;
  const head = slug.slice(0, MAX_SLUG).replace(/-+$/g, '');
  return head ? `${head}-${fnv1a(name)}` : `test-${fnv1a(name)}`;
}
