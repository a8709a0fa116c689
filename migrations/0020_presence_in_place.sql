-- A device's presence is updated in place (PostgreSQL's HOT: no new index entries) when it
-- reconnects to the node it last connected to, as in a reconnect storm: the index the leader's
-- check reads names a row's node, and a disconnect now leaves the node named, so neither a
-- connect to the same node nor a disconnect changes an indexed column. `devices_online_node`
-- also indexed `online`, which every connect and disconnect changes: each presence write then
-- added an entry to each of the table's six indexes, two thirds of its cost (docs/benchmarks.md,
-- "Configuration fan-out"). The leader now clears the node of every row naming a node that is
-- gone, offline ones too, so that a dead node is named by no row after its check.
DROP INDEX devices_online_node;
CREATE INDEX devices_node ON devices (node_id) WHERE node_id IS NOT NULL;
-- Online rows written before nodes were recorded (migration 0010) name a node that never renews a
-- lease, and so are set offline by the leader's first check, with their offline events.
UPDATE devices SET node_id = '(unrecorded)' WHERE online AND node_id IS NULL;
