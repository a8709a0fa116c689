/**
 * What a Device OS platform means for setup. Cellular devices reach the cloud on their own radio:
 * setup gives them a claim code but no Wi-Fi. On the older (Gen 2) platforms a firmware that asks
 * for listening mode (`WiFi.listen()`) needs 21.5 KB of free memory, or stays where it is and
 * its application keeps running.
 */
const CELLULAR = new Set([10, 13, 23, 25, 26, 28]); // Electron, Boron, B SoM, B5 SoM, Tracker, Tracker M
const LISTEN_NEEDS_MEMORY = new Set([6, 8, 10]); // Photon, P1, Electron

export const LISTENING_MEMORY_BYTES = 21.5 * 1024;

export const isCellular = (platformId: number | undefined): boolean => platformId !== undefined && CELLULAR.has(platformId);

/** Why the device cannot enter listening mode now, or undefined when it can. */
export function listeningRefusal(platformId: number | undefined, freeMemory: number | undefined): string | undefined {
  if (platformId === undefined || freeMemory === undefined || !LISTEN_NEEDS_MEMORY.has(platformId)) return undefined;
  if (freeMemory >= LISTENING_MEMORY_BYTES) return undefined;
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  return `listening mode needs ${kb(LISTENING_MEMORY_BYTES)} of free memory on platform ${platformId}; ${kb(freeMemory)} is free`;
}
