#!/usr/bin/env node
// Checks the relative links of README.md, CONTRIBUTING.md and docs/*.md: every linked file
// exists inside the repository, and every #anchor names a heading of the linked Markdown
// file (GitHub's slugs). External links (http:, https:, mailto:) are not fetched.
// Usage: node scripts/check-doc-links.mjs   (exit 1 and one line per broken link)
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const docs = ['README.md', 'CONTRIBUTING.md'].filter((f) => existsSync(join(root, f)));
if (existsSync(join(root, 'docs'))) {
  for (const f of readdirSync(join(root, 'docs')).sort()) if (f.endsWith('.md')) docs.push(join('docs', f));
}

/** Markdown without fenced code blocks and inline code spans (links there are not links). */
function prose(text) {
  const out = [];
  let fence = null;
  for (const line of text.split('\n')) {
    const m = /^\s*(```+|~~~+)/.exec(line);
    if (m) {
      if (!fence) fence = m[1];
      else if (m[1].startsWith(fence[0]) && m[1].length >= fence.length) fence = null;
      out.push('');
      continue;
    }
    out.push(fence ? '' : line);
  }
  return out.join('\n');
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens, -N for repeats. */
function anchorsOf(file) {
  const seen = new Map();
  const anchors = new Set();
  for (const line of prose(readFileSync(file, 'utf8')).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const text = m[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links keep their text
      .replace(/<[^>]+>/g, ''); // inline HTML
    let slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    if (n > 0) slug = `${slug}-${n}`;
    anchors.add(slug);
  }
  // Explicit anchors: <a id="x"> / <a name="x">
  for (const m of readFileSync(file, 'utf8').matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
  return anchors;
}

/** Every inline link or image target [text](target "title") and reference definition [x]: target. */
function linksOf(text) {
  const links = [];
  const lines = prose(text)
    .replace(/`[^`\n]*`/g, (s) => ' '.repeat(s.length))
    .split('\n');
  lines.forEach((line, i) => {
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: m[1], line: i + 1 });
    const def = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)/.exec(line);
    if (def) links.push({ target: def[1], line: i + 1 });
  });
  return links;
}

const anchorCache = new Map();
const problems = [];
let checked = 0;
for (const doc of docs) {
  const file = join(root, doc);
  for (const { target, line } of linksOf(readFileSync(file, 'utf8'))) {
    if (!target || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, mailto:...
    checked++;
    const [pathPart, anchor] = target.split('#', 2);
    const linked = pathPart ? resolve(dirname(file), decodeURIComponent(pathPart)) : file;
    const where = `${doc}:${line}: ${target}`;
    if (linked !== root && !linked.startsWith(root + sep)) {
      problems.push(`${where}: points outside the repository (${relative(root, linked)})`);
      continue;
    }
    if (!existsSync(linked)) {
      problems.push(`${where}: no such file ${relative(root, linked)}`);
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (statSync(linked).isDirectory() || !linked.endsWith('.md')) {
      problems.push(`${where}: an anchor into a file that is not Markdown`);
      continue;
    }
    if (!anchorCache.has(linked)) anchorCache.set(linked, anchorsOf(linked));
    if (!anchorCache.get(linked).has(decodeURIComponent(anchor))) {
      problems.push(`${where}: no heading with anchor #${anchor} in ${relative(root, linked)}`);
    }
  }
}

for (const p of problems) console.error(p);
console.log(`${docs.length} files, ${checked} relative links, ${problems.length} broken`);
process.exit(problems.length ? 1 : 0);
