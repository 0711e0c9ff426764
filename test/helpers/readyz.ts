import { get } from './tps.js';

/** Polls /readyz until `done` holds; bounded, so a reload that never comes fails the test instead of hanging it. */
export async function readyzUntil(url: string, done: (body: any) => boolean, deadlineMs = 20_000): Promise<any> {
  const deadline = Date.now() + deadlineMs;
  let body: any;
  do {
    body = (await get(`${url}/readyz`)).body;
    if (done(body)) return body;
    await new Promise((r) => setTimeout(r, 25));
  } while (Date.now() < deadline);
  throw new Error(`readyz never reached the expected state: ${JSON.stringify(body)}`);
}

export const policyVersion = (body: any, id: string): string | undefined => body.policies.find((p: { id: string }) => p.id === id)?.versionId;
