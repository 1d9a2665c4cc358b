-- A fresh random value whenever the set of clusters or any cluster's labels
-- changes (insert, delete, update of name or labels; not the frequent
-- desired_revision stamps). A replica keeps the names and labels every
-- write needs to find the clusters it affects (10,000 rows read per
-- fleet-wide flip, ~14 ms of a 20 ms write) and reads them again only when
-- this value moved. Random rather than a counter: a rolled-back change's
-- value is never committed later by another one, so a copy read inside a
-- transaction that rolled back can never be taken for the committed state.
alter table fleet_revision
    add column clusters_version uuid not null default gen_random_uuid();

create function fleetgate_clusters_changed() returns trigger
language plpgsql as $$
begin
    update fleet_revision set clusters_version = gen_random_uuid();
    return null;
end
$$;

create trigger clusters_changed
    after insert or delete or update of name, labels on clusters
    for each statement execute function fleetgate_clusters_changed();
