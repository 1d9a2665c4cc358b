-- Notifications: spokes announced disconnected, and the scope of the
-- principal that made a webhook subscription.

-- One row per cluster whose `spoke.disconnected` was sent and whose
-- `spoke.connected` was not yet: the scan sends each once, whichever replica
-- runs it (it holds a transaction-level advisory lock, and the events' dedup
-- keys name the outage).
create table notify_spokes_down (
    cluster     text        primary key references clusters (name) on delete cascade,
    -- When the spoke was last seen before the outage.
    since       timestamptz not null,
    notified_at timestamptz not null
);

-- The access scopes (JSON list of {gates, clusters}) of the scoped principal
-- that created or last replaced the subscription; null = unscoped. Its
-- events are routed only for gates and clusters inside them.
alter table webhooks add column owner_scope jsonb;
