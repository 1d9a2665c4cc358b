-- Since when an object has been failing (Ready=False or Stalled) without a break, as the hub
-- received its reports: a rollout's failureGrace counts from here (or from the release or resume,
-- whichever is later), so an object turning Ready=False late in a wave gets the whole grace.
-- NULL while the object is not failing.
alter table object_status add column failing_since timestamptz;
