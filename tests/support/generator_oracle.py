"""What reaches joynr's wire from a Franca model, read from three generators' output into one
plain structure, and the differences between two such structures.

The structure (:data:`Structure`) is a dict of plain values::

    {"types": {wire name: {"kind": "struct" | "enum" | "map", "base": wire name | None,
                           "members": [names in order], "literals": [names in order],
                           "key": datatype, "value": datatype}},
     "interfaces": {"vehicle/Radio": {
         "version": [major, minor],
         "methods": {"name(paramDatatype,...)": {"out": [datatypes], "error": wire name | None,
                                                 "fireAndForget": bool}},
         "attributes": {name: {"type": datatype, "readonly": bool, "notifiable": bool}},
         "broadcasts": {name: {"selective": bool, "out": [datatypes],
                               "multicast": name | None}}}}}

A method's key carries its ``paramDatatypes`` as the runtime that sends the request names them
(joynr's Java runtime: a parameter class's canonical name without ``java.lang.``; its
JavaScript runtime: the ``type`` the generated proxy gives the parameter; this project's: the
declared ``joynr_datatypes``, else the names its joynr dialect derives). A datatype is named
as in ``paramDatatypes`` (``Integer``, ``Byte[]``, ``joynr.vehicle.Station[]``). Where an
extractor cannot read an item from its output it gives ``None`` and the comparison passes
over it (TypeScript: a map's key and value types; Java: a broadcast's out types).
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import itertools
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from pyjoynr.runtime.interface import (
    InterfaceDef,
    joynr_map_types,
    joynr_member_names,
    joynr_type_name,
    member_joynr_name,
)
from pyjoynr.runtime.joynr_json import joynr_datatype

Structure = dict[str, Any]

_JAVA_LANG = {"String", "Boolean", "Byte", "Short", "Integer", "Long", "Float", "Double",
              "Object", "Void"}
_INTEGER_NAMES = {"Byte", "Short", "Integer", "Long"}


def empty() -> Structure:
    return {"types": {}, "interfaces": {}}


# ------------------------------------------------------------------------------- Java

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def _java_source(path: Path) -> str:
    return _COMMENT.sub("", path.read_text(encoding="utf-8"))


class _JavaNames:
    """Resolves the simple type names of one Java file to canonical names."""

    def __init__(self, text: str) -> None:
        package = re.search(r"^package ([\w.]+);", text, re.M)
        self.package = package.group(1) if package else ""
        self.imports = {m.group(1).rsplit(".", 1)[-1]: m.group(1)
                        for m in re.finditer(r"^import ([\w.]+);", text, re.M)}

    def datatype(self, java_type: str) -> str:
        java_type = java_type.strip()
        dims = ""
        while java_type.endswith("[]"):
            java_type, dims = java_type[:-2].strip(), dims + "[]"
        if java_type in _JAVA_LANG:
            return java_type + dims
        if "." in java_type:
            return java_type + dims
        found = self.imports.get(java_type)
        return (found if found else f"{self.package}.{java_type}") + dims


def _java_params(text: str, names: _JavaNames) -> list[str]:
    types = []
    for param in (p.strip() for p in text.split(",")):
        if param:
            types.append(names.datatype(param.rsplit(None, 1)[0]))
    return types


def _java_types(path: Path, text: str, names: _JavaNames, found: dict[str, Any]) -> None:
    top = path.stem
    for match in re.finditer(r"public (?:static )?enum (\w+) \{(.*?)^\s*;", text, re.M | re.S):
        name = match.group(1)
        wire = f"{names.package}.{name}" if name == top else f"{names.package}.{top}.{name}"
        literals = re.findall(r"^\s*([A-Za-z_]\w*)\s*,?\s*$", match.group(2), re.M)
        found[wire] = {"kind": "enum", "literals": literals}
    cls = re.search(rf"^public class {top} extends (\w+)(?:<(\w+), ([\w\[\]]+)>)? implements",
                    text, re.M)
    if cls and cls.group(1) == "HashMap":
        found[f"{names.package}.{top}"] = {
            "kind": "map", "key": names.datatype(cls.group(2)),
            "value": names.datatype(cls.group(3))}
        return
    cls = re.search(rf"^public class {top} (?:extends (\w+) )?implements [\w, ]*JoynrType",
                    text, re.M)
    if cls:
        members = re.findall(r"^\tprivate (?!static)[\w.\[\]<>, ]+? (\w+)(?: = [^;]*)?;", text,
                             re.M)
        found[f"{names.package}.{top}"] = {
            "kind": "struct", "members": members,
            "base": names.datatype(cls.group(1)) if cls.group(1) else None}


def _java_interface(text: str, names: _JavaNames, broadcasts_text: str | None) -> tuple[
        str, dict[str, Any]]:
    header = re.search(r'@JoynrInterface\(.*name = "([^"]+)"\)\s*@JoynrVersion\(major = (\d+), '
                       r"minor = (\d+)\)", text)
    assert header is not None, "no @JoynrInterface in a provider"
    attributes: dict[str, Any] = {}
    for match in re.finditer(r"^\tPromise<Deferred<([\w.\[\]]+)>> get(\w+)\(\);", text, re.M):
        name = match.group(2)[:1].lower() + match.group(2)[1:]
        attributes[name] = {"type": names.datatype(match.group(1)), "readonly": True,
                            "notifiable": None}
    for match in re.finditer(r"^\tPromise<DeferredVoid> set(\w+)\(", text, re.M):
        attributes[match.group(1)[:1].lower() + match.group(1)[1:]]["readonly"] = False
    deferred: dict[str, tuple[list[str], str | None]] = {}
    for match in re.finditer(r"public class (\w+Deferred) extends AbstractDeferred \{(.*?)\n\t\}",
                             text, re.S):
        resolve = re.search(r"resolve\(([^)]*)\)", match.group(2))
        reject = re.search(r"reject\(([\w.]+) error\)", match.group(2))
        outs = _java_params(resolve.group(1), names) if resolve else []
        deferred[match.group(1)] = (outs, names.datatype(reject.group(1)) if reject else None)
    methods: dict[str, Any] = {}
    for match in re.finditer(r"^\tpublic (Promise<(\w+)>|void) (\w+)\(([^)]*)\);", text, re.M):
        params = _java_params(match.group(4), names)
        outs, error = deferred.get(match.group(2) or "", ([], None))
        methods[f"{match.group(3)}({','.join(params)})"] = {
            "out": outs, "error": error, "fireAndForget": match.group(1) == "void"}
    broadcasts: dict[str, Any] = {}
    for match in re.finditer(r"(@JoynrMulticast\(name = \"(\w+)\"\)\s*)?abstract Future<String> "
                             r"subscribeTo(\w+)Broadcast\(", broadcasts_text or ""):
        name = match.group(3)[:1].lower() + match.group(3)[1:]
        broadcasts[name] = {"selective": match.group(1) is None, "out": None,
                            "multicast": match.group(2)}
    return header.group(1), {"version": [int(header.group(2)), int(header.group(3))],
                             "methods": methods, "attributes": attributes,
                             "broadcasts": broadcasts}


def _without_version_copies(found: Structure) -> Structure:
    types = found["types"]
    for wire in [w for w in types if _VERSION_SEGMENT.search(w)
                 and _VERSION_SEGMENT.sub(".", w, count=1) in types]:
        del types[wire]
    return found


def from_java(out: Path) -> Structure:
    """The structure of joynr's Java output under ``out``."""
    found = empty()
    for path in sorted(out.rglob("*.java")):
        text = _java_source(path)
        names = _JavaNames(text)
        if path.stem.endswith("Provider") and "@JoynrInterface(" in text:
            base = path.with_name(path.stem.removesuffix("Provider") + "BroadcastInterface.java")
            name, interface = _java_interface(
                text, names, _java_source(base) if base.is_file() else None)
            subscriptions = path.with_name(
                path.stem.removesuffix("Provider") + "SubscriptionInterface.java")
            notifiable = set(re.findall(r'attributeName = "(\w+)"', _java_source(subscriptions))
                             ) if subscriptions.is_file() else set()
            for attr_name, attr in interface["attributes"].items():
                attr["notifiable"] = attr_name in notifiable
            found["interfaces"][name] = interface
        else:
            _java_types(path, text, names, found["types"])
    return _without_version_copies(found)


