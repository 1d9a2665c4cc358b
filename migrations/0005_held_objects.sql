-- Objects inside Kustomizations that `holdObjects` gates select, as each
-- cluster's spoke reports them (StatusReport.held_objects): the full set per
-- report, replaced like `object_status`. Spokes that predate object holds send
-- none, so their clusters simply have no rows here.
create table held_objects (
    cluster                 text        not null references clusters (name) on delete cascade,
    api_group               text        not null, -- '' for the core group
    kind                    text        not null,
    namespace               text        not null, -- '' for cluster-scoped objects
    name                    text        not null,
    kustomization_namespace text        not null,
    kustomization_name      text        not null,
    gates                   text[]      not null default '{}',
    held_by                 text[]      not null default '{}',
    held_by_person          boolean     not null default false,
    held_since_revision     text,
    held_since              timestamptz,
    newer_revision_applied  boolean     not null default false,
    reported_at             timestamptz not null,
    primary key (cluster, api_group, kind, namespace, name)
);
