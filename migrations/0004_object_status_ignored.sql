-- Objects annotated `fleetgate.io/ignore: "true"` are reported with the gates that target
-- them but are never governed; they are counted apart from governed objects.
alter table object_status add column ignored boolean not null default false;
