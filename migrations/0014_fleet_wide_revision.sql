-- A change that affects every cluster (a gate scoped to the whole fleet, or
-- a NOTIFY payload too long to name its clusters) no longer stamps
-- `clusters.desired_revision` on every row: it records its revision once,
-- here. A cluster's snapshot revision is
-- greatest(clusters.desired_revision, fleet_revision.all_revision): the
-- newest change that affected it, exactly what stamping every row gave, for
-- one row written instead of one per cluster (10,000 row updates, their WAL
-- and dead tuples per fleet-wide flip).
alter table fleet_revision
    add column all_revision bigint not null default 0 check (all_revision >= 0);
