/**
 * Output for people (tables, short lines) and for scripts (`--json`: the API's answer as is,
 * one JSON document on stdout). Errors and progress go to stderr, so stdout stays clean.
 */
export type Column<T> = [header: string, value: (row: T) => unknown];

const cell = (v: unknown): string => (v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/** A plain-text table with a header row, columns padded to their widest cell. */
export function table<T>(rows: readonly T[], columns: ReadonlyArray<Column<T>>): string {
  const cells = rows.map((r) => columns.map(([, f]) => cell(f(r))));
  const widths = columns.map(([h], i) => Math.max(h.length, ...cells.map((c) => (c[i] as string).length)));
  const line = (values: string[]) => values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i] as number))).join('  ').trimEnd();
  return [line(columns.map(([h]) => h)), ...cells.map(line)].join('\n') + '\n';
}

export interface Output {
  readonly json: boolean;
  /** Prints `data` as JSON with --json, else what `human` makes of it. */
  result(data: unknown, human: () => string): void;
  /** A note for people (stderr), never mixed into --json output. */
  note(text: string): void;
}

export function createOutput(json: boolean, out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Output {
  return {
    json,
    result(data, human) {
      out.write(json ? `${JSON.stringify(data, null, 2)}\n` : ensureNewline(human()));
    },
    note(text) {
      err.write(ensureNewline(text));
    },
  };
}

const ensureNewline = (s: string) => (s === '' || s.endsWith('\n') ? s : `${s}\n`);

/**
 * A progress bar on stderr for long work (provisioning, imports, rollouts) when stderr is a
 * terminal; nothing otherwise, so logs and pipes stay clean.
 */
export function progress(total: number, label: string, stream: NodeJS.WriteStream = process.stderr): { tick(n?: number): void; done(): void } {
  let doneCount = 0;
  const tty = stream.isTTY === true;
  const draw = () => {
    if (!tty) return;
    const width = 30;
    const filled = total === 0 ? width : Math.round((doneCount / total) * width);
    stream.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${doneCount}/${total}`);
  };
  draw();
  return {
    tick(n = 1) { doneCount = Math.min(total, doneCount + n); draw(); },
    done() { if (tty) stream.write('\n'); },
  };
}
