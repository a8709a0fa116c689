/**
 * Runs `tick` now and then every `periodMs` after the previous run ended (never two at once),
 * until stopped; `stop` waits for a run under way. The rhythm of leases and leaders (leader.ts,
 * lease.ts). A failing run is the caller's to log; the next one comes all the same.
 */
export function every(periodMs: number, tick: () => Promise<void>): { first: Promise<void>; stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const run = (): Promise<void> => {
    running = tick().catch(() => undefined).then(() => {
      if (stopped) return;
      timer = setTimeout(run, periodMs);
      timer.unref();
    });
    return running;
  };
  const first = run();
  return {
    first,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
