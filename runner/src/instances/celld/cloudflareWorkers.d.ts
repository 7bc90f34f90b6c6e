// The slice of the Workers runtime API (workerd / Celld) the InstanceCell worker uses.
declare module 'cloudflare:workers' {
  export interface SqlStorageCursor {
    toArray(): Array<Record<string, unknown>>;
  }
  export interface DurableObjectStorage {
    sql: { exec(query: string, ...bindings: unknown[]): SqlStorageCursor };
    transactionSync<T>(fn: () => T): T;
    setAlarm(scheduledTime: number): Promise<void>;
    deleteAlarm(): Promise<void>;
    getAlarm(): Promise<number | null>;
  }
  export interface DurableObjectState {
    storage: DurableObjectStorage;
    blockConcurrencyWhile<T>(fn: () => Promise<T>): Promise<T>;
  }
  export abstract class DurableObject<Env = unknown> {
    protected ctx: DurableObjectState;
    protected env: Env;
    constructor(ctx: DurableObjectState, env: Env);
  }
}
