-- Offer answers folded once, into records kept as they change (issue 35, "Day thirty"): the
-- market's curve (MARKET_ANSWERS) and the `likely` policy's view of each worker
-- (LIKELY_CANDIDATES) recounted a day of raw offers and probed their answers on every call,
-- 9.4x and 2.2x their empty-database cost at 30 days. The sweeper now folds each offer's answer
-- once, when it can no longer change (offers/sql.py FOLD_ANSWERS), into decayed tallies: a
-- tally read or folded at time t is value * exp(-(t - as_of) / tau), tau the offer history
-- (DISPATCH_OFFER_HISTORY_SECONDS, a day), and each answer enters weighted by its own age, so
-- a record says the same whenever it was folded. These tables grow with workers and distance
-- bands, never with history (docs/retention.md); the archivist has no business with them.
-- The fold reads job_offers by time through its primary key (uuid v7: creation order) with
-- dispatch_uuid7_floor (0011).

-- A tally decayed from `as_of` to `at`: value * exp(-(at - as_of) / tau). Forty time
-- constants or more, or a tally below 1e-9, reads as none (a float8 product that small would
-- underflow: Postgres refuses it rather than give 0).
CREATE FUNCTION dispatch_decayed(
    value double precision, as_of timestamptz, at timestamptz, tau_s double precision
) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN value < 1e-9 OR extract(epoch FROM at - as_of)::float8 > 40 * tau_s THEN 0
              ELSE value * exp(-extract(epoch FROM at - as_of)::float8 / tau_s) END
$$;

-- How far the fold has gone: the last job_offers id folded (and its created_at, which bounds
-- the later offers' from below: the policy reads those live). One row, always there (the
-- fold locks it, so two sweepers never fold the same offers); no offer folded yet: null, and
-- the first fold starts at the history window.
CREATE TABLE offer_answers_folded (
    id            boolean PRIMARY KEY DEFAULT true,
    last_offer_id uuid,
    last_offer_at timestamptz,
    folded_at     timestamptz,
    CONSTRAINT offer_answers_folded_one_row CHECK (id),
    CONSTRAINT offer_answers_folded_whole
        CHECK ((last_offer_id IS NULL) = (last_offer_at IS NULL))
);
INSERT INTO offer_answers_folded DEFAULT VALUES;
GRANT SELECT, UPDATE ON offer_answers_folded TO dispatch_app;

-- The market's answered offers by distance band (dispatch.offers.market.BAND_M wide, from 0):
-- how many, and how many said yes, decayed as of `as_of`. A few dozen rows.
CREATE TABLE offer_market_bands (
    band    integer PRIMARY KEY,
    offers  double precision NOT NULL,
    accepts double precision NOT NULL,
    as_of   timestamptz NOT NULL,
    CONSTRAINT offer_market_bands_band_nonnegative CHECK (band >= 0),
    CONSTRAINT offer_market_bands_counts_nonnegative CHECK (offers >= 0 AND accepts >= 0),
    CONSTRAINT offer_market_bands_accepts_within_offers
        CHECK (accepts <= offers * (1 + 1e-9) + 1e-9)  -- slack for float rounding
);
GRANT SELECT, INSERT, UPDATE ON offer_market_bands TO dispatch_app;

-- Each worker's answers (the columns LIKELY_CANDIDATES returns, policy.Candidate), decayed as
-- of `as_of`: answered or gone silent, accepts, declines, silences; accepts that ended in a
-- release or a lease that ran out; `expected`, the yeses their offers' distances alone predict
-- (the market's curve standing when folded); their answer time's sum and count (the mean is
-- one over the other); when they last said yes (the offer's time).
CREATE TABLE worker_answers (
    worker_id      text PRIMARY KEY,
    offers         double precision NOT NULL,
    accepts        double precision NOT NULL,
    declines       double precision NOT NULL,
    silences       double precision NOT NULL,
    releases       double precision NOT NULL,
    leases_run_out double precision NOT NULL,
    expected       double precision NOT NULL,
    answer_s_sum   double precision NOT NULL,
    answer_s_count double precision NOT NULL,
    last_accept_at timestamptz,
    as_of          timestamptz NOT NULL,
    CONSTRAINT worker_answers_counts_nonnegative
        CHECK (offers >= 0 AND accepts >= 0 AND declines >= 0 AND silences >= 0
               AND releases >= 0 AND leases_run_out >= 0 AND expected >= 0
               AND answer_s_sum >= 0 AND answer_s_count >= 0),
    -- Each answered offer is one of the three; small slack for float rounding.
    CONSTRAINT worker_answers_kinds_within_offers
        CHECK (accepts + declines + silences <= offers * (1 + 1e-9) + 1e-9)
);
GRANT SELECT, INSERT, UPDATE ON worker_answers TO dispatch_app;
