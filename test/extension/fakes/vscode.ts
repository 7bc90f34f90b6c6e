/**
 * A fake of the part of the VS Code API the extension uses, for unit tests and the
 * activation benchmark (the model: vscode-pull-request-github's mocks). It records what the
 * extension shows and lets a test script the user's answers via `fake`.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

type Listener<T> = (e: T) => void;

export class EventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  readonly event = (l: Listener<T>) => {
    this.listeners.add(l);
    return { dispose: () => this.listeners.delete(l) };
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class Disposable {
  constructor(private readonly f: () => void = () => undefined) {}
  static from(...ds: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => ds.forEach((d) => d.dispose()));
  }
  dispose(): void {
    this.f();
  }
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}
export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}
export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}
export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
}

export class ThemeColor {
  constructor(readonly id: string) {}
}
export class ThemeIcon {
  constructor(
    readonly id: string,
    readonly color?: ThemeColor,
  ) {}
}
export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: string;
  iconPath?: ThemeIcon;
  contextValue?: string;
  command?: { command: string; title: string; arguments?: unknown[] };
  constructor(
    readonly label: string,
    readonly collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
    readonly query: string,
  ) {}
  static file(path: string): Uri {
    return new Uri('file', path, '');
  }
  static from(c: { scheme: string; path?: string; query?: string }): Uri {
    return new Uri(c.scheme, c.path ?? '', c.query ?? '');
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, join(base.path, ...parts), '');
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}:${this.path}${this.query ? `?${this.query}` : ''}`;
  }
}

export class RelativePattern {
  constructor(
    readonly base: unknown,
    readonly pattern: string,
  ) {}
}

/** An in-memory text document: untitled ones are what openTextDocument({ content }) makes. */
export class FakeTextDocument {
  isClosed = false;
  /** Unsaved text; save() clears it unless `saveFails`. */
  isDirty = false;
  saveFails = false;
  get isUntitled(): boolean {
    return this.uri.scheme === 'untitled';
  }
  async save(): Promise<boolean> {
    if (this.saveFails) return false;
    this.isDirty = false;
    return true;
  }
  constructor(
    readonly uri: Uri,
    readonly languageId: string,
    public text: string,
  ) {}
  getText(): string {
    return this.text;
  }
}

export class LanguageModelTextPart {
  constructor(readonly value: string) {}
}
export class LanguageModelToolCallPart {
  constructor(
    readonly callId: string,
    readonly name: string,
    readonly input: object,
  ) {}
}
export class LanguageModelToolResultPart {
  constructor(
    readonly callId: string,
    readonly content: unknown[],
  ) {}
}
export class LanguageModelChatMessage {
  constructor(
    readonly role: 'user' | 'assistant',
    readonly content: unknown,
  ) {}
  static User(content: unknown): LanguageModelChatMessage {
    return new LanguageModelChatMessage('user', content);
  }
  static Assistant(content: unknown): LanguageModelChatMessage {
    return new LanguageModelChatMessage('assistant', content);
  }
}

export interface ShownMessage {
  level: 'info' | 'warning' | 'error';
  text: string;
  items: string[];
}

/** Test control: answers to give and everything shown. */
export const fake = {
  messages: [] as ShownMessage[],
  executed: [] as { command: string; args: unknown[] }[],
  contexts: new Map<string, unknown>(),
  config: new Map<string, unknown>(),
  quickPickAnswers: [] as ((items: { label: string }[]) => unknown)[],
  inputAnswers: [] as (string | undefined)[],
  openDialogAnswers: [] as (Uri[] | undefined)[],
  messageAnswers: [] as (string | undefined)[],
  languageModels: [] as unknown[],
  statusItems: [] as { text: string; tooltip: unknown; backgroundColor: ThemeColor | undefined; command: unknown }[],
  treeViews: new Map<string, { treeDataProvider: unknown }>(),
  contentProviders: new Map<string, { provideTextDocumentContent(uri: Uri): unknown }>(),
  webviews: [] as { title: string; html: string; posted: unknown[]; receive: (m: unknown) => void }[],
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  workspaceFolders: [] as { uri: Uri; name: string; index: number }[],
  progress: [] as string[],
  cancelListeners: [] as (() => void)[],
  cancelProgress(): void {
    for (const l of this.cancelListeners.splice(0)) l();
  },
  /** The user typing: replaces the active editor's whole text. */
  typeInActiveEditor(text: string): void {
    const doc = window.activeTextEditor?.document;
    if (!(doc instanceof FakeTextDocument)) throw new Error('no in-memory document is the active editor');
    doc.text = text;
  },
  /** Closes a document as the user would (its tab closed, nothing saved). */
  closeDocument(doc: FakeTextDocument): void {
    closeDocument(doc);
  },
  reset(): void {
    this.progress = [];
    this.cancelListeners = [];
    this.messages = [];
    this.executed = [];
    this.contexts.clear();
    this.config.clear();
    this.quickPickAnswers = [];
    this.inputAnswers = [];
    this.openDialogAnswers = [];
    window.activeTextEditor = undefined;
    workspace.textDocuments.length = 0;
    // Listeners of an earlier activation would otherwise still answer.
    activeEditorChanged.dispose();
    documentClosed.dispose();
    untitledCount = 0;
    this.messageAnswers = [];
    this.languageModels = [];
    this.statusItems = [];
    this.treeViews.clear();
    this.contentProviders.clear();
    this.webviews = [];
    this.commands.clear();
    this.workspaceFolders = [];
  },
};

