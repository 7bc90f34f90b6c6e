/**
 * Pure: whether a path names a file that usually holds credentials, by any of its components:
 * dotenv files and directories, private keys and keystores, package-manager, cloud, database
 * and infrastructure credentials, and directories that hold them (`.ssh`, `credentials/`,
 * `keys/`). A repository's own request (`.forgeinclude`, a shared directory of its
 * `.forge/config.json`) never brings such a file into a cell, confirmed or not; only the user's
 * own `--include` / `--share` naming it does. Names, not contents: the runner never reads the
 * file to decide. Errs on the side of refusing: a false positive costs one `--include`.
 */
export function looksLikeSecret(relPath: string): boolean {
  const parts = relPath
    .split('/')
    .filter(Boolean)
    .map((p) => p.toLowerCase());
  if (parts.some((p) => SECRET_DIRS.has(p) || isSecretName(p))) return true;
  // A credentials file of a tool's config directory: .config/gh/hosts.yml, .config/gcloud/...
  return parts.some((p, i) => p === '.config' && CONFIG_TOOLS.has(parts[i + 1] ?? ''));
}

function isSecretName(name: string): boolean {
  if (name.startsWith('.env') || name.endsWith('.env') || name.includes('.env.')) return true;
  if (SECRET_FILES.has(name)) return true;
  if (SECRET_EXTENSIONS.some((ext) => name.endsWith(ext))) return true;
  return SECRET_PATTERNS.some((re) => re.test(name));
}

const SECRET_DIRS = new Set([
  '.ssh',
  '.gnupg',
  '.aws',
  '.azure',
  '.kube',
  '.docker',
  'gcloud',
  '.terraform',
  'secrets',
  '.secrets',
  'credentials',
  'private',
  'keys',
  '.vault',
]);

const CONFIG_TOOLS = new Set(['gh', 'gcloud', 'hub', 'op', 'doctl', 'heroku', 'netlify', 'vercel', 'wrangler', 'rclone']);

const SECRET_FILES = new Set([
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.pypirc',
  '.netrc',
  '_netrc',
  '.git-credentials',
  '.pgpass',
  '.my.cnf',
  '.s3cfg',
  '.boto',
  '.htpasswd',
  '.dockercfg',
  '.dev.vars',
  '.vault-token',
  '.envrc',
  'kubeconfig',
  'credentials',
  'auth.json',
  'token',
  'token.json',
  'master.key',
  'known_hosts',
  'authorized_keys',
]);

const SECRET_EXTENSIONS = [
  '.pem',
  '.key',
  '.p12',
  '.pfx',
  '.jks',
  '.keystore',
  '.kdbx',
  '.gpg',
  '.asc',
  '.ppk',
  '.tfstate',
  '.tfstate.backup',
  '.tfvars',
];

const SECRET_PATTERNS = [
  /^id_(rsa|dsa|ecdsa|ed25519)/,
  /secret/,
  /credential/,
  /passw(or)?d/,
  /private[-_.]?key/,
  /api[-_.]?key/,
  /access[-_.]?token/,
  /service[-_.]?account/,
  /\.tfstate/,
];
