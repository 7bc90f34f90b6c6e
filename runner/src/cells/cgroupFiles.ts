/** Pure parsers for the cgroup files the runner reads. */

/** /proc/self/cgroup -> controller name (or "" for the v2 unified line) -> path. */
export function parseProcCgroup(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    const [, controllers = '', path = '/'] = m;
    if (controllers === '') map.set('', path);
    for (const c of controllers.split(',')) if (c) map.set(c.replace(/^name=/, 'name='), path);
  }
  return map;
}

/** "key value" lines (memory.events, pids.events, memory.oom_control) -> numbers. */
export function parseKeyValueCounters(text: string): Map<string, number> {
  const map = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key && value !== undefined && /^\d+$/.test(value)) map.set(key, Number(value));
  }
  return map;
}
