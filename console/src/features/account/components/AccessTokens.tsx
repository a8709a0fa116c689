import { useState } from 'react';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, type ApiAnswer } from '../../../lib/api-client.js';
import { accessTokensQuery, accountKeys } from '../api/queries.js';
import { Pager } from '../../../components/Pager.js';
import type { Session } from '../../../lib/session.js';
import { ConfirmButton } from '../../../components/Confirm.js';

type Token = ApiAnswer<'/v1/user/access_tokens'>['tokens'][number];

const when = (iso: string | null) => (iso === null ? 'never' : new Date(iso).toLocaleString());

/** What a token is, as far as this console knows it. */
function kindOf(t: Token): string {
  if (t.current) return 'This console';
  if (t.temporary) return t.same_session ? 'API token of this console' : 'API token of another session';
  return 'Sign-in';
}

/**
 * The account's live access tokens (never their values) and revoking one, after a confirmation.
 * Revoking this console's own token ends this session, which then goes back to sign-in.
 */
export function AccessTokens({ session }: { session: Session }) {
  const client = useQueryClient();
  const [page, setPage] = useState(1);
  const list = useQuery({
    ...accessTokensQuery(session, page),
    placeholderData: keepPreviousData,
  });
  const revoke = useMutation({
    mutationFn: (id: string) => api(session.token).DELETE('/v1/user/access_tokens/{id}', { params: { path: { id } } }),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: accountKeys.tokens });
      await client.invalidateQueries({ queryKey: accountKeys.securityLog });
    },
  });

  return (
    <section className="card" aria-labelledby="tokens-title">
      <h3 id="tokens-title">Access tokens</h3>
      <p>The tokens that act for your account now: this console's, your API tokens, and your tools' logins. Their values are never shown again.</p>
      {list.isPending && <p>Loading…</p>}
      {list.error && <p role="alert" className="error">{list.error.message}</p>}
      {list.data && (
        <div className="table-wrap">
          <table>
            <thead><tr><th scope="col">Kind</th><th scope="col">Client</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col"><span className="sr-only">Action</span></th></tr></thead>
            <tbody>
              {list.data.tokens.map((t) => (
                <tr key={t.id}>
                  <td>{kindOf(t)}</td>
                  <td><code>{t.client_id}</code></td>
                  <td>{when(t.created_at)}</td>
                  <td>{when(t.expires_at)}</td>
                  <td>
                    <ConfirmButton label="Revoke…" name={`Revoke ${kindOf(t)} token ${t.id}`} question="Revoke this token?"
                      confirmLabel={t.current ? 'Revoke and log out' : 'Revoke'} confirmName={`Confirm: revoke ${kindOf(t)} token ${t.id}`}
                      onAsk={() => revoke.reset()} pending={revoke.isPending} onConfirm={() => revoke.mutateAsync(t.id)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {revoke.error && <p role="alert" className="error">{revoke.error.message}</p>}
      {list.data && <Pager page={page} pages={list.data.meta.total_pages} onPage={setPage} label="Access token pages" />}
    </section>
  );
}
