"""Transports: thin I/O layers that move frames between the router and the network."""
