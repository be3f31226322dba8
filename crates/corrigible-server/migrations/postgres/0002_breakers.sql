-- Circuit breakers shared by the instances that run with `--shared-breakers`: one row per
-- tool, changed only under its row lock.
CREATE TABLE breakers (
    tool     TEXT PRIMARY KEY,
    state    TEXT NOT NULL,                    -- closed, open or half_open
    failures BIGINT NOT NULL,                  -- consecutive failures
    since_ms BIGINT NOT NULL                   -- opened or probed at, by the database's clock
);
