"""pyjoynr runtime: the transport-agnostic core (addresses, routing, messages, router)."""
