// The flooding address of `npm run bench`'s flood scenario (bench/run.ts), in a process of its
// own so that its CPU is not the measuring process's: `connections` keep-alive connections from
// one local address (a loopback address such as 127.0.0.2), each sending the next request as soon
// as the last is answered, until told to stop. It reports what it was answered.
import { Pool } from 'undici';

interface Start { url: string; path: string; headers: Record<string, string>; connections: number; localAddress: string }

process.once('message', (message) => {
  const o = message as Start;
  const origin = new URL(o.url).origin;
  const pool = new Pool(origin, { connections: o.connections, pipelining: 1, localAddress: o.localAddress });
  const counts = { ok: 0, limited: 0, other: 0, errors: 0 };
  let running = true;
  const started = process.hrtime.bigint();
  const worker = async () => {
    while (running) {
      try {
        const r = await pool.request({ path: o.path, method: 'GET', headers: o.headers });
        await r.body.dump();
        if (r.statusCode === 200) counts.ok++;
        else if (r.statusCode === 429) counts.limited++;
        else counts.other++;
      } catch {
        counts.errors++;
      }
    }
  };
  const workers = Array.from({ length: o.connections }, worker);
  process.send?.({ started: true });
  process.once('message', () => {
    running = false;
    void Promise.all(workers).then(async () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      await pool.close();
      process.send?.({ ...counts, seconds });
    });
  });
});
process.on('disconnect', () => process.exit(0));
