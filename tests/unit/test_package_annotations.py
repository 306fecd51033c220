"""Classes whose annotations are read at class creation keep them as objects, not strings.

Pydantic models, named tuples and typed dicts evaluate every field annotation when the class
is made. Under ``from __future__ import annotations`` each one is a string that Python
compiles first (``typing.ForwardRef``): ~450 compilations on a cold ``run``, ~41 million
instructions, 3% of it (counted with callgrind, issue 24). So a module that defines such a
class does not postpone its annotations; a name only a type checker imports is quoted where
it is used.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent.parent / "acp_bridge"
# Classes the standard library or pydantic make from their annotations at class creation.
RUNTIME_ANNOTATED = frozenset({"BaseModel", "RootModel", "NamedTuple", "TypedDict"})
EXEMPT = {
    # Few fields each, beside public functions whose signatures the API reference shows by
    # the names written (aliases such as EventHandler; types imported only for type
    # checkers, whose import would load the ACP layer with every handle or request).
    "_runs/caller/handle.py",
    "_entries/request.py",
    "_entries/local_loop/builtin_tools.py",
    "_entries/local_loop/workspace_tools.py",
}


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _runtime_annotated_classes(trees: dict[str, ast.Module]) -> set[str]:
    """The names of classes made from their annotations, subclasses of ours included."""
    names = set(RUNTIME_ANNOTATED)
    grew = True
    while grew:
        grew = False
        for tree in trees.values():
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.ClassDef)
                    and node.name not in names
                    and any(_base_name(base) in names for base in node.bases)
                ):
                    names.add(node.name)
                    grew = True
    return names


def _postpones_annotations(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ImportFrom) and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )  # fmt: skip


def test_modules_with_runtime_annotated_classes_do_not_postpone_annotations() -> None:
    trees = {
        str(path.relative_to(PACKAGE)): ast.parse(path.read_text(encoding="utf-8"))
        for path in PACKAGE.rglob("*.py")
    }
    annotated = _runtime_annotated_classes(trees)
    offenders = sorted(
        name
        for name, tree in trees.items()
        if name not in EXEMPT
        and _postpones_annotations(tree)
        and any(
            isinstance(node, ast.ClassDef) and any(_base_name(b) in annotated for b in node.bases)
            for node in ast.walk(tree)
        )
    )
    assert offenders == []
    assert len(annotated) > 50  # the scan sees the package's models at all
