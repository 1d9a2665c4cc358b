-- fleetgate hub schema: gates, overrides, clusters, per-object status,
-- the append-only audit log, API tokens and the fleet revision counter.

-- One row: the fleet revision, bumped by every write. Its row lock also
-- serialises writers, so revisions commit in order.
create table fleet_revision (
    id       boolean primary key default true check (id),
    revision bigint  not null default 0 check (revision >= 0)
);
insert into fleet_revision (id, revision) values (true, 0);

create table clusters (
    name              text        primary key,
    labels            jsonb       not null default '{}'::jsonb check (jsonb_typeof(labels) = 'object'),
    -- sha256 of the spoke token (`fgs_...`); the token itself is never stored.
    token_hash        bytea       not null unique,
    created_at        timestamptz not null,
    last_seen_at      timestamptz,
    spoke_version     text,
    connected         boolean     not null default false,
    connected_replica text,
    clock_offset_ms   bigint,
    -- Fleet revision of the last change affecting this cluster's snapshot.
    desired_revision  bigint      not null default 0
);

create table gates (
    name       text        primary key,
    manifest   jsonb       not null,
    version    bigint      not null default 1 check (version >= 1),
    created_at timestamptz not null,
    updated_at timestamptz not null
);

create table overrides (
    id           uuid        primary key,
    gate         text        not null references gates (name) on delete cascade,
    -- ClusterScope JSON ({names, selector}); null = the gate's whole scope.
    scope        jsonb,
    state        text        not null check (state in ('open', 'closed')),
    starts_at    timestamptz not null,
    expires_at   timestamptz check (expires_at is null or expires_at > starts_at),
    actor        text        not null,
    reason       text        not null,
    created_at   timestamptz not null,
    cancelled_at timestamptz,
    cancelled_by text
);
create index overrides_live on overrides (gate, created_at) where cancelled_at is null;
create index overrides_created on overrides (created_at, id);

-- Written by the spokes' status reports (gRPC), read by REST status.
create table object_status (
    cluster                text        not null references clusters (name) on delete cascade,
    kind                   text        not null,
    namespace              text        not null,
    name                   text        not null,
    suspended              boolean     not null default false,
    suspended_by           text[]      not null default '{}',
    gates                  text[]      not null default '{}',
    last_applied_revision  text,
    newest_source_revision text,
    held                   boolean     not null default false,
    suspended_by_human     boolean     not null default false,
    reported_at            timestamptz not null,
    primary key (cluster, kind, namespace, name)
);

create table audit_log (
    id          bigserial   primary key,
    at          timestamptz not null,
    actor       text        not null,
    action      text        not null,
    target_kind text        not null,
    target_name text        not null,
    before      jsonb,
    after       jsonb,
    reason      text
);
create index audit_log_at on audit_log (at, id);
create index audit_log_actor on audit_log (actor, id);
create index audit_log_target on audit_log (target_kind, target_name, id);

-- The audit log is append-only: any UPDATE, DELETE or TRUNCATE fails.
create function audit_log_append_only() returns trigger language plpgsql as $$
begin
    raise exception 'audit_log is append-only (% rejected)', tg_op;
end;
$$;
create trigger audit_log_no_update_delete
    before update or delete on audit_log
    for each row execute function audit_log_append_only();
create trigger audit_log_no_truncate
    before truncate on audit_log
    for each statement execute function audit_log_append_only();

create table api_tokens (
    id         uuid        primary key,
    name       text        not null unique,
    role       text        not null check (role in ('viewer', 'operator', 'admin')),
    -- sha256 of the secret (`fga_...`); the secret itself is never stored.
    token_hash bytea       not null unique,
    created_at timestamptz not null,
    revoked_at timestamptz
);
