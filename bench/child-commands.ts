/**
 * A benchmark's helper process (the devices, the receiver) takes numbered commands from the
 * benchmark over IPC and answers each with its `seq`; it says `ready` (seq 0) once listening and
 * exits when the benchmark goes away.
 */
export function serveCommands<C>(run: (command: C) => Promise<unknown>): void {
  process.on('message', (m) => {
    const { seq, ...c } = m as C & { seq: number };
    run(c as C).then(
      (result) => process.send?.({ seq, result }),
      (err: unknown) => process.send?.({ seq, error: (err as Error).message }),
    );
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.({ seq: 0, result: 'ready' });
}
