"""Access control of the cluster controller, its pure core: who may call which operation of an
interface on a domain (access control entries, ACL), who may register a provider of it
(registration control entries, RCL), and who may change those entries (domain roles).

Nothing here does I/O, reads a clock or logs a decision: the cluster controller reads the
provisioning files and hands their text in, asks the store, and logs what it decides.

Modules:

- ``entries``    the entry types, trust levels, permissions and roles; joynr's JSON provisioning
                 format read strictly (``parse_tables``) and written (``dump_tables``)
- ``algorithm``  the validators of an entry against its parents and ``decide``: one permission
                 out of a master, a mediator and an owner entry
- ``store``      ``AccessStore``: the seven tables merged, the lookup with wildcards and
                 operations, the decisions, the editor's updates and removals

The rules in words: docs/access-control.md, "The rules".
"""
