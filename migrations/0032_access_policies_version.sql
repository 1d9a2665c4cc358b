-- A fresh random value whenever any access policy is created, replaced or
-- deleted. Every authentication (API token, session, bearer JWT) resolves
-- its principal against all policies; a replica keeps them parsed and reads
-- them again only when this value moved (like `clusters_version`, 0015:
-- random rather than a counter, so a rolled-back change's value is never
-- taken for a committed state).
alter table fleet_revision
    add column access_policies_version uuid not null default gen_random_uuid();

create function fleetgate_access_policies_changed() returns trigger
language plpgsql as $$
begin
    update fleet_revision set access_policies_version = gen_random_uuid();
    return null;
end
$$;

create trigger access_policies_changed
    after insert or delete or update on access_policies
    for each statement execute function fleetgate_access_policies_changed();
