import type { ReactNode } from 'react';
import { QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { ApiError } from '../lib/api-error.js';

/**
 * The console's query client (TanStack Query: what comes from the API). A 401 of any query calls
 * `unauthorized`, which renews a token that merely expired or ends the session; a refusal (4xx)
 * is not asked again, a failure of the cloud (5xx, the network) twice more.
 */
export function createQueryClient(unauthorized: () => void): QueryClient {
  return new QueryClient({
    queryCache: new QueryCache({
      onError: (err) => {
        if (err instanceof ApiError && err.status === 401) unauthorized();
      },
    }),
    defaultOptions: { queries: { retry: (n, err) => !(err instanceof ApiError && err.status < 500) && n < 2 } },
  });
}

/** What every page of a session is given: the query client. */
export function AppProvider({ client, children }: { client: QueryClient; children: ReactNode }) {
  return <QueryClientProvider client={client}>{children}</QueryClientProvider>;
}
