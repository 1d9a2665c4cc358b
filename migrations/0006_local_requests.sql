-- Open/close requests made inside a cluster (annotations on a Gate object) are recorded as
-- overrides of that cluster; these columns say so explicitly, so every surface can list a
-- cluster's local requests and who made them without parsing the actor.
alter table overrides add column requested_in text;
alter table overrides add column requested_by text;
create index overrides_requested_in on overrides (requested_in) where requested_in is not null;
