"""Reads for the people who run the marketplace (role `ops`): jobs and fresh workers in a box
on the map, the event stream after a cursor, the last hour's figures. Read-only."""
