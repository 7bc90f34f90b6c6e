import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

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
];

/**
 * Opens (creating and migrating) the runner's SQLite store. WAL with synchronous=FULL: a
 * committed transaction survives a power cut, and readers never block the writer.
 */
export function openStore(path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
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
