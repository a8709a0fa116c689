import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../../../lib/api-client.js';
import { GROUP_NAME_RULES, groupKeys, groupsQuery, type Group } from '../../../lib/groups.js';
import type { Session } from '../../../lib/session.js';
import { ConfirmButton } from '../../../components/Confirm.js';
import { EditCard } from '../../../components/EditCard.js';

/** A group's fields as the forms send them. */
interface GroupFields { name: string; color: string; description: string }

/** A new group's colour until one is chosen. */
const DEFAULT_COLOR = '#3d5a80';

const fieldsOf = (form: HTMLFormElement): GroupFields => {
  const f = new FormData(form);
  return { name: String(f.get('name')).trim(), color: String(f.get('color')), description: String(f.get('description')).trim() };
};

/**
 * A product's device groups (docs/firmware.md, "Groups"): create one (name, colour, description),
 * the groups with their devices (a link to the fleet filtered by the group) and the version
 * released to each, rename or change one, delete one after a confirmation. Devices join groups
 * from the fleet's list or their own page.
 */
export function Groups({ session, product }: { session: Session; product: string }) {
  const client = useQueryClient();
  const list = useQuery(groupsQuery(session, product));
  const [editing, setEditing] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const path = { productIdOrSlug: product };
  const refresh = () => client.invalidateQueries({ queryKey: groupKeys.of(product) });
  const create = useMutation({
    mutationFn: (g: GroupFields) => api(session.token).POST('/v1/products/{productIdOrSlug}/groups', { params: { path }, body: g }),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (name: string) => api(session.token).DELETE('/v1/products/{productIdOrSlug}/groups/{groupName}', { params: { path: { ...path, groupName: name } } }),
    onSuccess: refresh,
  });
  const fleet = `/products/${encodeURIComponent(product)}`;

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    create.mutate(fieldsOf(form), { onSuccess: () => form.reset() });
  }

  const shown = editing === null ? undefined : list.data?.groups.find((g) => g.name === editing);
  return (
    <section aria-labelledby="groups-title">
      <div className="row">
        <h3 id="groups-title">Groups</h3>
        <button type="button" aria-expanded={creating} onClick={() => setCreating(!creating)}>New group</button>
      </div>
      <p>
        Groups gather devices to release firmware to some of them: a device in groups runs the highest version released
        to any of them. Put devices in groups from the <Link to={fleet}>device list</Link> or a device's page.
      </p>
      {creating && (
        <form onSubmit={submit} className="card" aria-label="New group">
          <GroupInputs />
          <div className="buttons">
            <button type="submit" disabled={create.isPending}>Create group</button>
            <button type="button" className="secondary" onClick={() => setCreating(false)}>Close</button>
          </div>
          {create.data && <p role="status">Group {create.data.group.name} created.</p>}
          {create.error && <p role="alert" className="error">{create.error.message}</p>}
        </form>
      )}
      {list.isPending && <p>Loading…</p>}
      {list.error && <p role="alert" className="error">{list.error.message}</p>}
      {remove.error && <p role="alert" className="error">{remove.error.message}</p>}
      {list.data && list.data.groups.length === 0 && <p>No groups yet: make one with "New group", or put devices in a new group from the device list.</p>}
      {list.data && list.data.groups.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Groups</caption>
            <thead><tr><th scope="col">Group</th><th scope="col">Devices</th><th scope="col">Firmware released to it</th><th scope="col">Actions</th></tr></thead>
            <tbody>
              {list.data.groups.map((g) => (
                <tr key={g.name}>
                  <th scope="row">
                    {g.color && <span className="swatch" style={{ background: g.color }} aria-hidden="true" />} {g.name}
                    {g.description && <span className="hint">{g.description}</span>}
                  </th>
                  <td><Link to={`${fleet}?group=${encodeURIComponent(g.name)}`} aria-label={`${g.device_count} device(s) in ${g.name}`}>{g.device_count}</Link></td>
                  <td>{g.fw_version === null ? 'none' : `version ${g.fw_version}`}</td>
                  <td>
                    <div className="row-actions">
                      <button type="button" className="secondary" aria-label={`Edit ${g.name}`} onClick={() => setEditing(g.name)}>Edit</button>
                      <ConfirmButton
                        label="Delete" name={`Delete ${g.name}`}
                        question={`Delete group ${g.name}? Its ${g.device_count} device(s) leave it${g.fw_version === null ? '' : `, and those it gave version ${g.fw_version} go back to what their other groups or the product default give them`}.`}
                        confirmLabel="Yes, delete it" pending={remove.isPending} onAsk={() => remove.reset()}
                        onConfirm={() => remove.mutateAsync(g.name)}
                      />
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {shown && <EditGroup key={shown.name} session={session} product={product} group={shown} onClose={() => setEditing(null)} />}
    </section>
  );
}

/** The fields of a group, for creating one and for changing one. */
function GroupInputs({ group }: { group?: Group }) {
  return (
    <>
      <label>Name
        <input name="name" required maxLength={64} defaultValue={group?.name} aria-describedby="group-name-rules" autoCapitalize="none" spellCheck={false} />
        <span id="group-name-rules" className="hint">{GROUP_NAME_RULES}</span>
      </label>
      <label>Colour<input name="color" type="color" defaultValue={group?.color ?? DEFAULT_COLOR} /></label>
      <label>Description<textarea name="description" maxLength={2000} rows={2} defaultValue={group?.description} /></label>
    </>
  );
}

function EditGroup({ session, product, group, onClose }: { session: Session; product: string; group: Group; onClose: () => void }) {
  const client = useQueryClient();
  const save = useMutation({
    mutationFn: (g: GroupFields) => api(session.token).PUT('/v1/products/{productIdOrSlug}/groups/{groupName}', { params: { path: { productIdOrSlug: product, groupName: group.name } }, body: g }),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: groupKeys.of(product) });
      onClose();
    },
  });
  return (
    <EditCard id="edit-group-title" title={`Edit group ${group.name}`} onSave={(form) => save.mutate(fieldsOf(form))} pending={save.isPending} error={save.error} onCancel={onClose}>
      <GroupInputs group={group} />
    </EditCard>
  );
}
