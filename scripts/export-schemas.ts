// Regenerates schemas/*.json from runner/src/protocol. Run `npm run schemas` after changing
// a zod schema; test/runner/protocol/schemas.unit.test.ts fails until you do.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderSchemaFile, schemaCatalog } from '../runner/src/protocol/schemaCatalog.js';

for (const [file, schema] of Object.entries(schemaCatalog())) {
  writeFileSync(join('schemas', file), renderSchemaFile(schema));
  console.log(`wrote schemas/${file}`);
}
