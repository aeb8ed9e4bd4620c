import re
from pathlib import Path

from dispatch.errors import CATALOGUE, Code, error_body

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def contract_table() -> dict[str, int]:
    """The error-code table of the contract, read from the document itself."""
    rows = re.findall(r"^\| ([A-Z_]+) \| (\d{3}) \|", CONTRACT.read_text(), flags=re.M)
    return {code: int(status) for code, status in rows}


def test_every_contract_code_has_the_contract_status() -> None:
    table = contract_table()
    assert table, "could not read the contract's table"
    for code, status in table.items():
        assert CATALOGUE[Code(code)].status == status, code


def test_every_code_has_one_friendly_sentence() -> None:
    assert set(CATALOGUE) == set(Code)
    for code, spec in CATALOGUE.items():
        assert spec.message.endswith((".", "!")), code
        assert "SQL" not in spec.message and "psycopg" not in spec.message


def test_taken_and_unavailable_say_different_things() -> None:
    assert CATALOGUE[Code.JOB_TAKEN].message != CATALOGUE[Code.JOB_UNAVAILABLE].message
    assert CATALOGUE[Code.JOB_TAKEN].message == (
        "This job was taken by another worker. More jobs coming!"
    )


def test_error_body_shape() -> None:
    body = error_body(Code.VALIDATION_FAILED, "req-1", [{"field": "x", "problem": "bad"}])
    assert body == {
        "error": {
            "code": "VALIDATION_FAILED",
            "message": CATALOGUE[Code.VALIDATION_FAILED].message,
            "request_id": "req-1",
            "details": [{"field": "x", "problem": "bad"}],
        }
    }
    assert "details" not in error_body(Code.NOT_FOUND, "req-2")["error"]
