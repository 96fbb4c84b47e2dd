"""Parsing Franca IDL files into the resolved :class:`~franca.model.Model`.

``parse_files(paths)`` reads the given ``.fidl`` files and every file they import
(``import model "x.fidl"``, ``import a.b.* from "x.fidl"``, relative to the importing file;
``classpath:/x.fidl`` relative to the ``classpath`` folders), parses them with the lark grammar
``grammar.lark`` and resolves every type name. Problems are collected, not stopped at: a
:class:`FrancaError` lists all of them, one ``file:line:column: message`` per line. Pure apart
from reading the files.

Name lookup, as Franca's scoping does it: a type name used in a type collection or an
interface ``C`` of package ``p`` is looked up as ``p.C.name`` (declared in ``C``), then
``p.name`` (the package's anonymous type collections, or ``OtherCollection.Type``), then
through the file's namespace imports (``import a.b.* from``: ``a.b.name``; ``import a.b.X
from``: ``X`` and ``X.rest``), then as a fully qualified name (``a.b.Collection.Type``, or
``a.b.Type`` for an anonymous type collection). The first of these that names a type wins; only
the declarations of the file itself and of the files it imports (directly or through other
imports) are visible. A type collection may be continued in another file (same package, same
name): the model then has one :class:`~franca.model.TypeCollection` per file.

Refused (a problem each): unknown or ambiguous type names, a name declared twice (types
and interfaces by their qualified name; attributes, broadcasts, fields,
enumerators and arguments within their element), two overloads of a method whose in-arguments
have the same types as joynr sees them, cycles of ``extends`` (struct, enumeration, union,
interface) and of ``typedef`` / ``array`` definitions, a ``fireAndForget`` method with out
arguments or errors, Franca's ``Integer`` type (joynr's generators refuse it), enumerator
values that are not 64-bit integers, and files that cannot be read. Constants (``const``) are
parsed and their types resolved, then dropped: the model has no place for them and joynr's
generators ignore them.

Expressions: an enumerator's value and a constant's are Franca expressions (literals, names of
constants, parentheses, unary ``-`` and ``!``, ``* /``, ``+ -``, ``< <= >= >``, ``== !=``,
``&&``, ``||``; an enumerator's value is an additive expression, comparisons only inside
parentheses, as Franca's grammar has it; Franca has no shifts or bit operators). They are
evaluated as Franca evaluates them: integers exactly, ``/`` of integers truncating towards
zero, Booleans, floating-point numbers and strings as values of their own kind. A constant's
name is looked up as a type's is. Refused: an enumerator value that is no 64-bit integer (a
string, a Float, a Boolean: joynr's Java generator fails on a string, its JavaScript generator
writes nothing for the others), a constant of an integer type whose value is no integer in the
type's range, an unknown constant, a constant that refers to itself, a struct or array constant
in an expression, division by zero, an operator on values it does not take, and a value beyond
64 bits on the way. An enumerator's value is kept in the model; the generated enumerations do
not carry it (joynr's wire names enumerators, its Java enumerations ignore the values).

Wire names (what joynr's generators give the types and interfaces):

- a type of a named type collection ``C`` in package ``p``: ``joynr.p.C.Name``;
- a type of an anonymous type collection, or of an interface (its name is not part of it):
  ``joynr.p.Name``;
- the enumeration of an inline ``error {...}`` (or ``error extends E {...}``) of method ``m``
  in interface ``I``: ``joynr.p.I.MErrorEnum`` (``m`` with its first letter upper-cased); an
  overloaded method's gets the overload's index (1, 2, ... per distinct in-argument signature,
  in file order) before ``ErrorEnum``: ``joynr.p.I.M2ErrorEnum``;
- an interface ``I`` in package ``a.b``: ``a/b/I``.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

import lark
from lark import Token, Tree

from pyjoynr.franca.model import (
    PRIMITIVE_NAMES,
    Arg,
    ArrayOf,
    ArrayType,
    Attribute,
    Broadcast,
    Enumerator,
    EnumType,
    Field,
    Interface,
    MapType,
    Method,
    Model,
    Named,
    Position,
    Primitive,
    StructType,
    TypeCollection,
    TypeDecl,
    TypedefType,
    TypeRef,
    UnionType,
)

__all__ = ["MAX_FILE_BYTES", "FrancaError", "Problem", "parse_files"]

#: Larger files are refused unread (a model file is a few kilobytes).
MAX_FILE_BYTES = 1024 * 1024

_GRAMMAR_FILE = Path(__file__).with_name("grammar.lark")
_PARSER: lark.Lark | None = None

# plain words for the grammar's terminals in syntax error messages
_TERMINAL_WORDS = {
    "ID": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "STRUCTURED_COMMENT": "a comment <** **>",
    "$END": "end of file",
}

#: the keywords of Franca 0.13.1's grammar (Xtext): reserved everywhere there, so Franca takes
#: none of them as a name where this grammar's contextual lexer would (checked: a selector)
FRANCA_KEYWORDS = frozenset({
    "Boolean", "ByteBuffer", "Double", "Float", "Int8", "Int16", "Int32", "Int64", "Integer",
    "PSM", "String", "UInt8", "UInt16", "UInt32", "UInt64", "array", "attribute", "broadcast",
    "call", "const", "contract", "else", "enumeration", "error", "errordef", "errorval", "extends",
    "false", "fireAndForget", "from", "if", "import", "in", "initial", "interface", "is", "major",
    "manages", "map", "maxInt", "method", "minInt", "minor", "model", "noRead", "noSubscriptions",
    "of", "on", "out", "package", "polymorphic", "public", "readonly", "respond", "selective",
    "set", "signal", "state", "struct", "to", "true", "typeCollection", "typedef", "undefined",
    "union", "update", "vars", "version",
})


@dataclass(frozen=True)
class Problem:
    """One error: where, and what."""

    position: Position
    message: str

    def __str__(self) -> str:
        return f"{self.position}: {self.message}"


class FrancaError(Exception):
    """The files could not be parsed or resolved; ``problems`` says where and why (all of
    them, in file order), ``str()`` one ``file:line:column: message`` per line."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def parse_files(
    paths: Iterable[str | os.PathLike[str]], *, classpath: Sequence[str | os.PathLike[str]] = ()
) -> Model:
    """Parse ``paths`` and the files they import, resolve every name, return the model.

    ``classpath``: the folders searched for an import of ``classpath:/name.fidl`` (in order).
    Raises :class:`FrancaError` listing every problem found.
    """
    return _Resolver(_Loader([os.fspath(c) for c in classpath]).load(paths)).resolve()


# =============================================================================================
# syntax: what a file says, before names are resolved


@dataclass(eq=False)
class _Ref:
    """A type as written: a (qualified) name, maybe ``[]``, or Franca's ``Integer``."""

    name: str
    position: Position
    array: bool
    integer: bool = False


@dataclass(frozen=True)
class _Expr:
    """An expression as written: ``op`` is ``int``, ``float``, ``str``, ``bool`` (a literal in
    ``value``), ``ref`` (a constant's name in ``value``), ``neg``, ``not`` (one operand) or a
    binary operator (``+``, ``-``, ``*``, ``/``, ``==``, ``!=``, ``<``, ``<=``, ``>=``, ``>``,
    ``&&``, ``||``)."""

    op: str
    position: Position
    args: tuple[_Expr, ...] = ()
    value: int | str | bool | None = None


