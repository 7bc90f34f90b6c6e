// Module resolution hook: `import 'vscode'` in extension code resolves to the fake API
// (test/extension/fakes/vscode.ts) under mocha; the real one exists only in an extension host.
export async function resolve(specifier, context, next) {
  if (specifier === 'vscode') return { url: new URL('../extension/fakes/vscode.ts', import.meta.url).href, shortCircuit: true };
  return next(specifier, context);
}
