-- Flux's view of each reported object's health (issue 15, rollout waves): the Ready
-- condition, Stalled, metadata.generation against status.observedGeneration and the revision
-- last attempted, written with the rest of the row by report ingestion (one statement per
-- changed report, as before).
alter table object_status
    add column ready                   text check (ready in ('True', 'False', 'Unknown')),
    add column ready_reason            text,
    add column ready_message           text,
    add column stalled                 boolean not null default false,
    add column generation              bigint,
    add column observed_generation     bigint,
    add column last_attempted_revision text;

-- The snapshot revision the spoke enforced when it made its latest report: a report made
-- before a release reached the spoke carries an older one, so a rollout never counts health
-- left over from the previous revision. Kept per cluster beside the report hash (0009): an
-- unchanged report at a newer revision updates this one column and no object row.
alter table cluster_connections add column report_revision bigint;
