-- Every `likely` offer's "why" says the rest of what ranked it (issue 38): the lost races among
-- its accepts, the time since the worker's last offer and whether the floor counted them as
-- left out, and whether the market's curve stood (false: a cold market's wave, no wider than
-- the seed's).
ALTER TYPE dispatch_offer_reason_document ADD ATTRIBUTE lost_races integer;
ALTER TYPE dispatch_offer_reason_document ADD ATTRIBUTE since_offer_s integer;
ALTER TYPE dispatch_offer_reason_document ADD ATTRIBUTE left_out boolean;
ALTER TYPE dispatch_offer_reason_document ADD ATTRIBUTE market_stands boolean;
