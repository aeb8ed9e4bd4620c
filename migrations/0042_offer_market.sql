-- What the market's recorded answers say about distance (issue 24; dispatch.offers.market):
-- how often a worker says yes to a job at their door, and the distance at which that halves,
-- fit by the sweeper from the latest answered offers (offers/sql.py MARKET_ANSWERS). The
-- `likely` policy reads it in every wave instead of assuming the district's curve: in a city
-- whose workers drive further, its chances were half what the workers then did. One row, the
-- market's; none (or too few answers behind it) and the configured curve stands.
CREATE TABLE offer_market (
    id              boolean PRIMARY KEY DEFAULT true,
    door            double precision NOT NULL,
    half_distance_m double precision NOT NULL,
    answers         integer NOT NULL,  -- the answered offers it was fit on
    fitted_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT offer_market_one_row CHECK (id),
    CONSTRAINT offer_market_door_is_a_chance CHECK (door > 0 AND door <= 1),
    CONSTRAINT offer_market_half_distance_positive CHECK (half_distance_m > 0),
    CONSTRAINT offer_market_answers_nonnegative CHECK (answers >= 0)
);
GRANT SELECT, INSERT, UPDATE ON offer_market TO dispatch_app;

-- Every `likely` offer says which curve ranked it (the console's "why").
ALTER TYPE dispatch_offer_reason_document ADD ATTRIBUTE market_door double precision;
ALTER TYPE dispatch_offer_reason_document ADD ATTRIBUTE half_distance_m double precision;
