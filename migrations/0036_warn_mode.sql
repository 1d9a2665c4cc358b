-- Warn mode (issue 38): per reported object, the closed warn-mode gates (spec.enforcement: warn)
-- that would suspend it if they were enforced, and whether they would hold a newer revision.
-- Kept apart from suspended_by/held: nothing is held for a warn gate.
alter table object_status
    add column would_suspend_by text[] not null default '{}',
    add column would_hold       boolean not null default false;
