/**
 * Whom a token acts for: a user, a product (client_credentials of a product's client) or one of
 * a product's customers; a customer's tokens also carry its product (docs/api.md, "OAuth").
 */
export type Subject =
  | { kind: 'user'; userId: string }
  | { kind: 'product'; productId: string }
  | { kind: 'customer'; customerId: string; productId: string };
