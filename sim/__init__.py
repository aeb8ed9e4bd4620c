"""The simulated city: a seeded world that runs against the real dispatch (never deployed, and
never imported by the layer). `dispatch simulate SCENARIO`, `make simulate`."""
