/**
 * Whether a run is one of the share `rate` of passed runs routed to a person for audit. Pure
 * and reproducible: decided from the workflow id (FNV-1a hash), so replays and reruns agree.
 */
export function inAuditSample(workflowId: string, rate: number): boolean {
  if (rate <= 0) return false;
  if (rate >= 1) return true;
  let hash = 0x811c9dc5;
  for (let i = 0; i < workflowId.length; i++) {
    hash ^= workflowId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash / 0x100000000 < rate;
}
