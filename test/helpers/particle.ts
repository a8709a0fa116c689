import ParticleModule from 'particle-api-js';

/** The real particle-api-js client, pointed at a test server. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const Particle = ((ParticleModule as any).default ?? ParticleModule) as any;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function particle(baseUrl: string, options: Record<string, unknown> = {}): any {
  return new Particle({ baseUrl, ...options });
}
