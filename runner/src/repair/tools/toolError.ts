/** A tool call the model got wrong: the message goes back to the model, the run goes on. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
}