const message =
  (level: ShownMessage['level']) =>
  async (text: string, ...rest: unknown[]) => {
    const items = rest.filter((r): r is string => typeof r === 'string');
    fake.messages.push({ level, text, items });
    return fake.messageAnswers.shift();
  };

const activeEditorChanged = new EventEmitter<{ document: { uri: Uri } } | undefined>();
const documentClosed = new EventEmitter<{ uri: Uri }>();
let untitledCount = 0;

function closeDocument(doc: FakeTextDocument): void {
  const i = workspace.textDocuments.indexOf(doc);
  if (i >= 0) workspace.textDocuments.splice(i, 1);
  doc.isClosed = true;
  if (window.activeTextEditor?.document === doc) {
    window.activeTextEditor = undefined;
    activeEditorChanged.fire(undefined);
  }
  documentClosed.fire(doc);
}

export const window = {
  createOutputChannel: () => ({ info() {}, warn() {}, error() {}, trace() {}, debug() {}, appendLine() {}, show() {}, dispose() {} }),
  createStatusBarItem: () => {
    const item = {
      text: '',
      tooltip: undefined as unknown,
      backgroundColor: undefined as ThemeColor | undefined,
      command: undefined as unknown,
      name: '',
      show() {},
      hide() {},
      dispose() {},
    };
    fake.statusItems.push(item);
    return item;
  },
  createTreeView: (id: string, options: { treeDataProvider: unknown }) => {
    fake.treeViews.set(id, options);
    return { message: undefined as string | undefined, dispose() {} };
  },
  showInformationMessage: message('info'),
  showWarningMessage: message('warning'),
  showErrorMessage: message('error'),
  showQuickPick: async (items: { label: string }[] | string[]) => {
    const answer = fake.quickPickAnswers.shift();
    return answer ? answer(items as { label: string }[]) : undefined;
  },
  showInputBox: async () => fake.inputAnswers.shift(),
  showOpenDialog: async () => fake.openDialogAnswers.shift(),
  showWorkspaceFolderPick: async () => fake.workspaceFolders[0],
  activeTextEditor: undefined as { document: { uri: Uri } } | undefined,
  get visibleTextEditors() {
    return window.activeTextEditor ? [window.activeTextEditor] : [];
  },
  onDidChangeActiveTextEditor: activeEditorChanged.event,
  /** The document becomes the active editor (the event fires when it changes). */
  showTextDocument: async (doc: { uri: Uri }) => {
    if (window.activeTextEditor?.document === doc) return window.activeTextEditor;
    const editor = { document: doc };
    window.activeTextEditor = editor;
    activeEditorChanged.fire(editor);
    return editor;
  },
  /** Progress lines are recorded; fake.cancelProgress() presses the notification's Cancel. */
  withProgress: async <T>(
    _o: unknown,
    task: (p: { report(v: { message?: string }): void }, t: { onCancellationRequested(l: () => void): void }) => Promise<T>,
  ) =>
    task(
      { report: (v) => void (v.message && fake.progress.push(v.message)) },
      { onCancellationRequested: (l) => void fake.cancelListeners.push(l) },
    ),
  createWebviewPanel: (_type: string, title: string) => {
    const received = new EventEmitter<unknown>();
    const record = { title, html: '', posted: [] as unknown[], receive: (m: unknown) => received.fire(m) };
    fake.webviews.push(record);
    const webview = {
      cspSource: 'vscode-resource:',
      asWebviewUri: (u: Uri) => u,
      set html(v: string) {
        record.html = v;
      },
      get html() {
        return record.html;
      },
      onDidReceiveMessage: received.event,
      postMessage: async (m: unknown) => {
        record.posted.push(m);
        return true;
      },
    };
    return { title, webview, reveal() {}, onDidDispose: () => ({ dispose() {} }), dispose() {} };
  },
  tabGroups: { all: [] as { tabs: unknown[] }[], close: async () => true },
};

