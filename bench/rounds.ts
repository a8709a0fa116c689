// What the small side-by-side benchmarks share (webhook-deadline.ts, log-destination.ts,
// multipart-scope.ts): their numeric options and the median of their rounds.

/** `--name N` from the command line, else `fallback`. */
export function numberOption(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
}

/** The middle value of a round's figures (the upper middle of an even count). */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
