import { countTests, emptyReport, type TestOutcome, type TestReport } from './testReport.js';

/** A start tag longer than this is not a report's (names are read from its first part only). */
const MAX_START_TAG = 64 * 1024;

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function attribute(tag: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`).exec(tag);
  const raw = m ? (m[1] ?? m[2]) : undefined;
  return raw?.replace(/&(amp|lt|gt|quot|apos);/g, (_, e: string) => ENTITIES[e]!);
}

/**
 * Pure: JUnit XML (surefire, Gradle, pytest --junitxml, jest-junit...) as a report: one
 * outcome per `<testcase>`, failed when it holds a `<failure>` or `<error>`, skipped when it
 * holds `<skipped>`. Null when the text is not JUnit XML.
 *
 * A single forward scan, linear in the input, instead of a general XML parser: the reports
 * (and consoles that print XML) are written by the code under test, and a general parser
 * took 25 s and 540 MB on one adversarial 8 MiB file (a red-team finding). Nothing here is
 * expanded (no entities beyond the five predefined, no DTD), and it never throws.
 */
export function parseJunitXml(xml: string): TestReport | null {
  return readTestcases(xml, 'junit', (tag) => [attribute(tag, 'classname'), attribute(tag, 'name')].filter(Boolean).join('.'));
}

/**
 * Pure: the JUnit XML pytest writes with `-o junit_family=xunit1` (each testcase has its
 * `file`), named as pytest's console names it, by node id: `tests/test_x.py::TestK::test_m[1]`
 * from file="tests/test_x.py" classname="tests.test_x.TestK" name="test_m[1]". A testcase
 * without a file, or whose class is not under its file's module, keeps JUnit's dotted name.
 */
export function parsePytestJunitXml(xml: string): TestReport | null {
  const report = readTestcases(xml, 'pytest', (tag) => {
    const file = attribute(tag, 'file');
    const classname = attribute(tag, 'classname') ?? '';
    const name = attribute(tag, 'name') ?? '';
    const module = file?.replace(/\.py$/, '').replaceAll('/', '.');
    if (!file || !name || !module || (classname !== module && !classname.startsWith(`${module}.`)))
      return [classname, name].filter(Boolean).join('.');
    const classes = classname
      .slice(module.length + 1)
      .split('.')
      .filter(Boolean);
    return [file, ...classes, name].join('::');
  });
  return report && report.tests.size > 0 ? report : null;
}

function readTestcases(xml: string, framework: string, nameOf: (tag: string) => string): TestReport | null {
  if (!/<testsuites?\b/.test(xml)) return null;
  const r = emptyReport(framework);
  let at = 0;
  while (at < xml.length) {
    const open = xml.indexOf('<testcase', at);
    if (open < 0) break;
    const next = xml.charAt(open + 9);
    if (!/[\s/>]/.test(next)) {
      at = open + 9;
      continue;
    }
    const tagEnd = xml.indexOf('>', open);
    if (tagEnd < 0) break;
    const tag = xml.slice(open, Math.min(tagEnd + 1, open + MAX_START_TAG));
    let outcome: TestOutcome = 'pass';
    if (xml.charAt(tagEnd - 1) === '/') {
      at = tagEnd + 1;
    } else {
      const close = xml.indexOf('</testcase>', tagEnd);
      const end = close < 0 ? xml.length : close;
      // What a test printed (system-out in CDATA, comments) is not an outcome element.
      const body = withoutOpaqueText(xml.slice(tagEnd + 1, end));
      outcome = /<(?:failure|error)[\s/>]/.test(body) ? 'fail' : /<skipped[\s/>]/.test(body) ? 'skip' : 'pass';
      at = close < 0 ? xml.length : close + 11;
    }
    const name = nameOf(tag);
    if (!name) continue;
    // The same name twice (dynamic tests sharing a display name, a rerun): failed if either failed.
    if (r.tests.get(name) !== 'fail') r.tests.set(name, outcome);
  }
  return countTests(r);
}

/** The text without CDATA sections and comments, in one forward pass (an unclosed one runs to the end). */
function withoutOpaqueText(text: string): string {
  let out = '';
  let at = 0;
  let cdata = text.indexOf('<![CDATA[');
  let comment = text.indexOf('<!--');
  for (;;) {
    // Each marker is searched again only once the scan has passed it: linear in the text.
    if (cdata >= 0 && cdata < at) cdata = text.indexOf('<![CDATA[', at);
    if (comment >= 0 && comment < at) comment = text.indexOf('<!--', at);
    const start = cdata < 0 ? comment : comment < 0 ? cdata : Math.min(cdata, comment);
    if (start < 0) return out + text.slice(at);
    out += text.slice(at, start);
    const closer = start === cdata ? ']]>' : '-->';
    const end = text.indexOf(closer, start);
    if (end < 0) return out;
    at = end + closer.length;
  }
}