export const commands = {
  registerCommand: (id: string, f: (...args: unknown[]) => unknown) => {
    fake.commands.set(id, f);
    return { dispose: () => fake.commands.delete(id) };
  },
  executeCommand: async (command: string, ...args: unknown[]) => {
    fake.executed.push({ command, args });
    if (command === 'setContext') fake.contexts.set(args[0] as string, args[1]);
    // Reverting an untitled document leaves nothing to save, so its editor closes without a prompt.
    if (command === 'workbench.action.revertAndCloseActiveEditor') {
      const doc = window.activeTextEditor?.document;
      if (doc instanceof FakeTextDocument) closeDocument(doc);
    }
    const own = fake.commands.get(command);
    return own ? own(...args) : undefined;
  },
};

export const workspace = {
  getConfiguration: (section: string) => ({
    get: <T>(key: string, fallback: T): T =>
      fake.config.has(`${section}.${key}`) ? (fake.config.get(`${section}.${key}`) as T) : fallback,
  }),
  registerTextDocumentContentProvider: (scheme: string, provider: { provideTextDocumentContent(uri: Uri): unknown }) => {
    fake.contentProviders.set(scheme, provider);
    return { dispose() {} };
  },
  get workspaceFolders() {
    return fake.workspaceFolders;
  },
  onDidChangeConfiguration: () => ({ dispose() {} }),
  onDidChangeWorkspaceFolders: () => ({ dispose() {} }),
  findFiles: async () => [],
  openedDocuments: [] as Uri[],
  /** Open in-memory documents (untitled ones). */
  textDocuments: [] as FakeTextDocument[],
  onDidCloseTextDocument: documentClosed.event,
  openTextDocument: async (what: Uri | { language?: string; content?: string }) => {
    if (what instanceof Uri) {
      workspace.openedDocuments.push(what);
      return { uri: what };
    }
    untitledCount += 1;
    const doc = new FakeTextDocument(
      Uri.from({ scheme: 'untitled', path: `Untitled-${untitledCount}` }),
      what.language ?? 'plaintext',
      what.content ?? '',
    );
    workspace.textDocuments.push(doc);
    return doc;
  },
  getWorkspaceFolder: (u: Uri) => fake.workspaceFolders.find((f) => u.path === f.uri.path || u.path.startsWith(`${f.uri.path}/`)),
  /** Files on the real disk, for file: URIs. */
  fs: {
    stat: async (u: Uri) => ({ size: statSync(u.fsPath).size }),
    readFile: async (u: Uri) => new Uint8Array(readFileSync(u.fsPath)),
  },
  asRelativePath: (u: Uri) => u.path,
};

export const languages = { setTextDocumentLanguage: async (doc: unknown) => doc };

export const lm = {
  selectChatModels: async () => fake.languageModels,
};

/** A minimal ExtensionContext over a real extension directory (for dist/ files). */
export function fakeExtensionContext(extensionPath: string) {
  const secrets = new Map<string, string>();
  return {
    subscriptions: [] as { dispose(): unknown }[],
    extensionPath,
    extensionUri: Uri.file(extensionPath),
    secrets: {
      get: async (k: string) => secrets.get(k),
      store: async (k: string, v: string) => void secrets.set(k, v),
      delete: async (k: string) => void secrets.delete(k),
      onDidChange: () => ({ dispose() {} }),
    },
    workspaceState: fakeMemento(),
    globalState: fakeMemento(),
  };
}

/** A Memento kept in memory (workspaceState/globalState). */
export function fakeMemento() {
  const values = new Map<string, unknown>();
  return {
    keys: () => [...values.keys()],
    get: <T>(key: string, fallback?: T): T | undefined => (values.has(key) ? (values.get(key) as T) : fallback),
    update: async (key: string, value: unknown) => void values.set(key, value),
  };
}
