import path from 'node:path';

/**
 * Variables whose value, when it is a path, names a secret of the worker's: a key ring, a TLS
 * key or certificate, a credentials file, a token file, an agent socket. The name decides, so a
 * secret anywhere the sandbox mounts (`/etc/temporal/tls/worker.key` in the shipped compose file,
 * a key ring in `/etc/loopwright`) is masked, whichever variable the operator used for it.
 */
const SECRET_PATH_NAME =
  /KEY|TOKEN|SECRET|PASSW|CREDENTIAL|CERT|TLS|AUTH|PRIVATE|SIGNER|GRANT|KUBECONFIG|NETRC|PGPASS|KEYTAB/i;

/** More variables that name credentials without saying so. */
const CREDENTIAL_VARIABLES = new Set([
  'AWS_CONFIG_FILE',
  'DOCKER_CONFIG',
  'GNUPGHOME',
  'NPM_CONFIG_USERCONFIG',
  'PIP_CONFIG_FILE',
  'CLOUDSDK_CONFIG',
  'AZURE_CONFIG_DIR',
  'VAULT_CONFIG_PATH',
]);

/** Public CA bundles: nothing secret in them, and masking one would only break TLS tools. */
const PUBLIC_VARIABLES = new Set([
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'NODE_EXTRA_CA_CERTS',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
  'GIT_SSL_CAINFO',
  'GIT_SSL_CAPATH',
]);

/** Names of key material: the folder holding it usually holds other keys too (the shipped compose file mounts one folder of every service's keys). */
const KEY_MATERIAL = /KEY|CERT|TLS|CREDENTIAL|PRIVATE|KEYTAB/i;

/** Folders never masked whole: the system's roots and the places shared by everything. */
const SHARED_FOLDERS = new Set(['/', '/etc', '/usr', '/usr/local', '/opt', '/srv', '/var', '/tmp', '/home', '/root']);

/**
 * The paths the worker's environment names as secrets (see SECRET_PATH_NAME), to mask in the
 * sandbox: each absolute path in the value (a `:`-separated list counts too), and, for key
 * material, the folder that holds it when that folder is at least three levels deep and not a
 * shared one (`/etc/temporal/tls` for `/etc/temporal/tls/worker.key`; only the file for
 * `/etc/worker.key`). Values that are not absolute paths (a key itself, a URL) are ignored.
 */
export function secretPathsOf(env: Record<string, string | undefined>): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!value || PUBLIC_VARIABLES.has(name)) continue;
    if (!SECRET_PATH_NAME.test(name) && !CREDENTIAL_VARIABLES.has(name)) continue;
    const parts = value.split(':').map((p) => p.trim());
    if (!parts.every((p) => path.isAbsolute(p))) continue;
    for (const p of parts.map((p) => path.normalize(p))) {
      found.push(p);
      const folder = path.dirname(p);
      if (KEY_MATERIAL.test(name) && folder.split('/').length >= 4 && !SHARED_FOLDERS.has(folder)) found.push(folder);
    }
  }
  return [...new Set(found)];
}
