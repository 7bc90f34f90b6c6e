/**
 * Pure: whether a path names a file that usually holds credentials: dotenv files, private keys
 * and certificates' keys, package-manager and cloud credentials. A repository's own list
 * (`.forgeinclude`) never brings such a file into a cell, confirmed or not; only the user's
 * own `--include` naming it does. Names, not contents: the runner never reads the file to
 * decide.
 */
export function looksLikeSecret(relPath: string): boolean {
  const parts = relPath.split('/').filter(Boolean);
  const name = (parts.at(-1) ?? '').toLowerCase();
  if (parts.some((p) => SECRET_DIRS.has(p.toLowerCase()))) return true;
  if (name === '.env' || name.startsWith('.env.') || name.endsWith('.env')) return true;
  if (SECRET_FILES.has(name)) return true;
  if (SECRET_EXTENSIONS.some((ext) => name.endsWith(ext))) return true;
  return SECRET_PATTERNS.some((re) => re.test(name));
}

const SECRET_DIRS = new Set(['.ssh', '.gnupg', '.aws', '.azure', '.kube', '.docker', 'gcloud', 'secrets', '.secrets']);

const SECRET_FILES = new Set([
  '.npmrc',
  '.yarnrc.yml',
  '.pypirc',
  '.netrc',
  '_netrc',
  '.git-credentials',
  '.pgpass',
  '.htpasswd',
  'credentials',
  'credentials.json',
  'service-account.json',
  'secrets.json',
  'secrets.yml',
  'secrets.yaml',
  '.envrc',
  'auth.json',
  'token',
  'token.json',
]);

const SECRET_EXTENSIONS = ['.pem', '.key', '.p12', '.pfx', '.jks', '.keystore', '.kdbx', '.gpg', '.asc', '.crt.key', '.ppk'];

const SECRET_PATTERNS = [/^id_(rsa|dsa|ecdsa|ed25519)(\.|$)/, /secret/, /credential/, /password/, /private[-_.]?key/, /\.tfvars$/];