@dataclass(eq=False)
class _Enumerator:
    name: str
    value: int | None
    comment: str
    position: Position
    expr: _Expr | None = None  # a value other than a literal: evaluated in resolution


@dataclass(eq=False)
class _Constant:
    name: str
    type: _Ref
    expr: _Expr | None  # None: a struct or array initializer (not evaluated)
    position: Position
    container: _Container


@dataclass(eq=False)
class _Member:
    """A field, an argument or an attribute: a type and a name."""

    name: str
    type: _Ref
    comment: str
    position: Position
    flags: tuple[str, ...] = ()


@dataclass(eq=False)
class _Type:
    """A type declaration as written."""

    kind: str  # struct union enumeration array map typedef
    name: str
    comment: str
    position: Position
    container: _Container
    base: _Ref | None = None
    polymorphic: bool = False
    fields: list[_Member] = field(default_factory=list)
    enumerators: list[_Enumerator] = field(default_factory=list)
    refs: list[_Ref] = field(default_factory=list)  # element / key, value / actual


@dataclass(eq=False)
class _ErrorSpec:
    ref: _Ref | None  # error E, or the base of error extends E {...}
    inline: list[_Enumerator] | None  # error {...}
    position: Position


@dataclass(eq=False)
class _Method:
    name: str
    comment: str
    position: Position
    fire_and_forget: bool
    in_args: list[_Member]
    out_args: list[_Member]
    error: _ErrorSpec | None
    selector: str | None = None


@dataclass(eq=False)
class _Broadcast:
    name: str
    comment: str
    position: Position
    selective: bool
    out_args: list[_Member]


def _major(container: _Container) -> int | None:
    return None if container.version is None else container.version[0]


def _of_version(major: int | None) -> str:
    return "" if major is None else f" (major version {major})"


@dataclass(eq=False)
class _Container:
    """A type collection or an interface."""

    kind: str  # "typeCollection" or "interface"
    name: str | None
    file: _File
    comment: str
    position: Position
    version: tuple[int, int] | None = None
    base: _Ref | None = None
    types: list[_Type] = field(default_factory=list)
    attributes: list[_Member] = field(default_factory=list)
    methods: list[_Method] = field(default_factory=list)
    broadcasts: list[_Broadcast] = field(default_factory=list)
    constant_types: list[_Ref] = field(default_factory=list)
    constants: list[_Constant] = field(default_factory=list)

    @property
    def package(self) -> str:
        return self.file.package

    @property
    def qualified_name(self) -> str:
        return self.package if self.name is None else f"{self.package}.{self.name}"


@dataclass(eq=False)
class _Import:
    namespace: str | None  # None for `import model`
    wildcard: bool
    uri: str
    position: Position


@dataclass(eq=False)
class _File:
    path: str  # as given, or as reached from the importing file
    package: str = ""
    imports: list[_Import] = field(default_factory=list)
    containers: list[_Container] = field(default_factory=list)
    imported: list[_File] = field(default_factory=list)  # the files of its imports
    expanded: bool = False  # its imports are queued


# =============================================================================================
# reading and parsing the files


def _lark_parser() -> lark.Lark:
    global _PARSER  # noqa: PLW0603 - built once, on first use
    if _PARSER is None:
        _PARSER = lark.Lark(
            _GRAMMAR_FILE.read_text(encoding="utf-8"),
            parser="lalr",
            lexer="contextual",
            propagate_positions=True,
            maybe_placeholders=False,
        )
    return _PARSER


def _expected_words(names: Iterable[str], parser: lark.Lark) -> str:
    words = set()
    for name in names:
        if name in _TERMINAL_WORDS:
            words.add(_TERMINAL_WORDS[name])
            continue
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            words.add(name.lower())
            continue
        if pattern.type == "str":
            words.add(f"'{pattern.value}'")
        else:
            words.add(name.lower())
    ordered = sorted(words, key=lambda w: (not w.startswith("'"), w))
    if len(ordered) == 1:
        return ordered[0]
    return "one of " + ", ".join(ordered)


def _syntax_problem(path: str, text: str, error: lark.exceptions.UnexpectedInput) -> Problem:
    parser = _lark_parser()
    position = Position(path, max(error.line, 1), max(error.column, 1))
    if isinstance(error, lark.exceptions.UnexpectedToken):
        token = error.token
        if token.type == "$END":
            found = "end of file"
            lines = text.split("\n")
            position = Position(path, len(lines), len(lines[-1]) + 1)
        else:
            found = f"'{_shorten(str(token.value))}'"
        expected = _expected_words(error.expected, parser)
        return Problem(position, f"syntax error: unexpected {found}, expected {expected}")
    if isinstance(error, lark.exceptions.UnexpectedCharacters):
        found = f"'{_shorten(error.char)}'" if error.char else "end of file"
        expected = _expected_words(error.allowed or (), parser)
        return Problem(position, f"syntax error: unexpected {found}, expected {expected}")
    return Problem(position, "syntax error: unexpected end of file")


def _shorten(text: str, limit: int = 40) -> str:
    text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Loader:
    """Reads and parses files, following imports, each file once."""

    def __init__(self, classpath: list[str]) -> None:
        self.classpath = classpath
        self.files: list[_File] = []
        self.by_real_path: dict[str, _File] = {}
        self.problems: list[Problem] = []

    def load(self, paths: Iterable[str | os.PathLike[str]]) -> _Loaded:
        pending: list[tuple[str, _File | None, _Import | None]] = [
            (os.fspath(p), None, None) for p in paths
        ]
        pending.reverse()
        while pending:
            path, importer, imp = pending.pop()
            parsed = self._read(path, imp)
            if parsed is None:
                continue
            if importer is not None and all(f is not parsed for f in importer.imported):
                importer.imported.append(parsed)
            # the imports of a newly read file, depth first in file order
            if parsed.expanded:
                continue
            parsed.expanded = True
            todo = []
            for child in parsed.imports:
                target = self._locate(parsed, child)
                if target is not None:
                    todo.append((target, parsed, child))
            pending.extend(reversed(todo))
        return _Loaded(self.files, self.problems)

    def _locate(self, importer: _File, imp: _Import) -> str | None:
        uri = imp.uri
        if uri.startswith("classpath:"):
            relative = uri[len("classpath:") :].lstrip("/")
            for root in self.classpath:
                candidate = os.path.join(root, relative)
                if os.path.isfile(candidate):
                    return os.path.normpath(candidate)
            self.problems.append(
                Problem(
                    imp.position,
                    f"imported file not found on the classpath: '{_shorten(uri, 200)}'",
                )
            )
            return None
        if "://" in uri or uri.startswith(("platform:", "file:")):
            self.problems.append(
                Problem(imp.position, f"imports must name a file path, not '{_shorten(uri, 200)}'")
            )
            return None
        return os.path.normpath(os.path.join(os.path.dirname(importer.path), uri))

    def _read(self, path: str, imp: _Import | None) -> _File | None:
        real = os.path.realpath(path)
        known = self.by_real_path.get(real)
        if known is not None:
            return known
        where = imp.position if imp is not None else Position(path, 1, 1)
        what = f"imported file '{_shorten(imp.uri, 200)}'" if imp is not None else "file"
        try:
            size = os.path.getsize(path)
            if size > MAX_FILE_BYTES:
                self.problems.append(
                    Problem(where, f"{what} is too large ({size} bytes, at most {MAX_FILE_BYTES})")
                )
                return None
            with open(path, "rb") as stream:
                data = stream.read(MAX_FILE_BYTES + 1)
        except OSError as error:
            reason = error.strerror or os.strerror(error.errno or errno.EIO)
            self.problems.append(Problem(where, f"cannot read {what}: {reason}"))
            return None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            line = data[: error.start].count(b"\n") + 1
            self.problems.append(Problem(Position(path, line, 1), "not UTF-8 text"))
            return None
        parsed = _File(path)
        self.by_real_path[real] = parsed
        self.files.append(parsed)
        try:
            tree = _lark_parser().parse(text)
        except lark.exceptions.UnexpectedInput as error:
            self.problems.append(_syntax_problem(path, text, error))
            return parsed
        _Builder(parsed, self.problems).build(tree)
        return parsed


