-- The deliveries waiting to be sent, indexed by webhook and then by when they are due, instead
-- of by when they are due alone. A claim (webhooks.repository.ts, `claimDue`) used to read that
-- single order from the oldest due delivery on, passing over every delivery of a webhook it
-- must leave (disabled, or its host asleep after too many errors): a receiver down for a minute
-- at 1,000 events/s left 60,000 such rows, and every poll, once a second, read them all (60 ms
-- of the embedded store's one session; docs/benchmarks.md, "Webhooks"). By webhook, a claim
-- visits each webhook that has deliveries waiting once, skips the ones it must leave without
-- reading their rows, and reads only the due rows of the others.
CREATE INDEX webhook_deliveries_due_by_webhook ON webhook_deliveries (webhook_id, next_at) WHERE status IN ('pending', 'sending');
DROP INDEX webhook_deliveries_due;
