-- Overrides are never deleted (the audit trail and the opening fence read them), so
-- a gate's history only grows. The only index on `gate` was partial (live overrides):
-- `ended_closes` (every fleet read of a rollout gate) and the cascade of a gate delete
-- scanned every override ever made. Now they read one gate's overrides.
create index overrides_by_gate on overrides (gate, state);
