-- Each run belongs to the instance that executes it; instances renew a lease (heartbeat) so
-- others can tell a crashed owner from a live one.
ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '';

CREATE INDEX runs_running_owner ON runs (owner) WHERE status = 'running';

CREATE TABLE instances (
    id           TEXT PRIMARY KEY NOT NULL,
    heartbeat_at INTEGER NOT NULL              -- unix milliseconds
);
