"""The Unix domain socket link between libjoynr runtimes and their cluster controller on the
same host: joynr's UDS frames (transports.uds.framing), the server and client ends."""
