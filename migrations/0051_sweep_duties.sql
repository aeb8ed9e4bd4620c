-- The sweeper's duties on a schedule (issue 36, point 4): when each duty that is not run on
-- every pass (dispatch.sweeper.DUTIES: idempotency keys, the market's curve, worker positions)
-- last ran to its end. A Lambda invocation keeps nothing for the next one, so the schedule
-- lives here. A duty cut short or failed is not recorded: it stays due, and the next pass
-- runs it again.
CREATE TABLE sweep_duties (
    duty   text PRIMARY KEY,
    ran_at timestamptz NOT NULL  -- the start of the pass whose run of the duty finished it
);

GRANT SELECT, INSERT, UPDATE ON sweep_duties TO dispatch_app;
