-- Presence across nodes (docs/architecture.md, "Presence and node leases"): the node that holds
-- an online device's connection. A disconnect sets the device offline only while its row still
-- names the node that saw it (it may have reconnected to another node meanwhile); the leader of
-- a cluster sets offline the devices of a node whose lease has lapsed. NULL when offline, and on
-- rows written before this column existed.
ALTER TABLE devices ADD COLUMN node_id text;
-- The leader's check reads the nodes that hold online devices, one index probe per node.
CREATE INDEX devices_online_node ON devices (node_id) WHERE online;