# ------------------------------------------------------------------------- TypeScript

_TS_TYPE = re.compile(r'type\s*:\s*"([^"]*)"')
#: the end of a list of parameters (a line with its closing bracket)
_LIST_END = re.compile(r"\n\s*\],?[ \t]*(?=\n)")
#: a package segment of a version (joynr's generators emit a copy of a versioned type
#: collection's or interface's types under it, which nothing of the model refers to)
_VERSION_SEGMENT = re.compile(r"\.v\d+\.")


def _ts_params(block: str) -> list[str]:
    return _TS_TYPE.findall(block)


def _ts_signatures(block: str) -> list[dict[str, Any]]:
    signatures = []
    for part in block.split("inputParameter")[1:]:
        inputs, rest = _LIST_END.split(part, 1)
        outputs = _LIST_END.split(rest.split("outputParameter", 1)[1], 1)[0] if (
            "outputParameter" in rest) else ""
        error = re.search(r'error\s*:\s*\{\s*type\s*:\s*"([^"]*)"', rest)
        forget = re.search(r"fireAndForget\s*:\s*(true|false)", rest)
        signatures.append({
            "in": _ts_params(inputs), "out": _ts_params(outputs),
            "error": None if error is None or error.group(1) == "no error enumeration given"
            else error.group(1),
            "fireAndForget": None if forget is None else forget.group(1) == "true"})
    return signatures


