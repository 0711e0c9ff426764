import fs from 'node:fs';
import http from 'node:http';

/** The JSON log lines with this message. */
export const logLines = (stdout: string, msg: string): Record<string, any>[] =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes(`"msg":${JSON.stringify(msg)}`))
    .map((l) => JSON.parse(l));

export interface WorkerAnswer {
  /** The process that answered: one of the workers asked about, or undefined if none held the connection. */
  pid: number | undefined;
  status: number;
  body: any;
}

/**
 * GETs on connections of their own until each of these processes (the workers, or a lone server's
 * own pid) has answered one, within the deadline: node:cluster hands each connection to a worker of
 * its choosing, so a fixed number of requests may all reach the same one. Every answer is returned.
 */
export async function askEachWorker(port: number, route: string, workers: readonly number[], deadlineMs = 20_000): Promise<WorkerAnswer[]> {
  const answers: WorkerAnswer[] = [];
  const deadline = Date.now() + deadlineMs;
  const unheard = () => workers.filter((pid) => !answers.some((a) => a.pid === pid));
  while (unheard().length > 0) {
    if (Date.now() > deadline) throw new Error(`no answer from worker(s) ${unheard().join(', ')} in ${answers.length} requests to ${route}`);
    answers.push(await answeredBy(port, route, workers));
  }
  return answers;
}

/** One GET; the worker that answered is the one holding the server's end of its connection, found in /proc while the connection is kept open. */
async function answeredBy(port: number, route: string, workers: readonly number[]): Promise<WorkerAnswer> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const { status, body, clientPort } = await new Promise<{ status: number; body: any; clientPort: number }>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: route, agent }, (res) => {
          const clientPort = res.socket.localPort!;
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text), clientPort }));
          res.on('error', reject);
        })
        .on('error', reject);
    });
    const inode = serverSocketInode(port, clientPort);
    const pid = inode === undefined ? undefined : workers.find((p) => holdsSocket(p, inode));
    return { pid, status, body };
  } finally {
    agent.destroy();
  }
}

/** The inode of the server's end of the loopback connection from clientPort to port (/proc/net/tcp*: local and remote address, hex ports). */
function serverSocketInode(port: number, clientPort: number): string | undefined {
  const portOf = (address: string) => parseInt(address.split(':')[1]!, 16);
  const table = ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((file) => fs.readFileSync(file, 'utf8').split('\n').slice(1));
  for (const line of table) {
    const fields = line.trim().split(/\s+/);
    if (fields.length > 9 && portOf(fields[1]!) === port && portOf(fields[2]!) === clientPort) return fields[9];
  }
  return undefined;
}

function holdsSocket(pid: number, inode: string): boolean {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`;
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}