@dataclass(eq=False)
class _Loaded:
    files: list[_File]
    problems: list[Problem]


#: one annotation of a structured comment as Franca's grammar takes it: ``@tag:`` and a text
#: without an unescaped backslash, asterisk or at sign (``\*``, ``\@`` and ``\"`` ... escape)
_ANNOTATION = re.compile(r"""@[a-z-]+[ \t]*:(?:\\[btnfru"'\\*@]|[^\\*@])*""")


def _comment_problem(raw: str) -> tuple[int, str] | None:
    """Where (the offset in ``raw``) and why a structured comment ``<** ... **>`` is not one
    Franca's grammar takes, or None: Franca reads it as annotations (``@description: ...``),
    each ending at an unescaped ``*`` or ``@``, so joynr's generator refuses the file."""
    at = 3
    end = len(raw) - 3
    while at < end and raw[at].isspace():
        at += 1
    while at < end:
        match = _ANNOTATION.match(raw, at, end)
        if match is None:
            return at, ("a structured comment is a list of annotations (@description: ...): "
                        "Franca's grammar does not take it without one")
        at = match.end()
        if at < end and raw[at] != "@":
            return at, (f"structured comment: an unescaped '{raw[at]}' ends Franca's "
                        f"annotation here; escape it (\\{raw[at]}) or reword")
        if at < end and _ANNOTATION.match(raw, at, end) is None:
            return at, ("structured comment: an '@' that begins no annotation (@tag:) ends "
                        "Franca's annotation here; escape it (\\@) or reword")
    return None


