-- A turn lease's epoch (docs/store.md, "Fencing"): a value no other acquisition of any
-- session's lease ever had, set by each AcquireLease. Every write transaction of a turn
-- first checks that the lease still has the epoch its turn acquired, so an instance that
-- lost the lease (paused past it, cut off) can write nothing more to the session.
ALTER TABLE turn_leases ADD COLUMN epoch TEXT NOT NULL DEFAULT '';
