-- Teams: access policies (kind AccessPolicy), scoped API tokens, the audit
-- log naming people, and the cluster scope a gate's last writer held.

create table access_policies (
    name       text        primary key,
    manifest   jsonb       not null,
    version    bigint      not null default 1 check (version >= 1),
    created_at timestamptz not null,
    updated_at timestamptz not null
);

-- An API token's own scope (AccessScope JSON); null: unscoped.
alter table api_tokens add column scope jsonb;

-- Who made an audited change beyond the `actor` display name: the kind of
-- principal (token, person, workload, system), a person's or workload's
-- issuer and subject, email, groups, and what granted the action
-- (`policy payments (group payments)`, `token ci`) with the policies' names.
alter table audit_log
    add column actor_kind     text,
    add column actor_issuer   text,
    add column actor_subject  text,
    add column actor_email    text,
    add column actor_groups   text[],
    add column granted_by     text[],
    add column actor_policies text[];

create index audit_log_subject on audit_log (actor_subject, id) where actor_subject is not null;
create index audit_log_email on audit_log (lower(actor_email), id) where actor_email is not null;
create index audit_log_policies on audit_log using gin (actor_policies);
create index audit_log_groups on audit_log using gin (actor_groups);

-- The cluster scopes (a JSON array of ClusterScope) of the scoped admin
-- that last wrote the gate; null when an unscoped principal did. The gate
-- applies only to clusters inside one of them, also clusters registered
-- later.
alter table gates add column writer_scope jsonb;
