-- Rollout waves (issue 15): a gate with spec.rollout opens its clusters wave by wave on
-- every closed→open change of the gate for its scope. Each opening gets one rollout row, a
-- state machine driven by one hub replica at a time (a transaction-scoped advisory lock
-- per gate); every step is committed, with its audit row, before the snapshots carrying
-- its releases are sent. A rollout ends (ended_at) when the gate closes; the next opening
-- starts a new one from the first wave (progress does not carry over).
create table rollouts (
    id               uuid        primary key,
    gate             text        not null references gates (name) on delete cascade,
    -- The instant the gate's open period began (policy CompiledGate::open_since).
    opening_at       timestamptz not null,
    -- spec.rollout as it was when the rollout started: a gate edit mid-rollout does not
    -- reshuffle the waves of the running one.
    spec             jsonb       not null,
    state            text        not null
                     check (state in ('running', 'paused', 'halted', 'aborted', 'completed', 'ended')),
    -- The current wave (0-based): released, or the next to release.
    wave             integer     not null default 0 check (wave >= 0),
    -- When the current wave was released (null: not yet).
    wave_released_at timestamptz,
    -- Health of the current wave is judged from here (release, or the last resume).
    health_since     timestamptz,
    -- When the current wave became healthy: its soak runs from here.
    healthy_at       timestamptz,
    -- An operator approved (release-next) this wave.
    approved_wave    integer,
    -- Why it halted / ended, for people.
    detail           text,
    started_at       timestamptz not null,
    ended_at         timestamptz
);
-- One current rollout per gate.
create unique index rollouts_current on rollouts (gate) where ended_at is null;
create index rollouts_by_gate on rollouts (gate, started_at desc);

create table rollout_clusters (
    rollout_id  uuid        not null references rollouts (id) on delete cascade,
    cluster     text        not null references clusters (name) on delete cascade,
    wave        integer     not null check (wave >= 0),
    -- Came into scope after the rollout started.
    late        boolean     not null default false,
    -- Released: its snapshot carries the release (null: closed by the rollout).
    released_at timestamptz,
    -- The opening instant its release names (the cluster's own open_since, which its
    -- overrides may move); kept current by the driver.
    opening_at  timestamptz,
    -- The cluster's desired_revision when the release was committed: only reports the
    -- spoke made at this snapshot revision or later count for its health.
    release_revision bigint,
    -- A cluster-scoped open override released it ahead of its wave.
    bypass      boolean     not null default false,
    primary key (rollout_id, cluster)
);
create index rollout_clusters_cluster on rollout_clusters (cluster);
