-- Fleet freezes (the emergency stop): while one is in force on a cluster, every gate there is
-- closed above every override, local request and rollout, and its spoke holds every
-- Kustomization/HelmRelease no gate covers. Never deleted: the audit trail and the rollout
-- opening fences read ended ones.
create table freezes (
    id          uuid        primary key,
    -- Which clusters ({names, selector}); null = every cluster.
    scope       jsonb,
    reason      text        not null check (length(btrim(reason)) > 0),
    starts_at   timestamptz not null,
    expires_at  timestamptz check (expires_at is null or expires_at > starts_at),
    actor       text        not null,
    created_at  timestamptz not null,
    -- Set for a freeze made inside that cluster (the fleetgate-freeze ConfigMap), reported by
    -- its spoke: recorded and shown, never sent back (the cluster ends it itself).
    requested_in text references clusters (name) on delete cascade,
    requested_by text,
    ended_at    timestamptz,
    ended_by    text,
    end_reason  text
);
create index freezes_live on freezes (created_at, id) where ended_at is null;
create unique index freezes_local on freezes (requested_in, created_at) where requested_in is not null;