def _ts_operations(text: str, kind: str) -> dict[str, list[dict[str, Any]]]:
    found = {}
    for match in re.finditer(rf'new {kind}\([^,]+, "(\w+)", \[(.*?)\n\t\t\]\)', text, re.S):
        found[match.group(1)] = _ts_signatures(match.group(2))
    return found


def _ts_interface(provider: str, proxy: str) -> tuple[str, dict[str, Any]]:
    name = re.search(r'public interfaceName = "([^"]+)"', provider)
    major = re.search(r"public static MAJOR_VERSION = (\d+);", provider)
    minor = re.search(r"public static MINOR_VERSION = (\d+);", provider)
    assert name and major and minor, "a provider without its name and version"
    attributes = {}
    for match in re.finditer(r"new Provider(Read|ReadWrite)(Notify)?Attribute<.*?>\(this, "
                             r'implementation\.\w+, "(\w+)", "([^"]+)"\)', provider):
        attributes[match.group(3)] = {"type": match.group(4),
                                      "readonly": match.group(1) == "Read",
                                      "notifiable": match.group(2) is not None}
    by_provider = _ts_operations(provider, "ProviderOperation")
    by_proxy = _ts_operations(proxy, "ProxyOperation")
    methods = {}
    for op_name, signatures in by_proxy.items():
        errors = by_provider.get(op_name, [])
        for i, signature in enumerate(signatures):
            methods[f"{op_name}({','.join(signature['in'])})"] = {
                "out": signature["out"], "fireAndForget": signature["fireAndForget"],
                "error": errors[i]["error"] if i < len(errors) else None}
    broadcasts = {}
    for match in re.finditer(r'new ProviderEvent\(\{\s*eventName : "(\w+)",\s*'
                             r"outputParameterProperties : \[(.*?)\],\s*selective : (\w+)",
                             provider, re.S):
        selective = match.group(3) == "true"
        broadcasts[match.group(1)] = {"selective": selective, "out": _ts_params(match.group(2)),
                                      "multicast": None if selective else match.group(1)}
    return name.group(1), {"version": [int(major.group(1)), int(minor.group(1))],
                           "methods": methods, "attributes": attributes,
                           "broadcasts": broadcasts}


