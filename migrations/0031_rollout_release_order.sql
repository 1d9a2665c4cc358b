-- A rollout member's place in its release order (sortLabel, then name, as the waves were
-- planned; late joiners after them), so status lists each wave's clusters in the order they are
-- released rather than by name. Rollouts started before this migration keep 0: by name.
alter table rollout_clusters add column position integer not null default 0;
