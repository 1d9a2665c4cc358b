-- Flux's view of each reported object's health (issue 15, rollout waves): the Ready
-- condition, Stalled, metadata.generation against status.observedGeneration, the revision
-- last attempted, and the snapshot revision the spoke enforced when it reported them (a
-- report made before a release reached the spoke carries an older one). Written with the
-- rest of the row by report ingestion (one statement per report, as before).
alter table object_status
    add column ready                   text check (ready in ('True', 'False', 'Unknown')),
    add column ready_reason            text,
    add column ready_message           text,
    add column stalled                 boolean not null default false,
    add column generation              bigint,
    add column observed_generation     bigint,
    add column last_attempted_revision text,
    add column report_revision         bigint;
