import assert from 'node:assert/strict';
import {
  DRAFT_MARKER,
  issueDraftTemplate,
  issueFileSizeError,
  issueFromDraft,
  issueFromFileBytes,
  MAX_ISSUE_FILE_BYTES,
} from '../../extension/src/flows/issueText.js';

const bytes = (s: string) => new TextEncoder().encode(s);

describe('the issue as written in a draft or read from a file (pure)', () => {
  describe('the issue draft', () => {
    it('the template is an empty first line to write on, then one comment line saying what to write; it gives an empty issue', () => {
      const t = issueDraftTemplate(null);
      const lines = t.split('\n');
      assert.equal(lines[0], '', 'the tab, named after the first line, shows the title once typed');
      assert.ok(lines[2]!.startsWith(DRAFT_MARKER) && lines[2]!.endsWith('-->'), 'the comment is on one line');
      assert.match(t, /Its first line names the run/);
      assert.match(t, /failing test, or steps to reproduce/);
      assert.match(t, /Start Fix/);
      assert.equal(issueFromDraft(t), '');
      assert.equal(issueFromDraft(`${t}   \n\n\t\n`), '');
    });

    it('the template names untracked files the attempts will not see', () => {
      assert.match(issueDraftTemplate('2 untracked file(s) are not part of the attempts'), /Note: 2 untracked file\(s\)/);
    });

    it('the issue is the text without the comment; newlines, indentation and other comments inside are kept', () => {
      const body =
        '# average() is wrong\n\nSteps:\n\n    average([2, 4])  # 2.0, not 3.0\n\n<!-- a comment of the user -->\n- test_average_of_two fails';
      assert.equal(issueFromDraft(`${body}${issueDraftTemplate(null)}`), body, 'written on the first line');
      assert.equal(issueFromDraft(`\n\n${body}\n\n${issueDraftTemplate(null)}\n`), body, 'blank lines around it');
      assert.equal(
        issueFromDraft(`${body.replace(/\n/g, '\r\n')}${issueDraftTemplate(null).replace(/\n/g, '\r\n')}`),
        body,
        'CRLF read as LF',
      );
    });

    it('the comment is left out wherever it is, and a draft without it is taken whole', () => {
      assert.equal(issueFromDraft('title\n<!-- Forge: write here -->\nbody'), 'title\nbody');
      assert.equal(issueFromDraft('<!-- Forge: x --> title on the comment line'), 'title on the comment line');
      assert.equal(issueFromDraft('just one line'), 'just one line');
    });
  });

  describe('issue files', () => {
    it('reads Markdown or text (a BOM and CRLF dropped)', () => {
      assert.deepEqual(issueFromFileBytes('issue.md', bytes('\ufeff# Title\r\nbody\r\n')), { ok: true, text: '# Title\nbody\n' });
    });

    it('refuses an empty, a binary or a too-large file in one line naming it', () => {
      const refuse = (b: Uint8Array) => {
        const r = issueFromFileBytes('docs/issue.md', b);
        assert.equal(r.ok, false);
        return (r as { error: string }).error;
      };
      assert.equal(refuse(bytes(' \n\t\n')), 'docs/issue.md is empty');
      assert.match(refuse(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0])), /^docs\/issue\.md is not a text file/);
      assert.match(refuse(new Uint8Array([0x61, 0xff, 0xfe, 0x62])), /is not a text file/, 'not UTF-8');
      assert.match(
        refuse(new Uint8Array(MAX_ISSUE_FILE_BYTES + 1).fill(0x61)),
        /^docs\/issue\.md is 201 KB; an issue file may be at most 200 KB$/,
      );
      assert.equal(issueFromFileBytes('a.md', new Uint8Array(MAX_ISSUE_FILE_BYTES).fill(0x61)).ok, true, 'exactly 200 KB is fine');
      for (const e of [refuse(bytes('')), issueFileSizeError('big.txt', 10 * 1024 * 1024)!]) assert.doesNotMatch(e, /\n/);
      assert.equal(issueFileSizeError('small.txt', 10), null);
    });
  });
});
