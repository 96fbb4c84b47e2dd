"""The cluster controller program: the hub on a host that libjoynr runtimes connect to.

Modules, by job:

- ``config``            its configuration: one frozen section per component, TOML + environment
- ``controller``        assembly of router, transports, system providers and tasks; start/stop
- ``routing_provider``  ``system/Routing``: next hops and multicast receivers for its runtimes
- ``local_discovery``   ``system/Discovery``: the local capabilities directory
- ``bounds``            what those two take on a connection's behalf, within its quotas
- ``gcd_link``          the local directory's calls to the Global Capabilities Directory
- ``local_system``      the same system services for the CC's own in-process runtime
- ``provisioning``      provisioned global providers (file format and loading)
- ``snapshots``         routing table snapshots, periodic and on SIGUSR1 (docs/records.md)
- ``snapshot_command``  ``python -m pyjoynr.cluster_controller snapshot``: one from a running CC
- ``operability``       its admin endpoint: metrics, health checks, the status page
- ``__main__``          the process (``pyjoynr-cluster-controller``, ``python -m
                        pyjoynr.cluster_controller``, ``bin/cluster-controller``)

Sub-package ``access/``: the pure core of access control (entries and joynr's provisioning
format, the combination rule, the store with its wildcard lookup; docs/access-control.md).
"""
