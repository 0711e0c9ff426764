import test from 'ava';
import { MAP_FIELDS, TEST_MEANINGS } from '../../src/http/openapi.js';
import { evaluateRequestSchema } from '../../src/validate/evaluateRequest.js';
import { listSchema, streamSchema } from '../../src/validate/eventQuery.js';
import { ingestRecordSchema } from '../../src/validate/ingestRecord.js';

// /openapi.json's request schemas are read off the validators (src/http/openapi.ts). What keeps
// them whole as the validators change: each rule the validators use has a meaning there
// (TEST_MEANINGS), and each map field (mapOf, whose key and value rules describe() cannot read)
// its schema. openapi-requests.test.ts holds the result to the service's answers.
test('every rule of the request validators is one the document states', (t) => {
  const names = new Set<string>();
  const maps: string[] = [];
  const walk = (d: any, field: string) => {
    for (const test of d.tests) names.add(test.name);
    if (d.type === 'mixed') maps.push(field);
    if (d.innerType) walk(d.innerType, `${field}[]`);
    for (const [k, f] of Object.entries(d.fields ?? {})) walk(f, k);
  };
  for (const schema of [evaluateRequestSchema, ingestRecordSchema, listSchema, streamSchema]) walk(schema.describe(), '');
  for (const name of names) t.true(name in TEST_MEANINGS, `the validators' test "${name}" has no meaning in src/http/openapi.ts`);
  t.deepEqual([...new Set(maps)].sort(), [...MAP_FIELDS].sort());
});
