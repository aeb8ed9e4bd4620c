"""Every statement of the layer is written whole where it runs (docs/architecture.md, "Where
the SQL is"): no SQL glued from Python fragments (an f-string, a concatenation of string
literals), so what one reads in a module is what Postgres receives. A rule more than one
statement needs is a function of a migration instead."""

import ast
from pathlib import Path

from dispatch_local import REPO_ROOT

LAYER = REPO_ROOT / "shared" / "dispatch"
SQL_WORDS = ("SELECT ", "INSERT ", "UPDATE ", "DELETE ", "WITH ", " WHERE ", " FROM ")


def looks_like_sql(text: str) -> bool:
    return any(word in text.upper() for word in SQL_WORDS)


def glued_statements(path: Path) -> list[int]:
    """Lines where SQL text is assembled: an f-string, or `+` between string pieces."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value
                for v in node.values
                if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
            if looks_like_sql(text) and "\n" in text:
                found.append(node.lineno)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            sides = (node.left, node.right)
            if any(
                isinstance(side, ast.Constant)
                and isinstance(side.value, str)
                and looks_like_sql(side.value)
                for side in sides
            ):
                found.append(node.lineno)
    return found


def test_no_statement_of_the_layer_is_glued_from_fragments() -> None:
    glued = {
        str(path.relative_to(LAYER)): lines
        for path in sorted(LAYER.rglob("*.py"))
        if (lines := glued_statements(path))
    }
    assert glued == {}


def test_a_glued_statement_would_be_seen(tmp_path: Path) -> None:
    module = tmp_path / "sql.py"
    module.write_text(
        "WHERE = \"AND j.status = 'open'\"\n"
        'ONE = f"""\nSELECT 1 FROM jobs j\n WHERE true {WHERE}\n"""\n'
        'TWO = """\nSELECT 2 FROM jobs j""" + WHERE\n'
    )
    assert glued_statements(module) == [2, 6]  # where each statement begins
