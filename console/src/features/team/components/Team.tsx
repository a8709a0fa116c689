import { type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../../../lib/api-client.js';
import { teamKeys, teamQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';
import { ConfirmButton } from '../../../components/Confirm.js';

/**
 * A product's team: its members, inviting an existing account, removing a member. Removing
 * oneself leaves the product: `onLeft` then takes the user elsewhere.
 */
export function Team({ session, product, onLeft }: { session: Session; product: string; onLeft: () => Promise<void> }) {
  const at = { params: { path: { productIdOrSlug: product } } };
  const client = useQueryClient();
  const team = useQuery(teamQuery(session, product));
  const refresh = () => client.invalidateQueries({ queryKey: teamKeys.of(product) });
  const invite = useMutation({
    mutationFn: (username: string) => api(session.token).POST('/v1/products/{productIdOrSlug}/team', { ...at, body: { username } }),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (username: string) => api(session.token).DELETE('/v1/products/{productIdOrSlug}/team/{username}', { params: { path: { productIdOrSlug: product, username } } }),
    onSuccess: async (_r, username) => {
      if (username.toLowerCase() === session.username.toLowerCase()) await onLeft();
      else await refresh();
    },
  });

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    invite.mutate(String(new FormData(form).get('username')).trim(), { onSuccess: () => form.reset() });
  }

  return (
    <section aria-labelledby="team-title">
      <h3 id="team-title">Team</h3>
      <p>Every member manages the whole product: its devices, configuration, customers and clients.</p>
      <form onSubmit={submit} className="card" aria-label="Invite a member">
        <label>E-mail of an existing account<input name="username" type="email" required maxLength={254} /></label>
        <button type="submit" disabled={invite.isPending}>Invite</button>
        {invite.isSuccess && <p role="status">{invite.data.username} is now a member of the team.</p>}
        {invite.error && <p role="alert" className="error">{invite.error.message}</p>}
      </form>
      {team.isPending && <p>Loading…</p>}
      {team.error && <p role="alert" className="error">{team.error.message}</p>}
      {remove.error && <p role="alert" className="error">{remove.error.message}</p>}
      {team.data && (
        <table>
          <thead><tr><th scope="col">Member</th><th scope="col">Role</th><th scope="col">Two-step verification</th><th scope="col" className="actions">Actions</th></tr></thead>
          <tbody>
            {team.data.team.map((m) => (
              <tr key={m.username}>
                <td>{m.username}{m.username === session.username ? ' (you)' : ''}</td>
                <td>{m.role}</td>
                <td>{m.no_mfa ? 'off' : 'on'}</td>
                <td className="actions">
                  <ConfirmButton
                    label="Remove"
                    subject={m.username}
                    question={`Remove ${m.username} from the team? They no longer reach this product.`}
                    confirmLabel="Yes, remove"
                    pending={remove.isPending}
                    onConfirm={() => remove.mutate(m.username)}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
