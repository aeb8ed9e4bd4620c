-- Every `likely` offer's "why" says whether the floor's seat chose the worker (issue 38): a
-- worker left out longest, offered beside the likeliest rather than ranked among them.
ALTER TYPE dispatch_offer_reason_document ADD ATTRIBUTE seat boolean;
