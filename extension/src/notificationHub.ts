/** Fan-out of the runner's notifications to whoever listens (views, the fix flow, panels). No `vscode` import. */
export class NotificationHub {
  private readonly handlers = new Map<string, Set<(params: never) => void>>();

  on<P>(method: string, handler: (params: P) => void): { dispose(): void } {
    const set = this.handlers.get(method) ?? new Set();
    set.add(handler as (params: never) => void);
    this.handlers.set(method, set);
    return { dispose: () => set.delete(handler as (params: never) => void) };
  }

  dispatch(method: string, params: unknown): void {
    for (const h of this.handlers.get(method) ?? []) h(params as never);
  }
}