def _structured_comment_text(raw: str) -> str:
    inner = raw[3:-3]
    lines = [line.strip() for line in inner.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT32_MAX = 2**31 - 1


def _int_literal(text: str) -> int | None:
    """An integer literal (decimal, ``0x`` hex, ``0b`` binary, maybe negative), or None."""
    if len(text) > 80:  # no 64-bit number is that long (and int() of 5000 digits raises)
        return None
    body = text.strip()
    sign = 1
    if body.startswith("-"):
        sign, body = -1, body[1:].strip()
    try:
        if body[:2].lower() == "0x":
            return sign * int(body[2:], 16)
        if body[:2].lower() == "0b":
            return sign * int(body[2:], 2)
        return sign * int(body, 10)
    except ValueError:
        return None


def _text_of(tree: Tree[Any]) -> str:
    """The text of a tree's tokens, joined."""
    return "".join(str(t) for t in tree.scan_values(lambda v: isinstance(v, Token)))


#: the ranges of Franca's integer types (a constant's value must be inside its type's)
_INT_RANGES = {
    "Int8": (-(2**7), 2**7 - 1), "UInt8": (0, 2**8 - 1), "Int16": (-(2**15), 2**15 - 1),
    "UInt16": (0, 2**16 - 1), "Int32": (-(2**31), 2**31 - 1), "UInt32": (0, 2**32 - 1),
    "Int64": (_INT64_MIN, _INT64_MAX), "UInt64": (0, 2**64 - 1),
}
#: no value computed on the way may be larger than this (Franca computes with big integers,
#: joynr's values are 64-bit at most; the bound also keeps a chain of constants that square
#: each other from growing without end)
_EXPR_LIMIT = 2**64

_Value = int | float | str | bool


def _shown(value: _Value) -> str:
    """A value as a message shows it (Franca's spelling)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _shorten(f'"{value}"')
    return _shorten(repr(value))


def _range_words(bounds: tuple[int, int]) -> str:
    if bounds == (_INT64_MIN, _INT64_MAX):
        return "a 64-bit integer"
    return f"an integer from {bounds[0]} to {bounds[1]}"


def _kind(value: _Value) -> str:
    if isinstance(value, bool):
        return "a Boolean"
    if isinstance(value, str):
        return "a String"
    if isinstance(value, float):
        return "a floating-point number"
    return "an integer"


class _Builder:
    """Turns one file's parse tree into its syntax records."""

    def __init__(self, file: _File, problems: list[Problem]) -> None:
        self.file = file
        self.problems = problems

    def pos(self, item: Tree[Any] | Token) -> Position:
        if isinstance(item, Token):
            return Position(self.file.path, item.line or 1, item.column or 1)
        return Position(self.file.path, item.meta.line, item.meta.column)

    @staticmethod
    def name(tree: Tree[Any]) -> str:
        token = cast(Token, tree.children[0])
        text = str(token)
        return text[1:] if text.startswith("^") else text

    def fqn(self, tree: Tree[Any]) -> str:
        return ".".join(self.name(cast(Tree[Any], c)) for c in tree.children)

    @staticmethod
    def subtrees(tree: Tree[Any]) -> list[Tree[Any]]:
        return [c for c in tree.children if isinstance(c, Tree)]

    @staticmethod
    def tokens(tree: Tree[Any]) -> list[Token]:
        return [c for c in tree.children if isinstance(c, Token)]

    @staticmethod
    def comment(tree: Tree[Any]) -> str:
        for child in tree.children:
            if isinstance(child, Tree) and child.data == "comment":
                return _structured_comment_text(str(child.children[0]))
        return ""

    def first(self, tree: Tree[Any], data: str) -> Tree[Any] | None:
        for child in self.subtrees(tree):
            if child.data == data:
                return child
        return None

    def name_of(self, tree: Tree[Any]) -> tuple[str, Position]:
        node = self.first(tree, "name")
        assert node is not None
        return self.name(node), self.pos(cast(Token, node.children[0]))

    def build(self, tree: Tree[Any]) -> None:
        for token in tree.scan_values(
                lambda v: isinstance(v, Token) and v.type == "STRUCTURED_COMMENT"):
            self.check_comment(token)
        for child in self.subtrees(tree):
            if child.data == "package":
                self.file.package = self.fqn(cast(Tree[Any], child.children[0]))
            elif child.data in ("import_model", "import_namespace"):
                self.file.imports.append(self.import_(child))
            elif child.data in ("type_collection", "interface"):
                self.file.containers.append(self.container(child))

    def import_(self, tree: Tree[Any]) -> _Import:
        string = next(t for t in self.tokens(tree) if t.type == "STRING")
        uri = str(string)[1:-1]
        if tree.data == "import_model":
            return _Import(None, False, uri, self.pos(string))
        namespace = cast(Tree[Any], tree.children[0])
        names = [self.name(c) for c in self.subtrees(namespace) if c.data == "name"]
        wildcard = self.first(namespace, "wildcard") is not None
        return _Import(".".join(names), wildcard, uri, self.pos(string))

    def container(self, tree: Tree[Any]) -> _Container:
        if tree.data == "type_collection":
            keyword = next(t for t in self.tokens(tree) if t.type == "TYPECOLLECTION")
            name_node = self.first(tree, "name")
            if name_node is None:
                name, position = None, self.pos(keyword)
            else:
                name, position = self.name_of(tree)
            result = _Container("typeCollection", name, self.file, self.comment(tree), position)
        else:
            name, position = self.name_of(tree)
            result = _Container("interface", name, self.file, self.comment(tree), position)
        for child in self.subtrees(tree):
            data = child.data
            if data == "version":
                major, minor = (_int_literal(str(t)) for t in self.tokens(child))
                if (
                    major is None
                    or minor is None
                    or not (0 <= major <= _INT32_MAX and 0 <= minor <= _INT32_MAX)
                ):
                    self.problems.append(
                        Problem(self.pos(child), "version numbers must be 32-bit integers")
                    )
                else:
                    result.version = (major, minor)
            elif data == "extends":
                result.base = self.extends(child)
            elif data in ("struct", "union", "enumeration", "array", "map", "typedef"):
                result.types.append(self.type_decl(child, result))
            elif data == "attribute":
                result.attributes.append(self.attribute(child))
            elif data == "method":
                result.methods.append(self.method(child))
            elif data == "broadcast":
                result.broadcasts.append(self.broadcast(child))
            elif data == "constant":
                type_ref = self.first(child, "type_ref")
                assert type_ref is not None
                ref = self.type_ref(type_ref)
                result.constant_types.append(ref)
                name, position = self.name_of(child)
                init = cast(Tree[Any], child.children[-1])
                expr = None if init.data in ("struct_init", "array_init") else self.expr(init)
                result.constants.append(_Constant(name, ref, expr, position, result))
        return result

    _BINARY: ClassVar[dict[str, str]] = {
        "or_": "||", "and_": "&&", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "ge": ">=",
        "gt": ">", "add": "+", "sub": "-", "mul": "*", "div": "/",
    }

    def expr(self, tree: Tree[Any] | Token) -> _Expr:
        """An expression's tree as an :class:`_Expr` (literals checked for size)."""
        if isinstance(tree, Token):  # (not produced by the grammar; defensive)
            return _Expr("str", self.pos(tree), value=str(tree))
        position = self.pos(tree)
        data = tree.data
        operands = [c for c in tree.children if isinstance(c, Tree)]
        if data in self._BINARY:
            left, right = operands
            return _Expr(self._BINARY[data], position, (self.expr(left), self.expr(right)))
        if data in ("neg", "not_"):
            return _Expr("neg" if data == "neg" else "not", position, (self.expr(operands[0]),))
        if data == "ref":
            return _Expr("ref", position, value=self.fqn(operands[0]))
        token = cast(Token, tree.children[0])
        position = self.pos(token)
        if data == "int_lit":
            return _Expr("int", position, value=_int_literal(str(token)))
        if data == "string_lit":
            return _Expr("str", position, value=str(token)[1:-1])
        if data in ("true_lit", "false_lit"):
            return _Expr("bool", position, value=data == "true_lit")
        return _Expr("float", position, value=str(token))

    def extends(self, tree: Tree[Any]) -> _Ref:
        fqn = cast(Tree[Any], tree.children[0])
        return _Ref(self.fqn(fqn), self.pos(fqn), array=False)

    def type_ref(self, tree: Tree[Any]) -> _Ref:
        head = cast(Tree[Any], tree.children[0])
        array = self.first(tree, "array_mark") is not None
        if head.data == "integer_type":
            return _Ref("Integer", self.pos(head), array, integer=True)
        return _Ref(self.fqn(head), self.pos(head), array)

    def member(self, tree: Tree[Any]) -> _Member:
        type_ref = self.first(tree, "type_ref")
        assert type_ref is not None
        name, position = self.name_of(tree)
        flags = tuple(str(t) for t in self.tokens(tree))
        return _Member(name, self.type_ref(type_ref), self.comment(tree), position, flags)

    def attribute(self, tree: Tree[Any]) -> _Member:
        result = self.member(tree)
        seen: set[str] = set()
        for token in self.tokens(tree):
            if str(token) in seen:
                self.problems.append(Problem(self.pos(token), f"'{token}' given twice"))
            seen.add(str(token))
        return result

    def enumerators(self, body: Tree[Any]) -> list[_Enumerator]:
        result = []
        for node in self.subtrees(body):
            name, position = self.name_of(node)
            value_node = self.first(node, "enum_value")
            value: int | None = None
            expr: _Expr | None = None
            if value_node is not None:
                expr = self.expr(value_node.children[0])
                if expr.op == "str":  # a string holding the number, as older Franca files
                    expr = _Expr("int", expr.position, value=_int_literal(str(expr.value)))
                    if expr.value is None:
                        self.problems.append(
                            Problem(
                                expr.position,
                                "enumerator value must be a 64-bit integer, not "
                                f"{_shorten(_text_of(value_node))}",
                            )
                        )
                        expr = None
            result.append(_Enumerator(name, value, self.comment(node), position, expr))
        return result

    def type_decl(self, tree: Tree[Any], container: _Container) -> _Type:
        name, position = self.name_of(tree)
        result = _Type(tree.data, name, self.comment(tree), position, container)
        for child in tree.children:
            if isinstance(child, Token):
                if child.type == "POLYMORPHIC":
                    if result.polymorphic:
                        self.problems.append(Problem(self.pos(child), "'polymorphic' given twice"))
                    result.polymorphic = True
                continue
            if child.data == "extends":
                if result.base is not None:
                    self.problems.append(
                        Problem(self.pos(child), f"'{name}' extends more than one type")
                    )
                result.base = self.extends(child)
            elif child.data == "field":
                result.fields.append(self.member(child))
            elif child.data == "enum_body":
                result.enumerators = self.enumerators(child)
            elif child.data == "type_ref":
                result.refs.append(self.type_ref(child))
        self.check_no_array(result)
        return result

    def check_comment(self, token: Token) -> None:
        """Refuse a structured comment Franca's grammar (so joynr's generator) does not take,
        at the character where Franca's reading of it ends."""
        found = _comment_problem(str(token))
        if found is None:
            return
        offset, message = found
        before = str(token)[:offset]
        line = (token.line or 1) + before.count("\n")
        column = (offset - before.rfind("\n")) if "\n" in before else (token.column or 1) + offset
        self.problems.append(Problem(Position(self.file.path, line, column), message))

    def check_no_array(self, decl: _Type) -> None:
        """Franca's typedef and map take a type without ``[]`` (an FTypeRef): refuse a ``T[]``
        there, saying what Franca takes instead."""
        if decl.kind == "typedef" and decl.refs and decl.refs[0].array:
            self.problems.append(Problem(decl.refs[0].position, (
                f"typedef {decl.name}: Franca's typedef takes no array (T[]); write T[] where "
                "it is used, bounded by a `@details: maxLength N` comment on the argument, "
                "field or attribute")))
        elif decl.kind == "map":
            for ref, role in zip(decl.refs, ("key", "value"), strict=False):
                if ref.array:
                    self.problems.append(Problem(ref.position, (
                        f"map {decl.name}: Franca's map takes no array (T[]) as its {role}; "
                        f"declare a struct holding the T[] (struct S {{ T[] items }}) and "
                        f"map {'from' if role == 'key' else 'to'} it")))

    def selector(self, tree: Tree[Any], owner: str) -> str:
        """A method's or broadcast's selector; a Franca keyword (not escaped with ``^``) is
        refused, as Franca's grammar refuses it there."""
        node = cast(Tree[Any], tree.children[0])
        token = cast(Token, node.children[0])
        if str(token) in FRANCA_KEYWORDS:
            self.problems.append(Problem(self.pos(token), (
                f"{owner}:{token}: '{token}' is a Franca keyword, which Franca's grammar does "
                f"not take as a selector; choose another word or escape it ({owner}:^{token})")))
        return self.name(node)

    def method(self, tree: Tree[Any]) -> _Method:
        name, position = self.name_of(tree)
        fire_and_forget = any(t.type == "FIREANDFORGET" for t in self.tokens(tree))
        in_args: list[_Member] = []
        out_args: list[_Member] = []
        error: _ErrorSpec | None = None
        selector: str | None = None
        for child in self.subtrees(tree):
            if child.data == "selector":
                selector = self.selector(child, f"method {name}")
            elif child.data == "in_args":
                in_args = [self.member(a) for a in self.subtrees(child)]
            elif child.data == "out_args":
                out_args = [self.member(a) for a in self.subtrees(child)]
            elif child.data in ("error_ref", "error_inline", "error_extends"):
                error = self.error_spec(child)
        return _Method(
            name, self.comment(tree), position, fire_and_forget, in_args, out_args, error,
            selector,
        )

    def error_spec(self, child: Tree[Any]) -> _ErrorSpec:
        """``error E``, ``error {...}`` or ``error extends E {...}``; a structured comment
        before ``error`` is dropped (joynr's generators do not use it)."""
        parts = [c for c in self.subtrees(child) if c.data != "comment"]
        if child.data == "error_ref":
            fqn = parts[0]
            return _ErrorSpec(_Ref(self.fqn(fqn), self.pos(fqn), False), None, self.pos(fqn))
        if child.data == "error_inline":
            return _ErrorSpec(None, self.enumerators(parts[0]), self.pos(child))
        fqn, body = parts
        return _ErrorSpec(
            _Ref(self.fqn(fqn), self.pos(fqn), False), self.enumerators(body), self.pos(child)
        )

    def broadcast(self, tree: Tree[Any]) -> _Broadcast:
        name, position = self.name_of(tree)
        selective = any(t.type == "SELECTIVE" for t in self.tokens(tree))
        out_args: list[_Member] = []
        for child in self.subtrees(tree):
            if child.data == "selector":
                self.selector(child, f"broadcast {name}")
            elif child.data == "out_args":
                out_args = [self.member(a) for a in self.subtrees(child)]
        return _Broadcast(name, self.comment(tree), position, selective, out_args)


# =============================================================================================
# resolution


_T = TypeVar("_T")


def _find_cycles(starts: Sequence[_T], next_of: Callable[[_T], _T | None]) -> list[list[_T]]:
    """The cycles of the chains ``start, next_of(start), ...`` (each cycle once, by identity,
    in the order of ``starts``)."""
    done: set[int] = set()
    cycles: list[list[_T]] = []
    for start in starts:
        path: list[_T] = []
        index_of: dict[int, int] = {}
        current: _T | None = start
        while current is not None and id(current) not in done:
            if id(current) in index_of:
                cycles.append(path[index_of[id(current)] :])
                break
            index_of[id(current)] = len(path)
            path.append(current)
            current = next_of(current)
        done.update(index_of)
    return cycles


def _first_upper(text: str) -> str:
    return text[:1].upper() + text[1:]


_PLACEHOLDER: TypeRef = Primitive("String")


class _Resolver:
    """Resolves the names of the loaded files and builds the model."""

    def __init__(self, loaded: _Loaded) -> None:
        self.files = loaded.files
        self.problems = list(loaded.problems)
        self.file_order = {f.path: i for i, f in enumerate(self.files)}
        # qualified name -> its declarations, for types and for interfaces: one per major
        # version of the declaring type collection or interface (two versions of one
        # interface and its types may be generated side by side, with add_version_to
        # "package"), else one
        self.types: dict[str, list[_Type]] = {}
        self.interfaces: dict[str, list[_Container]] = {}
        self.decls: dict[int, TypeDecl] = {}  # id(_Type) -> model object
        self.visible: dict[int, set[int]] = {}  # id(_File) -> ids of visible files
        # qualified name -> its constants: one per major version of the declaring type
        # collection or interface, as for types
        self.constants: dict[str, list[_Constant]] = {}
        self.constant_values: dict[int, _Value | None] = {}  # id(_Constant) -> its value

    def problem(self, position: Position, message: str) -> None:
        self.problems.append(Problem(position, message))

    def resolve(self) -> Model:
        self.compute_visibility()
        self.register()
        self.register_constants()
        self.make_decls()
        self.fill_decls()
        self.check_type_cycles()
        for made in self.decls.values():
            self.check_inherited(made)
        collections, interfaces = self.make_containers()
        if self.problems:
            order = self.file_order
            ordered = sorted(
                self.problems,
                key=lambda p: (
                    order.get(p.position.file, len(order)),
                    p.position.line,
                    p.position.column,
                ),
            )
            unique = list(dict.fromkeys(ordered))
            raise FrancaError(unique)
        return Model(tuple(collections), tuple(interfaces), tuple(f.path for f in self.files))

    # ---- visibility and symbols

    def compute_visibility(self) -> None:
        for file in self.files:
            seen = {id(file)}
            stack = list(file.imported)
            while stack:
                other = stack.pop()
                if id(other) in seen:
                    continue
                seen.add(id(other))
                stack.extend(other.imported)
            self.visible[id(file)] = seen

    def register_constants(self) -> None:
        for file in self.files:
            for container in file.containers:
                major = _major(container)
                for constant in container.constants:
                    qualified = f"{container.qualified_name}.{constant.name}"
                    known = self.constants.setdefault(qualified, [])
                    earlier = next((c for c in known if _major(c.container) == major), None)
                    if earlier is not None:
                        self.problem(
                            constant.position,
                            f"duplicate constant '{qualified}'{_of_version(major)}, first "
                            f"declared at {earlier.position}",
                        )
                        continue
                    known.append(constant)

    def constant_value(self, constant: _Constant, via: tuple[int, ...]) -> _Value | None:
        """A constant's value (None when it has none: a problem was said), once."""
        key = id(constant)
        if key in self.constant_values:
            return self.constant_values[key]
        if key in via:
            self.problem(constant.position, f"constant {constant.name} refers to itself")
            self.constant_values[key] = None
            return None
        if constant.expr is None:
            self.problem(
                constant.position,
                f"constant {constant.name} is a struct or an array: no value in an expression",
            )
            value = None
        else:
            value = self.evaluate(constant.expr, constant.container, (*via, key))
        self.constant_values[key] = value
        return value

    def evaluate(
        self, expr: _Expr, container: _Container, via: tuple[int, ...] = ()
    ) -> _Value | None:
        """An expression's value, as Franca computes it: integers exactly (``/`` truncates
        towards zero), ``-`` and ``!`` on numbers and Booleans, comparisons, ``&&`` and ``||``
        on Booleans. None (and a problem) when it has none."""
        op = expr.op
        if op in ("int", "str", "bool"):
            if expr.value is None:
                self.problem(expr.position, "an integer beyond 64 bits")
            return expr.value
        if op == "float":
            return float(str(expr.value).rstrip("fdFD"))
        if op == "ref":
            ref = _Ref(str(expr.value), expr.position, False)
            found = self.lookup(ref, container, self.constants, "constant")
            return None if found is None else self.constant_value(found, via)
        values = [self.evaluate(a, container, via) for a in expr.args]
        if any(v is None for v in values):
            return None
        return self.operate(expr, [v for v in values if v is not None])

    def operate(self, expr: _Expr, values: list[_Value]) -> _Value | None:
        op = expr.op

        def number(v: _Value) -> bool:
            return isinstance(v, int | float) and not isinstance(v, bool)

        result: _Value | None = None
        if op == "neg" and number(values[0]):
            result = -cast(float, values[0])
        elif op == "not" and isinstance(values[0], bool):
            result = not values[0]
        elif len(values) == 2:
            a, b = values
            if op in ("&&", "||") and isinstance(a, bool) and isinstance(b, bool):
                result = (a and b) if op == "&&" else (a or b)
            elif op in ("==", "!=") and (type(a) is type(b) or (number(a) and number(b))):
                result = (a == b) if op == "==" else (a != b)
            elif number(a) and number(b):
                x, y = cast(float, a), cast(float, b)
                if op in ("<", "<=", ">=", ">"):
                    result = {"<": x < y, "<=": x <= y, ">=": x >= y, ">": x > y}[op]
                elif op == "/" and y == 0:
                    self.problem(expr.position, "division by zero")
                    return None
                elif op == "/" and isinstance(a, int) and isinstance(b, int):
                    quotient = abs(a) // abs(b)
                    result = quotient if (a < 0) == (b < 0) else -quotient
                else:
                    result = {"+": x + y, "-": x - y, "*": x * y, "/": x / y}.get(op)
        if result is None:
            kinds = " and ".join(_kind(v) for v in values)
            self.problem(expr.position, f"'{op}' cannot be applied to {kinds}")
            return None
        if isinstance(result, int) and not isinstance(result, bool) and \
                abs(result) > _EXPR_LIMIT:
            self.problem(expr.position, "the value grows beyond 64 bits")
            return None
        return result

    def integer_value(self, expr: _Expr, container: _Container, what: str,
                      bounds: tuple[int, int]) -> int | None:
        """``expr``'s value where an integer in ``bounds`` is needed, or None (said)."""
        value = self.evaluate(expr, container)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or \
                not bounds[0] <= value <= bounds[1]:
            self.problem(expr.position, f"{what} must be {_range_words(bounds)}, not "
                                        f"{_shown(value)}")
            return None
        return value

    def register(self) -> None:
        # a type collection may be continued in other files (joynr's access control types
        # are): only the types in it must be unique
        for file in self.files:
            for container in file.containers:
                major = _major(container)
                if container.kind == "interface":
                    qualified = container.qualified_name
                    same = self.interfaces.setdefault(qualified, [])
                    first = next((c for c in same if _major(c) == major), None)
                    if first is not None:
                        self.problem(
                            container.position,
                            f"duplicate interface '{qualified}'{_of_version(major)}, first "
                            f"declared at {first.position}",
                        )
                    else:
                        same.append(container)
                for decl in container.types:
                    qualified = f"{container.qualified_name}.{decl.name}"
                    known = self.types.setdefault(qualified, [])
                    earlier = next((t for t in known if _major(t.container) == major), None)
                    if earlier is not None:
                        self.problem(
                            decl.position,
                            f"duplicate type '{qualified}'{_of_version(major)}, first declared "
                            f"at {earlier.position}",
                        )
                        continue
                    known.append(decl)

    def all_types(self) -> list[_Type]:
        return [decl for same in self.types.values() for decl in same]

    def all_interfaces(self) -> list[_Container]:
        return [container for same in self.interfaces.values() for container in same]

    def candidates(self, name: str, container: _Container) -> list[list[str]]:
        """The qualified names ``name`` may mean, by precedence (the first level naming a
        declaration wins)."""
        levels: list[list[str]] = []
        if container.name is not None:
            levels.append([f"{container.qualified_name}.{name}"])
        if container.package:
            levels.append([f"{container.package}.{name}"])
        imported: list[str] = []
        for imp in container.file.imports:
            if imp.namespace is None:
                continue
            if imp.wildcard:
                imported.append(f"{imp.namespace}.{name}")
            else:
                last = imp.namespace.rsplit(".", 1)[-1]
                if name == last:
                    imported.append(imp.namespace)
                elif name.startswith(last + "."):
                    imported.append(imp.namespace + name[len(last) :])
        if imported:
            levels.append(list(dict.fromkeys(imported)))
        levels.append([name])
        return levels

    def lookup(
        self, ref: _Ref, container: _Container, table: dict[str, list[Any]], what: str
    ) -> Any | None:
        visible = self.visible[id(container.file)]
        for level in self.candidates(ref.name, container):
            found = []
            for qualified in level:
                for item in table.get(qualified, ()):
                    if id(self.file_of(item)) in visible and item not in found:
                        found.append(item)
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                names = ", ".join(sorted(self.qualified(i) for i in found))
                self.problem(ref.position, f"ambiguous {what} '{ref.name}': {names}")
                return None
        self.problem(ref.position, f"unknown {what} '{ref.name}'")
        return None

    @staticmethod
    def file_of(item: _Type | _Container | _Constant) -> _File:
        return item.container.file if isinstance(item, _Type | _Constant) else item.file

    @staticmethod
    def qualified(item: _Type | _Container | _Constant) -> str:
        if isinstance(item, _Type | _Constant):
            return f"{item.container.qualified_name}.{item.name}"
        return item.qualified_name

    def type_ref(self, ref: _Ref, container: _Container) -> TypeRef:
        result: TypeRef
        if ref.integer:
            self.problem(
                ref.position,
                "Franca's type 'Integer' is not supported by joynr; "
                "use Int8, Int16, Int32 or Int64",
            )
            result = _PLACEHOLDER
        elif ref.name in PRIMITIVE_NAMES:
            result = Primitive(ref.name)
        else:
            found = self.lookup(ref, container, self.types, "type")
            result = _PLACEHOLDER if found is None else Named(self.decls[id(found)])
        return ArrayOf(result) if ref.array else result

    # ---- declared types

    @staticmethod
    def wire_name(decl: _Type) -> str:
        container = decl.container
        if container.kind == "typeCollection" and container.name is not None:
            return f"joynr.{container.package}.{container.name}.{decl.name}"
        return f"joynr.{container.package}.{decl.name}"

    def make_decls(self) -> None:
        """Every declaration's model object, with its references still unset (types refer to
        each other, in cycles too: ``fill_decls`` sets them once all objects exist)."""
        for decl in self.all_types():
            container = decl.container
            common: dict[str, Any] = {
                "name": decl.name,
                "package": container.package,
                "owner": container.name,
                "wire_name": self.wire_name(decl),
                "comment": decl.comment,
                "position": decl.position,
            }
            made: TypeDecl
            if decl.kind == "struct":
                made = StructType(fields=(), base=None, polymorphic=decl.polymorphic, **common)
            elif decl.kind == "union":
                made = UnionType(fields=(), base=None, **common)
            elif decl.kind == "enumeration":
                made = EnumType(enumerators=(), base=None, **common)
            elif decl.kind == "array":
                made = ArrayType(element=_PLACEHOLDER, **common)
            elif decl.kind == "map":
                made = MapType(key=_PLACEHOLDER, value=_PLACEHOLDER, **common)
            else:
                made = TypedefType(actual=_PLACEHOLDER, **common)
            self.decls[id(decl)] = made

    def fields(self, members: list[_Member], container: _Container, what: str) -> tuple[Field, ...]:
        self.check_unique(members, what)
        return tuple(
            Field(m.name, self.type_ref(m.type, container), m.comment, m.position) for m in members
        )

    def enumerators(
        self, syntax: list[_Enumerator], container: _Container
    ) -> tuple[Enumerator, ...]:
        self.check_unique(syntax, "enumerator")
        made = []
        for e in syntax:
            value = e.value
            if e.expr is not None:
                value = self.integer_value(
                    e.expr, container, "enumerator value", (_INT64_MIN, _INT64_MAX)
                )
            made.append(Enumerator(e.name, value, e.comment, e.position))
        return tuple(made)

    def check_unique(self, items: Sequence[_Member | _Enumerator], what: str) -> None:
        seen: dict[str, Position] = {}
        for item in items:
            first = seen.get(item.name)
            if first is not None:
                self.problem(
                    item.position, f"duplicate {what} '{item.name}', first declared at {first}"
                )
            else:
                seen[item.name] = item.position

    def base_of(self, decl: _Type, kind: type[Any]) -> Any | None:
        if decl.base is None:
            return None
        found = self.lookup(decl.base, decl.container, self.types, "type")
        if found is None:
            return None
        made = self.decls[id(found)]
        if not isinstance(made, kind):
            self.problem(
                decl.base.position,
                f"'{decl.name}' cannot extend '{decl.base.name}': not {self.kind_words(kind)}",
            )
            return None
        return made

    @staticmethod
    def kind_words(kind: type[Any]) -> str:
        return {
            StructType: "a struct",
            EnumType: "an enumeration",
            UnionType: "a union",
        }.get(kind, "a type")

    def fill_decls(self) -> None:
        for decl in self.all_types():
            made = self.decls[id(decl)]
            container = decl.container
            values: dict[str, Any]
            if isinstance(made, StructType):
                values = {
                    "fields": self.fields(decl.fields, container, "field"),
                    "base": self.base_of(decl, StructType),
                }
            elif isinstance(made, UnionType):
                values = {
                    "fields": self.fields(decl.fields, container, "field"),
                    "base": self.base_of(decl, UnionType),
                }
            elif isinstance(made, EnumType):
                values = {
                    "enumerators": self.enumerators(decl.enumerators, container),
                    "base": self.base_of(decl, EnumType),
                }
            elif isinstance(made, ArrayType):
                values = {"element": self.type_ref(decl.refs[0], container)}
            elif isinstance(made, MapType):
                values = {
                    "key": self.type_ref(decl.refs[0], container),
                    "value": self.type_ref(decl.refs[1], container),
                }
            else:
                values = {"actual": self.type_ref(decl.refs[0], container)}
            for key, value in values.items():
                # the model's dataclasses are frozen; they are built in two steps
                object.__setattr__(made, key, value)

    def check_type_cycles(self) -> None:
        syntax_of = {id(self.decls[id(d)]): d for d in self.all_types()}

        def next_of(made: TypeDecl) -> TypeDecl | None:
            if isinstance(made, StructType | EnumType | UnionType):
                return made.base
            target: TypeRef
            if isinstance(made, TypedefType):
                target = made.actual
            elif isinstance(made, ArrayType):
                target = made.element
            else:
                return None
            while isinstance(target, ArrayOf):
                target = target.element
            if isinstance(target, Named) and isinstance(target.decl, TypedefType | ArrayType):
                return target.decl
            return None

        starts = [self.decls[id(d)] for d in self.all_types()]
        for cycle in _find_cycles(starts, next_of):
            first, names = self.cycle_start(cycle)
            syntax = syntax_of[id(first)]
            if isinstance(first, StructType | EnumType | UnionType):
                assert syntax.base is not None
                self.problem(syntax.base.position, f"cyclic extends: {names}")
                # cut where reported, so the model stays finite to compare and print
                object.__setattr__(first, "base", None)
            else:
                self.problem(syntax.refs[0].position, f"cyclic type definition: {names}")
                attribute = "actual" if isinstance(first, TypedefType) else "element"
                object.__setattr__(first, attribute, _PLACEHOLDER)

    def cycle_start(self, cycle: Sequence[_T]) -> tuple[_T, str]:
        """The member of a cycle that comes first in file order (where the cycle is reported)
        and the cycle's names from it: ``A -> B -> A``."""

        def where(item: _T) -> tuple[int, int, int]:
            p = cast(TypeDecl | Interface, item).position
            return (self.file_order.get(p.file, 0), p.line, p.column)

        first = min(cycle, key=where)
        index = next(i for i, item in enumerate(cycle) if item is first)
        ordered = [*cycle[index:], *cycle[:index], first]
        return first, " -> ".join(cast(TypeDecl | Interface, i).name for i in ordered)

    def check_inherited(self, made: TypeDecl) -> None:
        """A field or enumerator must not repeat a name of the base (or its bases)."""
        if isinstance(made, StructType | UnionType):
            own: Sequence[Field | Enumerator] = made.fields
        elif isinstance(made, EnumType):
            own = made.enumerators
        else:
            return
        inherited: dict[str, str] = {}
        base = made.base
        seen: set[int] = set()
        while base is not None and id(base) not in seen:
            seen.add(id(base))
            items = base.enumerators if isinstance(base, EnumType) else base.fields
            for item in items:
                inherited.setdefault(item.name, base.name)
            base = base.base
        what = "enumerator" if isinstance(made, EnumType) else "field"
        for item in own:
            if item.name in inherited:
                self.problem(
                    item.position,
                    f"{what} '{item.name}' is already declared in '{inherited[item.name]}'",
                )

    # ---- type collections and interfaces

    def make_containers(self) -> tuple[list[TypeCollection], list[Interface]]:
        collections: list[TypeCollection] = []
        interfaces: list[Interface] = []
        made_interfaces: dict[int, Interface] = {}
        for file in self.files:
            for container in file.containers:
                # (a duplicate declaration has no model object)
                types = tuple(self.decls[id(d)] for d in container.types if id(d) in self.decls)
                for ref in container.constant_types:
                    self.type_ref(ref, container)
                for constant in container.constants:
                    bounds = _INT_RANGES.get(constant.type.name)
                    if bounds is not None and not constant.type.array and constant.expr:
                        value = self.integer_value(
                            constant.expr, container, f"constant {constant.name}", bounds
                        )
                        if value is not None:
                            self.constant_values[id(constant)] = value
                if container.kind == "typeCollection":
                    collections.append(
                        TypeCollection(
                            name=container.name,
                            package=container.package,
                            version=container.version,
                            types=types,
                            comment=container.comment,
                            position=container.position,
                        )
                    )
                    continue
                made = self.interface(container, types)
                made_interfaces[id(container)] = made
                interfaces.append(made)
        self.set_interface_bases(made_interfaces)
        return collections, interfaces

    def interface(self, container: _Container, types: tuple[TypeDecl, ...]) -> Interface:
        assert container.name is not None
        self.check_unique(container.attributes, "attribute")
        self.check_unique(
            [
                _Member(b.name, _Ref("", b.position, False), "", b.position)
                for b in container.broadcasts
            ],
            "broadcast",
        )
        attributes = tuple(
            Attribute(
                name=a.name,
                type=self.type_ref(a.type, container),
                readonly="readonly" in a.flags,
                no_subscriptions="noSubscriptions" in a.flags,
                comment=a.comment,
                position=a.position,
            )
            for a in container.attributes
        )
        error_names = self.error_enum_names(container)
        methods = tuple(
            self.method(m, container, error_names[i]) for i, m in enumerate(container.methods)
        )
        self.check_overloads(methods)
        broadcasts = tuple(
            Broadcast(
                name=b.name,
                out_args=self.args(b.out_args, container, "out-argument"),
                selective=b.selective,
                comment=b.comment,
                position=b.position,
            )
            for b in container.broadcasts
        )
        package = container.package
        return Interface(
            name=container.name,
            package=package,
            wire_name="/".join([*package.split("."), container.name])
            if package
            else container.name,
            version=container.version,
            attributes=attributes,
            methods=methods,
            broadcasts=broadcasts,
            types=types,
            base=None,
            comment=container.comment,
            position=container.position,
        )

    def set_interface_bases(self, made: dict[int, Interface]) -> None:
        syntax = {id(made[id(c)]): c for c in self.all_interfaces() if id(c) in made}
        for container in self.all_interfaces():
            if container.base is None or id(container) not in made:
                continue
            found = self.lookup(container.base, container, self.interfaces, "interface")
            if found is not None and id(found) in made:
                object.__setattr__(made[id(container)], "base", made[id(found)])
        for cycle in _find_cycles(list(made.values()), lambda i: i.base):
            first, names = self.cycle_start(cycle)
            base_ref = syntax[id(first)].base
            assert base_ref is not None
            self.problem(base_ref.position, f"cyclic extends: {names}")
            object.__setattr__(first, "base", None)

    def args(self, members: list[_Member], container: _Container, what: str) -> tuple[Arg, ...]:
        self.check_unique(members, what)
        return tuple(
            Arg(m.name, self.type_ref(m.type, container), m.comment, m.position) for m in members
        )

    @staticmethod
    def joynr_signature(method: _Method) -> str:
        """joynr's generators' in-argument signature of a method (names and simple type
        names), which numbers the inline error enumerations of overloads."""
        parts = [method.name]
        for arg in method.in_args:
            simple = arg.type.name.rsplit(".", 1)[-1]
            parts.append(_first_upper(arg.name) + ("List" if arg.type.array else "") + simple)
        return "".join(parts)

    def error_enum_names(self, container: _Container) -> list[str]:
        counts: dict[str, int] = {}
        for method in container.methods:
            counts[method.name] = counts.get(method.name, 0) + 1
        by_signature: dict[str, str] = {}
        next_index: dict[str, int] = {}
        names = []
        for method in container.methods:
            if counts[method.name] == 1:
                names.append(_first_upper(method.name) + "ErrorEnum")
                continue
            signature = self.joynr_signature(method)
            if signature not in by_signature:
                index = next_index.get(method.name, 0) + 1
                next_index[method.name] = index
                by_signature[signature] = f"{_first_upper(method.name)}{index}"
            names.append(by_signature[signature] + "ErrorEnum")
        return names

    def method(self, method: _Method, container: _Container, error_name: str) -> Method:
        assert container.name is not None
        in_args = self.args(method.in_args, container, "in-argument")
        out_args = self.args(method.out_args, container, "out-argument")
        errors: EnumType | None = None
        spec = method.error
        if spec is not None and spec.inline is None:
            assert spec.ref is not None
            found = self.lookup(spec.ref, container, self.types, "type")
            if found is not None:
                made = self.decls[id(found)]
                if isinstance(made, EnumType):
                    errors = made
                else:
                    self.problem(
                        spec.ref.position, f"error '{spec.ref.name}' is not an enumeration"
                    )
        elif spec is not None:
            assert spec.inline is not None
            base: EnumType | None = None
            if spec.ref is not None:
                found = self.lookup(spec.ref, container, self.types, "type")
                if found is not None:
                    made = self.decls[id(found)]
                    if isinstance(made, EnumType):
                        base = made
                    else:
                        self.problem(
                            spec.ref.position,
                            f"error extends '{spec.ref.name}': not an enumeration",
                        )
            errors = EnumType(
                name=error_name,
                package=container.package,
                owner=container.name,
                wire_name=f"joynr.{container.package}.{container.name}.{error_name}",
                enumerators=self.enumerators(spec.inline, container),
                base=base,
                comment="",
                position=spec.position,
            )
            self.check_inherited(errors)
        if method.fire_and_forget and (out_args or spec is not None):
            self.problem(
                method.position,
                f"fireAndForget method '{method.name}' cannot have out arguments or errors",
            )
        return Method(
            name=method.name,
            in_args=in_args,
            out_args=out_args,
            fire_and_forget=method.fire_and_forget,
            errors=errors,
            comment=method.comment,
            position=method.position,
            selector=method.selector,
        )

    def check_overloads(self, methods: tuple[Method, ...]) -> None:
        seen: dict[tuple[str, tuple[str, ...]], Method] = {}
        selectors: dict[tuple[str, str], Method] = {}
        for method in methods:
            if method.selector is not None:
                other = selectors.setdefault((method.name, method.selector), method)
                if other is not method:
                    self.problem(
                        method.position,
                        f"method '{method.name}:{method.selector}': the selector is the same "
                        f"as its overload's at {other.position}",
                    )
            key = (method.name, tuple(_datatype(a.type) for a in method.in_args))
            first = seen.get(key)
            if first is not None:
                self.problem(
                    method.position,
                    f"method '{method.name}' has the same in-argument types as its overload "
                    f"at {first.position}",
                )
            else:
                seen[key] = method


_DATATYPES = {
    "Int8": "Byte",
    "UInt8": "Byte",
    "Int16": "Short",
    "UInt16": "Short",
    "Int32": "Integer",
    "UInt32": "Integer",
    "Int64": "Long",
    "UInt64": "Long",
    "Float": "Float",
    "Double": "Double",
    "String": "String",
    "Boolean": "Boolean",
    "ByteBuffer": "Byte[]",
}


def _datatype(ref: TypeRef) -> str:
    """The joynr datatype name of a parameter type (joynr tells overloads apart by these):
    typedefs are their actual type, Int32 and UInt32 are both ``Integer``, and so on."""
    seen: set[int] = set()
    while isinstance(ref, Named) and isinstance(ref.decl, TypedefType):
        if id(ref.decl) in seen:
            break
        seen.add(id(ref.decl))
        ref = ref.decl.actual
    if isinstance(ref, Primitive):
        return _DATATYPES.get(ref.name, ref.name)
    if isinstance(ref, ArrayOf):
        return _datatype(ref.element) + "[]"
    return ref.decl.wire_name
