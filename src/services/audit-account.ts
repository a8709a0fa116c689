import type { Subject } from '../domain/subject.js';

/** The account an event about a token belongs to. */
export function accountOf(s: Subject): { kind: 'user' | 'product' | 'customer'; id: string } {
  if (s.kind === 'user') return { kind: 'user', id: s.userId };
  if (s.kind === 'product') return { kind: 'product', id: s.productId };
  return { kind: 'customer', id: s.customerId };
}
