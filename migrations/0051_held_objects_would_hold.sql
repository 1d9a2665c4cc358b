-- Warn mode for holdObjects gates (issue 38): per reported object inside a
-- Kustomization, the closed warn-mode gates (spec.enforcement: warn) that would
-- hold it if they were enforced, the Kustomization's applied revision when one
-- first would, and whether it applied a newer revision since. Kept apart from
-- held_by: nothing is marked for a warn gate.
alter table held_objects
    add column would_hold_by             text[]  not null default '{}',
    add column would_hold_since_revision text,
    add column would_hold_newer_revision boolean not null default false;
