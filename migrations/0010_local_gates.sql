-- Gate objects made in a hub-connected cluster (delivered from Git, not the
-- hub's), as the cluster's spoke last reported them: a small JSON array per
-- cluster (name, enforced, state, reason, counts, Ready), replaced with each
-- report whose content changed. Shown read-only; never part of desired state.
alter table cluster_connections
    add column local_gates jsonb not null default '[]'::jsonb;
