"""Rows written as if in the past (the history loader's weeks, the simulator's last day): the
database's own clock cannot date them, so their ids are made of their own time."""

# A UUIDv7 of a given time (dispatch_uuid7 reads the clock): the sweeper's fold and every
# cursor over offers take them by id, in creation order. pg_temp: the writing session's own.
UUID7_AT = """
CREATE OR REPLACE FUNCTION pg_temp.uuid7_at(t timestamptz) RETURNS uuid LANGUAGE sql AS $$
  SELECT encode(int8send((floor(extract(epoch FROM t) * 1000)::bigint << 16)
                         | x'7000'::int | floor(random() * 4096)::int)
                || substring(uuid_send(gen_random_uuid()) FROM 9), 'hex')::uuid
$$"""
