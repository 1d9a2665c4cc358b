-- HoldNotPermitted (issue 32 item 5): objects a holdObjects gate selects whose
-- kind the spoke's --held-kinds does not enable. The spoke reports them beside
-- the held objects (HeldObjectStatus.not_permitted); they are never held.
alter table held_objects
    add column not_permitted boolean not null default false;
