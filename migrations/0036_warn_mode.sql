-- Warn mode (issue 38): per reported object, the closed warn-mode gates (spec.enforcement: warn)
-- that would suspend it if they were enforced, and whether they would hold a newer revision.
-- Kept apart from suspended_by/held: nothing is held for a warn gate.
alter table object_status
    add column would_suspend_by text[] not null default '{}',
    add column would_hold       boolean not null default false;

-- Impact preview (issue 38, `gate apply --dry-run`): every Flux object a spoke sees, with its
-- labels and sources, as its latest report carried it, so the hub can say which objects a new or
-- changed gate would govern and hold before it is applied. One row per cluster (the whole
-- inventory as one JSON array, written only when it changes); NULL objects: the spoke predates it.
create table cluster_inventories (
    cluster     text        primary key references clusters (name) on delete cascade,
    objects     jsonb       not null check (jsonb_typeof(objects) = 'array'),
    hash        bytea       not null,
    reported_at timestamptz not null
);
