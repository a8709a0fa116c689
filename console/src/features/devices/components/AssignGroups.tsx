import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../../../lib/api-client.js';
import { GROUP_NAME_RULES, groupKeys, groupsQuery } from '../../../lib/groups.js';
import type { Session } from '../../../lib/session.js';
import { deviceKeys } from '../api/queries.js';

const devicesInWords = (n: number) => `${n} device${n === 1 ? '' : 's'}`;

/**
 * The devices chosen in the fleet's list, added to a group or taken out of one at once
 * (PUT …/devices, action "groups"). A name the product does not have yet makes a new group.
 */
export function AssignGroups({ session, product, selected, onClear }: { session: Session; product: string; selected: string[]; onClear: () => void }) {
  const client = useQueryClient();
  const groups = useQuery(groupsQuery(session, product));
  const [name, setName] = useState('');
  const change = useMutation({
    mutationFn: ({ how, group }: { how: 'add' | 'remove'; group: string }) => api(session.token).PUT('/v1/products/{productIdOrSlug}/devices', {
      params: { path: { productIdOrSlug: product } },
      body: { action: 'groups', devices: selected, metadata: { [how]: [group] } },
    }),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: deviceKeys.fleet(product) });
      await client.invalidateQueries({ queryKey: groupKeys.of(product) });
    },
  });
  function submit(e: FormEvent<HTMLFormElement>, how: 'add' | 'remove') {
    e.preventDefault();
    change.mutate({ how, group: name.trim() });
  }
  const done = change.isSuccess && change.variables;
  return (
    <form className="card row-form" aria-label="Groups of the selected devices" onSubmit={(e) => submit(e, 'add')}>
      <strong>{devicesInWords(selected.length)} selected</strong>
      <label>Group
        <input value={name} onChange={(e) => { setName(e.target.value); change.reset(); }} list="fleet-groups" required maxLength={64} autoCapitalize="none" spellCheck={false} aria-describedby="assign-rules" />
        <datalist id="fleet-groups">{groups.data?.groups.map((g) => <option key={g.name} value={g.name} />)}</datalist>
      </label>
      <span id="assign-rules" className="hint">An existing group, or a new name: {GROUP_NAME_RULES.toLowerCase()}</span>
      <button type="submit" disabled={change.isPending}>Add to group</button>
      <button type="button" className="secondary" disabled={change.isPending || name.trim() === ''} onClick={() => change.mutate({ how: 'remove', group: name.trim() })}>Remove from group</button>
      <button type="button" className="link" onClick={onClear}>Clear the selection</button>
      {done && <p role="status">{devicesInWords(selected.length)} {done.how === 'add' ? `added to ${done.group}` : `taken out of ${done.group}`}.</p>}
      {change.error && <p role="alert" className="error">{change.error.message}</p>}
    </form>
  );
}
