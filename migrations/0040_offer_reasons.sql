-- Why a worker was offered a job (issue 24): offer.created carries the inputs that ranked the
-- worker (offers.models.OfferReason, in its field order), so that the console and support can
-- answer "why did he get it and not me?". Written by both policies (offers/sql.py): `nearest`
-- fills the distance, the ratings and the rank; `likely` also the worker's record, the chance
-- and the score. Events written before this have no reason (null).
CREATE TYPE dispatch_offer_reason_document AS (
    policy text,
    rank integer,
    supply integer,
    distance_m double precision,
    rating double precision,
    min_rating double precision,
    offers integer,
    accepts integer,
    declines integer,
    silences integer,
    releases integer,
    leases_run_out integer,
    answer_s double precision,
    idle_s integer,
    round_declines integer,
    chance double precision,
    soon double precision,
    score double precision
);
ALTER TYPE dispatch_offer_created_document ADD ATTRIBUTE why dispatch_offer_reason_document;
