import Database from 'better-sqlite3';
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { nativeBindingOptions } from './nativeBinding.js';

export type Db = Database.Database;

/** Ordered migrations; user_version records how many ran. Append only. */
const MIGRATIONS: string[] = [
  `CREATE TABLE runs (
     id TEXT PRIMARY KEY,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     repo TEXT NOT NULL,
     base_commit TEXT NOT NULL,
     issue TEXT NOT NULL,
     test_cmd TEXT NOT NULL,
     provider TEXT NOT NULL,
     image TEXT NOT NULL,
     model TEXT NOT NULL,
     attempts INTEGER NOT NULL,
     status TEXT NOT NULL,
     winner_attempt INTEGER,
     baseline_json TEXT,
     report_json TEXT,
     runner_pid INTEGER NOT NULL
   );
   CREATE TABLE attempts (
     run_id TEXT NOT NULL REFERENCES runs(id),
     idx INTEGER NOT NULL,
     attempt_id TEXT NOT NULL,
     temperature REAL NOT NULL,
     status TEXT NOT NULL,
     turns INTEGER NOT NULL DEFAULT 0,
     tokens INTEGER NOT NULL DEFAULT 0,
     verdict_json TEXT,
     patch TEXT,
     error TEXT,
     started_at TEXT,
     finished_at TEXT,
     PRIMARY KEY (run_id, idx)
   );
   CREATE TABLE model_turns (
     run_id TEXT NOT NULL,
     attempt_idx INTEGER NOT NULL,
     turn_idx INTEGER NOT NULL,
     response_json TEXT NOT NULL,
     tool_results_json TEXT NOT NULL,
     tokens INTEGER NOT NULL,
     created_at TEXT NOT NULL,
     PRIMARY KEY (run_id, attempt_idx, turn_idx)
   );
   CREATE TABLE cell_executions (
     run_id TEXT NOT NULL,
     attempt_idx INTEGER,
     purpose TEXT NOT NULL,
     cell_id TEXT NOT NULL,
     provider TEXT NOT NULL,
     image TEXT NOT NULL,
     command TEXT NOT NULL,
     exit_code INTEGER NOT NULL,
     killed_by TEXT,
     duration_ms INTEGER NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE INDEX cell_executions_run ON cell_executions(run_id, attempt_idx);`,
  `ALTER TABLE runs ADD COLUMN install_cmd TEXT;`,
  // Management: inventory (observed truth) and the operation ledger, with evidence.
  `CREATE TABLE instances (
     instance_id TEXT PRIMARY KEY,
     provider TEXT NOT NULL,
     generation INTEGER NOT NULL,
     runtime_state TEXT NOT NULL,
     runtime_id TEXT,
     spec_json TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL
   );
   CREATE TABLE operations (
     operation_id TEXT PRIMARY KEY,
     instance_id TEXT NOT NULL,
     generation INTEGER NOT NULL,
     action TEXT NOT NULL,
     request_hash TEXT NOT NULL,
     request_json TEXT NOT NULL,
     status TEXT NOT NULL,
     reason TEXT,
     owner_host TEXT,
     owner_pid INTEGER,
     changed INTEGER,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL,
     finished_at INTEGER
   );
   CREATE INDEX operations_instance ON operations(instance_id, created_at);
   CREATE INDEX operations_open ON operations(status) WHERE status IN ('pending', 'dispatched', 'unknown');
   CREATE TABLE evidence (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     at INTEGER NOT NULL,
     source TEXT NOT NULL,
     actor TEXT NOT NULL,
     instance_id TEXT NOT NULL,
     operation_id TEXT,
     generation INTEGER NOT NULL,
     event TEXT NOT NULL,
     from_state TEXT,
     to_state TEXT,
     detail TEXT
   );
   CREATE INDEX evidence_instance ON evidence(instance_id, seq);
   CREATE INDEX evidence_operation ON evidence(operation_id, seq);
   -- The embedded InstanceCell (namespaced apart from management's observed truth).
   CREATE TABLE cell_state (
     instance_id TEXT PRIMARY KEY,
     state_json TEXT NOT NULL,
     updated_at INTEGER NOT NULL
   );
   CREATE TABLE cell_alarms (
     instance_id TEXT NOT NULL,
     name TEXT NOT NULL,
     due_at INTEGER NOT NULL,
     attempt INTEGER NOT NULL,
     PRIMARY KEY (instance_id, name)
   );`,
  // v4: the bounded log of each cell (for the Cells view) and the review decision of a run.
  `ALTER TABLE cell_executions ADD COLUMN log TEXT;
   ALTER TABLE runs ADD COLUMN review TEXT;`,
  // Swarm cells: the node that ran the cell (and any node it was resubmitted from).
  `ALTER TABLE cell_executions ADD COLUMN node TEXT;`,
  // The budgets and network policy a run was started with (a resume keeps them).
  `ALTER TABLE runs ADD COLUMN settings_json TEXT;`,
  // What the user confirmed of a repository's own files (.forgeinclude, .forge/config.json), by content.
  `CREATE TABLE repo_consents (
     repo TEXT NOT NULL,
     file TEXT NOT NULL,
     sha256 TEXT NOT NULL,
     granted_at TEXT NOT NULL,
     PRIMARY KEY (repo, file, sha256)
   );`,
  // Swarm cells: the images this runner built and pushed, by the digest its engine reported
  // (a registry's tag is anyone's to replace; see runner/src/store/swarmImageRecords.ts).
  `CREATE TABLE swarm_images (
     registry TEXT NOT NULL,
     repository TEXT NOT NULL,
     tag TEXT NOT NULL,
     digest TEXT NOT NULL,
     pushed_at INTEGER NOT NULL,
     PRIMARY KEY (registry, repository, tag, digest)
   );`,
  // The machine's queue of cells, shared by every runner process (store/cellSlots.ts).
  `CREATE TABLE cell_slots (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     pid INTEGER NOT NULL,
     run_id TEXT NOT NULL,
     memory_mib INTEGER NOT NULL,
     exclusive INTEGER NOT NULL,
     state TEXT NOT NULL,
     ticket INTEGER NOT NULL,
     created_at TEXT NOT NULL
   );`,
  // Usage per model turn, input and output apart (NULL: not reported; turns of older runs read
  // as unknown, never as 0), and why each attempt's agent stopped ('tokens'/'run_tokens': budget).
  `ALTER TABLE model_turns ADD COLUMN input_tokens INTEGER;
   ALTER TABLE model_turns ADD COLUMN output_tokens INTEGER;
   ALTER TABLE model_turns ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE attempts ADD COLUMN stop TEXT;`,
  // A part of an attempt applied to the checkout while the run stays open (JSON: attempt, files).
  `ALTER TABLE runs ADD COLUMN applied_part TEXT;`,
  // Which attempt a whole apply put in the checkout (not always the winner: the user may choose another).
  `ALTER TABLE runs ADD COLUMN applied_attempt INTEGER;`,
];

/**
 * Opens (creating and migrating) the runner's SQLite store. WAL with synchronous=FULL: a
 * committed transaction survives a power cut, and readers never block the writer.
 */
export function openStore(path: string): Db {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // The store holds every run's cell logs, model turns and the user's confirmations: the
    // runner's alone. Made 0600 before SQLite opens it, so its -wal and -shm files are too.
    closeSync(openSync(path, 'a', 0o600));
    for (const f of [path, `${path}-wal`, `${path}-shm`]) {
      try {
        if ((statSync(f).mode & 0o077) !== 0) chmodSync(f, 0o600);
      } catch {
        // Not made yet.
      }
    }
  }
  const db = new Database(path, nativeBindingOptions());
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > MIGRATIONS.length) {
    throw new Error(`store ${path} was written by a newer forge-runner (schema ${version} > ${MIGRATIONS.length}); upgrade forge-runner`);
  }
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    }).immediate();
  }
  return db;
}
