-- The same step as store/migrations/0012_lease_epoch.sql: a turn lease's epoch, which every
-- write transaction of its turn checks (docs/store.md, "Fencing").
ALTER TABLE turn_leases ADD COLUMN epoch TEXT NOT NULL DEFAULT '';