def from_typescript(out: Path) -> Structure:
    """The structure of joynr's JavaScript generator's TypeScript output under ``out``."""
    found = empty()
    texts = {path: path.read_text(encoding="utf-8") for path in sorted(out.rglob("*.ts"))}
    wire_names = {}
    for path, text in texts.items():
        match = re.search(r'public static _typeName: string = "([^"]+)"', text)
        if match:
            wire_names[path] = match.group(1)
    for path, wire in wire_names.items():
        text = texts[path]
        cls = re.search(r"^class \w+ extends (\w+)", text, re.M)
        base = cls.group(1) if cls else ""
        if base.startswith("JoynrEnum"):
            literals = re.findall(r'= new \w+\(\{\s*name: "(\w+)"', text)
            found["types"][wire] = {"kind": "enum", "literals": literals}
        elif base.startswith("JoynrMap"):
            found["types"][wire] = {"kind": "map", "key": None, "value": None}
        else:
            block = re.search(r"_memberTypes: Record<string, string> = \{(.*?)\}", text, re.S)
            members = re.findall(r"^\s*(\w+): \"", block.group(1), re.M) if block else []
            base_wire = None
            if base != "JoynrCompound":
                imported = re.search(rf'^import {base} = require\("([^"]+)"\)', text, re.M)
                assert imported is not None, f"{path}: base {base} not imported"
                base_wire = wire_names[(path.parent / (imported.group(1) + ".ts")).resolve()]
            found["types"][wire] = {"kind": "struct", "members": members, "base": base_wire}
    # TypeScript lists a struct's inherited members first: keep its own, as Java declares them
    full = {wire: list(t.get("members", ())) for wire, t in found["types"].items()}
    for declared in found["types"].values():
        base = declared.get("base")
        if base is not None and declared["members"][:len(full[base])] == full[base]:
            declared["members"] = declared["members"][len(full[base]):]
    for path, text in texts.items():
        if path.stem.endswith("Provider") and "public interfaceName" in text:
            proxy = path.with_name(path.stem.removesuffix("Provider") + "Proxy.ts")
            name, interface = _ts_interface(text, texts.get(proxy, ""))
            found["interfaces"][name] = interface
    return _without_version_copies(found)


# ---------------------------------------------------------------------------- project


def _members(tp: type) -> tuple[list[str], str | None]:
    base = next((b for b in tp.__mro__[1:] if "__joynr_name__" in vars(b)
                 and dataclasses.is_dataclass(b)), None)
    inherited = {f.name for f in dataclasses.fields(base)} if base is not None else set()
    names = joynr_member_names(tp)
    return ([names[f.name] for f in dataclasses.fields(tp) if f.name not in inherited],
            joynr_type_name(base) if base is not None else None)


def _project_type(tp: type) -> dict[str, Any]:
    if issubclass(tp, enum.Enum):
        return {"kind": "enum", "literals": [member.name for member in tp]}
    map_types = joynr_map_types(tp)
    if map_types is not None:
        return {"kind": "map", "key": joynr_datatype(map_types[0]),
                "value": joynr_datatype(map_types[1])}
    members, base = _members(tp)
    return {"kind": "struct", "members": members, "base": base}


def _method_keys(name: str, datatypes: list[str | tuple[str, ...]]) -> list[str]:
    choices = [list(d) if isinstance(d, tuple) else [d] for d in datatypes]
    return [f"{name}({','.join(combo)})" for combo in itertools.product(*choices)]


def _project_interface(definition: InterfaceDef) -> dict[str, Any]:
    methods = {}
    for method in definition.methods.values():
        declared = method.joynr_datatypes
        datatypes: list[str | tuple[str, ...]] = list(declared) if declared is not None else [
            joynr_datatype(tp) for _, tp in method.params]
        if method.outputs:
            outs = [joynr_datatype(tp) for _, tp in method.outputs]
        elif method.returns is type(None) or method.returns is None:
            outs = []
        else:
            outs = [joynr_datatype(method.returns)]
        for key in _method_keys(member_joynr_name(method), datatypes):
            methods[key] = {
                "out": outs, "fireAndForget": method.one_way,
                "error": joynr_type_name(method.error_enum) if method.error_enum else None}
    attributes = {member_joynr_name(attr): {"type": joynr_datatype(attr.type),
                                            "readonly": attr.readonly,
                                            "notifiable": attr.notifiable}
                  for attr in definition.attributes.values()}
    broadcasts = {}
    for broadcast in definition.broadcasts.values():
        wire = member_joynr_name(broadcast)
        broadcasts[wire] = {"selective": broadcast.selective,
                            "out": [joynr_datatype(tp) for _, tp in broadcast.outputs],
                            "multicast": None if broadcast.selective else wire}
    return {"version": list(definition.version), "methods": methods,
            "attributes": attributes, "broadcasts": broadcasts}


