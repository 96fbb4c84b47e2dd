"""Interfaces from Franca IDL: reads a fleet's ``.fidl`` files and generates a typed Python
package declaring the same interfaces with this project's API (``runtime.interface``).

Module map:

- ``franca/grammar.lark``: the Franca IDL grammar (lark, LALR), as joynr's model files use it.
- ``franca/model.py``: the resolved model (frozen dataclasses): type collections, interfaces,
  declared types with their joynr wire names. Pure.
- ``franca/parser.py``: ``parse_files(paths) -> Model``: parses, follows imports, resolves
  every type name; errors are a ``FrancaError`` listing ``file:line:column: message``.
- ``franca/generate.py``: ``generate(model, package_name, *, add_version_to)`` -> the generated
  package's sources (pure, deterministic); ``write_package`` writes them all or nothing.
- ``franca/versions.py``: joynr's version modes (``add_version_to``): the model with the major
  versions in its names. Pure.
- ``franca/__main__.py``: ``python -m pyjoynr.franca [-o OUT] [--package NAME] PATH...``.
"""
