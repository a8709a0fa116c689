/**
 * What the token endpoint needs to know about product customers: the client_credentials grant
 * with `scope=customer=<email>` (two-legged; docs/particle-compatibility.md#scopes) and the
 * password grant of a product client (simple authentication). The customers service implements
 * it.
 */
export interface CustomerDirectory {
  findByEmail(productId: string, email: string): Promise<{ id: string; email: string } | undefined>;
  /** The customer whose password this is, or undefined; counts failures like a user login. */
  verifyPassword(productId: string, email: string, password: string, ip: string): Promise<{ id: string; email: string } | undefined>;
}
