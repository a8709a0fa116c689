import { useMemo, useState } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, Route, Routes, useNavigate, useParams } from 'react-router';
import type { Session } from '../../../lib/session.js';
import { productWebhooks, userWebhooks, webhookKeys, webhookQuery, type WebhooksAt } from '../api/webhooks.js';
import { WebhookList } from './WebhookList.js';
import { WebhookForm } from './WebhookForm.js';
import { WebhookPage, type ShownSecret } from './WebhookPage.js';

/**
 * Integrations: the webhooks of a product (`product`: its slug) or of the user's own account
 * (null), each an address of its own under `base`: the list, a new webhook, one webhook with its
 * delivery log, and its edit form (docs/console.md, "Integrations").
 */
export function Integrations({ session, product, title }: { session: Session; product: string | null; title: string }) {
  const at = useMemo(() => (product === null ? userWebhooks : productWebhooks(product)), [product]);
  const base = product === null ? '/integrations' : `/products/${encodeURIComponent(product)}/integrations`;
  // A signing secret the API gave (create, rotate) lives in this state alone: reloading forgets it.
  const [secret, setSecret] = useState<ShownSecret | null>(null);
  const client = useQueryClient();
  const navigate = useNavigate();
  const refresh = () => client.invalidateQueries({ queryKey: webhookKeys.at(at) });
  const p = { session, at, base };
  return (
    <Routes>
      <Route index element={<WebhookList {...p} title={title} />} />
      <Route path="new" element={(
        <WebhookForm
          session={session} at={at} cancelTo={base}
          onCreated={(made) => {
            setSecret({ id: made.id, value: made.secret, rotated: null });
            void refresh();
            void navigate(`${base}/${made.id}`);
          }}
          onSaved={() => undefined}
        />
      )} />
      <Route path=":id" element={<WebhookPage {...p} secret={secret} onSecret={setSecret} />} />
      <Route path=":id/edit" element={<EditWebhook {...p} />} />
    </Routes>
  );
}

function EditWebhook({ session, at, base }: { session: Session; at: WebhooksAt; base: string }) {
  const { id = '' } = useParams();
  const webhook = useQuery(webhookQuery(session, at, id));
  const client = useQueryClient();
  const navigate = useNavigate();
  const page = `${base}/${encodeURIComponent(id)}`;
  if (webhook.error) return <p role="alert" className="error">{webhook.error.message} <Link to={base}>All integrations</Link></p>;
  // The form starts from what the API holds now, not from a copy cached before the last change.
  if (!webhook.data || !webhook.isFetchedAfterMount) return <p>Loading…</p>;
  return (
    <WebhookForm
      session={session} at={at} editing={webhook.data} cancelTo={page}
      onCreated={() => undefined}
      onSaved={() => {
        void client.invalidateQueries({ queryKey: webhookKeys.at(at) });
        void navigate(page);
      }}
    />
  );
}
