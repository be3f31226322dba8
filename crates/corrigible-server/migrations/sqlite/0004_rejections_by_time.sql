-- Corrections counted over time (the dashboard's chart) read rejection events by time.
CREATE INDEX events_rejections_at ON events (at) WHERE kind = 'rejection';