def from_project(folder: Path, package: str) -> Structure:
    """The structure of this project's generated package ``package`` in ``folder`` (imported
    from there, and taken out of ``sys.modules`` again)."""
    found = empty()
    sys.path.insert(0, str(folder))
    try:
        root = importlib.import_module(package)
        modules: list[ModuleType] = [
            importlib.import_module(f"{package}.{path.stem}")
            for path in sorted((folder / package).glob("*.py")) if path.stem != "__init__"]
        del root
        for module in modules:
            for value in vars(module).values():
                if not isinstance(value, type) or value.__module__ != module.__name__:
                    continue
                definition = getattr(value, "__joynr__", None)
                if isinstance(definition, InterfaceDef) and "__joynr__" in vars(value):
                    found["interfaces"][definition.name] = _project_interface(definition)
                elif "__joynr_name__" in vars(value):
                    found["types"][joynr_type_name(value)] = _project_type(value)
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
    return found


# ----------------------------------------------------------------------------- differ


def _key_kind(datatype: Any) -> Any:
    """A map key's datatype as the wire tells it: every integer width is a decimal text."""
    return "Integer" if datatype in _INTEGER_NAMES else datatype


def differences(joynr: Structure, project: Structure, oracle: str = "joynr",
                ours: str = "project") -> list[str]:
    """Every element on which the two structures differ, named (``vehicle/Radio.add
    paramDatatypes: ...``); an item that either side cannot read (``None``) is passed over
    (this project's structure has none)."""
    found: list[str] = []

    def compare(where: str, theirs: Any, mine: Any) -> None:
        if theirs is not None and mine is not None and theirs != mine:
            found.append(f"{where}: {oracle} {theirs!r} {ours} {mine!r}")

    def keyed(where: str, theirs: dict[str, Any], mine: dict[str, Any]) -> list[str]:
        for key in sorted(set(theirs) - set(mine)):
            found.append(f"{where}{key}: only in {oracle}")
        for key in sorted(set(mine) - set(theirs)):
            found.append(f"{where}{key}: only in {ours}")
        return sorted(set(theirs) & set(mine))

    for name in keyed("type ", joynr["types"], project["types"]):
        a, b = joynr["types"][name], project["types"][name]
        compare(f"type {name} kind", a["kind"], b["kind"])
        if a["kind"] != b["kind"]:
            continue
        for item in ("members", "base", "literals", "value"):
            if item in a:
                compare(f"type {name} {item}", a[item], b.get(item))
        compare(f"type {name} key", _key_kind(a.get("key")), _key_kind(b.get("key")))
    for name in keyed("interface ", joynr["interfaces"], project["interfaces"]):
        a, b = joynr["interfaces"][name], project["interfaces"][name]
        compare(f"{name} version", a["version"], b["version"])
        for method in sorted({_method_name(k) for k in [*a["methods"], *b["methods"]]}):
            compare(f"{name}.{method} paramDatatypes", _signatures(a["methods"], method),
                    _signatures(b["methods"], method))
        for key in sorted(set(a["methods"]) & set(b["methods"])):
            for item in ("out", "error", "fireAndForget"):
                compare(f"{name}.{key} {item}", a["methods"][key][item],
                        b["methods"][key][item])
        for key in keyed(f"{name} attribute ", a["attributes"], b["attributes"]):
            for item in ("type", "readonly", "notifiable"):
                compare(f"{name}.{key} {item}", a["attributes"][key][item],
                        b["attributes"][key][item])
        for key in keyed(f"{name} broadcast ", a["broadcasts"], b["broadcasts"]):
            for item in ("selective", "out", "multicast"):
                compare(f"{name}.{key} {item}", a["broadcasts"][key][item],
                        b["broadcasts"][key][item])
    return found


def _method_name(key: str) -> str:
    return key.split("(", 1)[0]


def _signatures(methods: dict[str, Any], name: str) -> list[list[str]]:
    """The paramDatatypes of the overloads of ``name`` (sorted; empty when there is none)."""
    return sorted([t for t in key[len(name) + 1:-1].split(",") if t]
                  for key in methods if _method_name(key) == name)


__all__ = ["Structure", "differences", "from_java", "from_project", "from_typescript"]
