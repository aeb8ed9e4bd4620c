"""Offers in waves: a job that opens is pushed to the nearest qualified, idle workers."""
