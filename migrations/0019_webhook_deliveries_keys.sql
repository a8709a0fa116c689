-- A delivery's key to its webhook is checked by the statement that writes it: the insert keeps
-- only the deliveries whose webhook exists, locking each webhook's row as the key's check did
-- (`FOR KEY SHARE`), so a deletion under way is waited for and seen (webhooks.repository.ts,
-- `insertDeliveries`). The key's own check did the same once more, through a trigger per row:
-- a quarter of the store's time for each delivery written under a flood (docs/benchmarks.md,
-- "Webhooks"). The key goes; its cascade is done by the repository, which deletes a webhook's
-- deliveries after the webhook, in a statement of their own (`removeWhere`): one that starts
-- after a batch holding the webhook's lock has committed, and so sees that batch's deliveries.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_webhook_id_fkey;
