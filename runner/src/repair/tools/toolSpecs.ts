/** The tools as a model sees them (JSON Schema parameters), shared by every model client. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

const obj = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});
const s = (description: string) => ({ type: 'string', description });
const i = (description: string) => ({ type: 'integer', minimum: 1, description });

export const TOOL_SPECS: ToolSpec[] = [
  {
    name: 'list_files',
    description: 'List a directory of the repository.',
    parameters: obj({ path: s('directory relative to the repository root (default ".")') }),
  },
  {
    name: 'read_file',
    description: 'Read a text file with line numbers (at most 400 lines per call).',
    parameters: obj(
      { path: s('file path relative to the repository root'), start_line: i('first line (1-based)'), end_line: i('last line') },
      ['path'],
    ),
  },
  {
    name: 'search',
    description: 'Find lines containing a literal text.',
    parameters: obj({ pattern: s('text to find'), path: s('directory to search (default ".")') }, ['pattern']),
  },
  {
    name: 'write_file',
    description: 'Create or overwrite a file.',
    parameters: obj({ path: s('file path relative to the repository root'), content: s('the whole new content') }, ['path', 'content']),
  },
  {
    name: 'edit_file',
    description: 'Replace old_string with new_string; old_string must occur exactly once.',
    parameters: obj({ path: s('file path'), old_string: s('exact text to replace'), new_string: s('replacement text') }, [
      'path',
      'old_string',
      'new_string',
    ]),
  },
  {
    name: 'run_tests',
    description: "Run the project's tests in a fresh sandbox and return the exit code and output.",
    parameters: obj({}),
  },
  {
    name: 'run_command',
    description: 'Run one shell command in a fresh sandbox on the repository.',
    parameters: obj({ command: s('the shell command') }, ['command']),
  },
  {
    name: 'finish',
    description: 'Stop: the fix is done (or you give up).',
    parameters: obj({ summary: s('what you changed and why') }, ['summary']),
  },
];
