import type { Db } from './openStore.js';

/**
 * The images a runner built and pushed to a swarm registry, each by the manifest digest its
 * own engine reported for the push. A registry without authentication lets anyone put any
 * image under a tag; only a digest recorded here says "this runner made it".
 */
export class SwarmImageRecords {
  constructor(private readonly db: Db) {}

  /** Every digest this runner pushed as registry/repository:tag, the latest first. */
  digests(registry: string, repository: string, tag: string): string[] {
    const rows = this.db
      .prepare('SELECT digest FROM swarm_images WHERE registry = ? AND repository = ? AND tag = ? ORDER BY pushed_at DESC, rowid DESC')
      .all(registry, repository, tag) as { digest: string }[];
    return rows.map((r) => r.digest);
  }

  record(registry: string, repository: string, tag: string, digest: string, at: number = Date.now()): void {
    this.db
      .prepare(
        'INSERT INTO swarm_images (registry, repository, tag, digest, pushed_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET pushed_at = excluded.pushed_at',
      )
      .run(registry, repository, tag, digest, at);
  }

  /** Drops the record of a digest gc deleted from the registry. */
  forget(registry: string, repository: string, tag: string, digest: string): void {
    this.db
      .prepare('DELETE FROM swarm_images WHERE registry = ? AND repository = ? AND tag = ? AND digest = ?')
      .run(registry, repository, tag, digest);
  }
}
