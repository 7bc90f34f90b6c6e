// The InstanceCell as a Durable Objects worker: the same pure core as the embedded cell,
// with state, alarms and evidence in the object's SQLite storage. Runs in workerd locally
// and on a Celld v0.2.1 fleet (celld/wrangler.jsonc). Every route but none is signed.
import canonicalize from 'canonicalize';
import { DurableObject, type DurableObjectState } from 'cloudflare:workers';
import { CellInputSchema, type InstanceCellState, InstanceCellStateSchema, PROTOCOL_VERSION } from '../../protocol/instanceCell.js';
import { capabilityDescriptor } from '../capabilityMatrix.js';
import { DEFAULT_CORE_SETTINGS, emptyCell, step } from '../core/instanceCellCore.js';
import { HEADER_SIGNATURE, HEADER_TIMESTAMP, sha256OfText, signResponse, verifyRequest } from './signedRequest.js';
import { probeWorkerCapabilities } from './workerCapabilityProbe.js';

interface Env {
  INSTANCE_CELL: {
    idFromName(name: string): unknown;
    get(id: unknown): { fetch(request: Request): Promise<Response> };
  };
  FORGE_CELLD_SECRET: string;
  CELLD_VERSION: string;
}

const MAX_BODY = 256 * 1024;

export class InstanceCell extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec('CREATE TABLE IF NOT EXISTS cell (k INTEGER PRIMARY KEY CHECK (k = 1), state_json TEXT NOT NULL)');
      sql.exec('CREATE TABLE IF NOT EXISTS alarms (name TEXT PRIMARY KEY, due_at INTEGER NOT NULL, attempt INTEGER NOT NULL)');
      sql.exec('CREATE TABLE IF NOT EXISTS evidence (seq INTEGER PRIMARY KEY AUTOINCREMENT, operation_id TEXT, json TEXT NOT NULL)');
      // Alarms are rows; the runtime alarm is re-armed from them at every start.
      await this.rearm();
    });
  }

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const [, , , instanceId, route] = url.pathname.split('/');
    if (!instanceId) return json(400, { error: 'instance id missing' });
    if (request.method === 'POST' && route === 'step') {
      const parsed = CellInputSchema.safeParse(await request.json().catch(() => null));
      if (!parsed.success) return json(400, { error: `invalid cell input: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}` });
      const input = parsed.data;
      if (input.kind === 'command') {
        // The cell binds the operation to its own hash of the request, not the caller's.
        const own = await sha256OfText(canonicalize(input.request) ?? '');
        if (own !== input.hash) return json(400, { error: 'request hash does not match the canonical request' });
        if (input.request.instance_id !== decodeURIComponent(instanceId)) return json(400, { error: 'request instance_id differs from the cell it was sent to' });
      }
      const out = this.stepAndStore(decodeURIComponent(instanceId), input);
      await this.rearm();
      return json(200, out);
    }
    if (request.method === 'GET' && route === 'state') return json(200, { state: this.read(), next_alarm_at: this.nextAlarm() });
    if (request.method === 'GET' && route === 'evidence') {
      const limit = Math.min(Number(url.searchParams.get('limit') ?? 1000) || 1000, 10_000);
      const rows = this.ctx.storage.sql.exec('SELECT json FROM (SELECT seq, json FROM evidence ORDER BY seq DESC LIMIT ?) ORDER BY seq', limit).toArray();
      return json(200, { evidence: rows.map((r) => JSON.parse(String(r.json))) });
    }
    if (request.method === 'GET' && route === 'operation') {
      // Only what is bound to this operation id: never the whole cell.
      const op = url.searchParams.get('id') ?? '';
      const state = this.read();
      const rows = this.ctx.storage.sql.exec('SELECT json FROM evidence WHERE operation_id = ? ORDER BY seq', op).toArray();
      return json(200, { operation: state?.operations.find((o) => o.operation_id === op) ?? null, evidence: rows.map((r) => JSON.parse(String(r.json))) });
    }
    return json(404, { error: `no route ${request.method} ${url.pathname}` });
  }

  async alarm(): Promise<void> {
    const now = Date.now();
    const due = this.ctx.storage.sql.exec('SELECT name FROM alarms WHERE due_at <= ? ORDER BY due_at', now).toArray();
    for (const row of due) {
      const name = String(row.name);
      this.ctx.storage.transactionSync(() => {
        this.ctx.storage.sql.exec('DELETE FROM alarms WHERE name = ?', name);
        this.stepAndStore(this.read()?.instance_id ?? '', { kind: 'alarm', name });
      });
    }
    await this.rearm();
  }

  private read(): InstanceCellState | null {
    const rows = this.ctx.storage.sql.exec('SELECT state_json FROM cell WHERE k = 1').toArray();
    return rows[0] ? InstanceCellStateSchema.parse(JSON.parse(String(rows[0].state_json))) : null;
  }

  private nextAlarm(): number | null {
    const rows = this.ctx.storage.sql.exec('SELECT MIN(due_at) AS due FROM alarms').toArray();
    const due = rows[0]?.due;
    return typeof due === 'number' ? due : null;
  }

  private stepAndStore(instanceId: string, input: Parameters<typeof step>[1]) {
    return this.ctx.storage.transactionSync(() => {
      const now = Date.now();
      const prev = this.read() ?? emptyCell(instanceId, now);
      const out = step(prev, input, { now, actor: `celld-cell:${instanceId}` }, DEFAULT_CORE_SETTINGS);
      this.ctx.storage.sql.exec('INSERT INTO cell (k, state_json) VALUES (1, ?) ON CONFLICT(k) DO UPDATE SET state_json = excluded.state_json', JSON.stringify(out.state));
      for (const a of out.alarms) {
        if (a.due_at === null) this.ctx.storage.sql.exec('DELETE FROM alarms WHERE name = ?', a.name);
        else this.ctx.storage.sql.exec('INSERT INTO alarms (name, due_at, attempt) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET due_at = excluded.due_at, attempt = excluded.attempt', a.name, a.due_at, a.attempt);
      }
      for (const e of out.evidence) this.ctx.storage.sql.exec('INSERT INTO evidence (operation_id, json) VALUES (?, ?)', e.operation_id, JSON.stringify(e));
      return { state: out.state, reply: out.reply };
    });
  }

  private async rearm(): Promise<void> {
    const next = this.nextAlarm();
    if (next === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(next);
  }
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const path = url.pathname + url.search;
    const body = request.method === 'GET' ? '' : await request.text();
    const versions = { celld_version: env.CELLD_VERSION || 'unknown', protocol_version: PROTOCOL_VERSION };
    const ts = request.headers.get(HEADER_TIMESTAMP) ?? '';
    const reply = async (status: number, payload: unknown): Promise<Response> => {
      const text = JSON.stringify({ ...versions, ...(payload as object) });
      const headers = new Headers({ 'content-type': 'application/json' });
      if (env.FORGE_CELLD_SECRET) headers.set(HEADER_SIGNATURE, await signResponse(env.FORGE_CELLD_SECRET, ts, path, status, text));
      return new Response(text, { status, headers });
    };
    if (!env.FORGE_CELLD_SECRET || env.FORGE_CELLD_SECRET.length < 32) return reply(503, { error: 'worker has no FORGE_CELLD_SECRET of at least 32 characters; refusing every request' });
    if (body.length > MAX_BODY) return reply(413, { error: 'request body too large' });
    const failure = await verifyRequest(env.FORGE_CELLD_SECRET, request.headers, request.method, path, body, Date.now());
    if (failure) return reply(401, { error: failure });
    if (url.pathname === '/v1/capabilities') return reply(200, { capabilities: capabilityDescriptor('worker-celld') });
    if (url.pathname === '/v1/capability-probe') return reply(200, { attempts: await probeWorkerCapabilities(url.searchParams.get('target') ?? '') });
    const m = /^\/v1\/cells\/([^/]+)\/(step|state|evidence|operation)$/.exec(url.pathname);
    if (!m) return reply(404, { error: `no route ${request.method} ${url.pathname}` });
    const id = decodeURIComponent(m[1]!);
    if (id.length > 255) return reply(400, { error: 'instance id longer than 255 characters' });
    const stub = env.INSTANCE_CELL.get(env.INSTANCE_CELL.idFromName(id));
    const inner = await stub.fetch(new Request(`https://cell/v1/cells/${encodeURIComponent(id)}/${m[2]}${url.search}`, { method: request.method, body: request.method === 'GET' ? undefined : body, headers: { 'content-type': 'application/json' } }));
    return reply(inner.status, await inner.json());
  },
};
