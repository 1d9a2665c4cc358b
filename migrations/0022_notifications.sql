-- Notifications: an outbox of events written in the same transaction as the
-- change that caused them, webhook subscriptions, and one delivery row per
-- (event, subscription) with its lease and every attempt.

-- The outbox. `dedup_key` makes time-driven events idempotent across hub
-- replicas: a window edge is `gate.closed/<gate>/<instant>`, inserted with
-- ON CONFLICT DO NOTHING by every replica that sees it; only one row wins.
create table notify_events (
    id          bigserial   primary key,
    type        text        not null,
    -- What the event is about ("gate/no-deploy-friday", "cluster/prod-eu-1"),
    -- with a per-subject sequence number so receivers can drop stale events.
    subject     text        not null,
    seq         bigint      not null,
    dedup_key   text        unique,
    occurred_at timestamptz not null,
    gate        text,
    clusters    text[]      not null default '{}',
    data        jsonb       not null,
    created_at  timestamptz not null
);
create index notify_events_created on notify_events (created_at);

create table notify_subjects (
    subject text   primary key,
    seq     bigint not null
);

create table webhooks (
    id            uuid        primary key,
    name          text        not null unique,
    url           text        not null,
    -- Event types subscribed to ('*' or e.g. 'gate.closed'); empty = all.
    event_types   text[]      not null default '{}',
    -- Gate names; empty = every gate.
    gates         text[]      not null default '{}',
    -- ClusterScope JSON ({names, selector}); null = every cluster.
    clusters      jsonb,
    format        text        not null check (format in ('standard', 'cloudevents', 'slack', 'teams')),
    per_cluster   boolean     not null default false,
    enabled       boolean     not null default true,
    description   text        not null default '',
    -- The signing secret (`whsec_` + base64), kept as-is: HMAC needs the key
    -- itself, so it cannot be hashed. Never returned after creation.
    secret        text        not null,
    -- During a rotation's overlap both secrets sign every message.
    previous_secret            text,
    previous_secret_expires_at timestamptz,
    created_at    timestamptz not null,
    created_by    text        not null,
    updated_at    timestamptz not null,
    -- Why it was disabled automatically (410 Gone, failing for days).
    disabled_reason text,
    -- First failure of the current run of failures (null after a success).
    failing_since timestamptz
);

create table webhook_deliveries (
    id              bigserial   primary key,
    webhook_id      uuid        not null references webhooks (id) on delete cascade,
    event_id        bigint      not null references notify_events (id) on delete cascade,
    -- Per-cluster subscriptions get one delivery per cluster ('' otherwise).
    cluster         text        not null default '',
    -- The event's clusters this subscription's cluster filter kept (null: all).
    clusters        text[],
    -- The stable `webhook-id` (the same on every attempt and redelivery).
    message_id      text        not null,
    state           text        not null default 'pending'
                    check (state in ('pending', 'delivered', 'failed')),
    attempts        integer     not null default 0,
    next_attempt_at timestamptz not null,
    lease_owner     text,
    lease_until     timestamptz,
    last_status     integer,
    last_error      text,
    delivered_at    timestamptz,
    created_at      timestamptz not null,
    unique (webhook_id, event_id, cluster)
);
-- The head of each endpoint's queue (delivery in order per endpoint).
create index webhook_deliveries_pending on webhook_deliveries (webhook_id, id) where state = 'pending';
create index webhook_deliveries_by_webhook on webhook_deliveries (webhook_id, id desc);

create table webhook_attempts (
    id               bigserial   primary key,
    delivery_id      bigint      not null references webhook_deliveries (id) on delete cascade,
    attempt          integer     not null,
    at               timestamptz not null,
    replica          text        not null,
    status           integer,
    latency_ms       integer     not null,
    error            text,
    response_excerpt text
);
create index webhook_attempts_by_delivery on webhook_attempts (delivery_id, id);

-- How far the window-edge scheduler has looked (one row): every replica
-- scans (scanned_until, now] and moves it forward; the events' dedup keys
-- make a scan that two replicas run at once harmless.
create table notify_scheduler (
    id            boolean     primary key default true check (id),
    scanned_until timestamptz not null,
    upcoming_until timestamptz not null
);
