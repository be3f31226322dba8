-- Circuit breakers shared by the instances that run with `--shared-breakers`: one row per
-- tool, changed only inside an immediate (write-locked) transaction.
CREATE TABLE breakers (
    tool     TEXT PRIMARY KEY,
    state    TEXT NOT NULL,                    -- closed, open or half_open
    failures INTEGER NOT NULL,                 -- consecutive failures
    since_ms INTEGER NOT NULL                  -- opened or probed at, unix milliseconds
);
