"""Writes fixtures.json: Avro messages made by fastavro, an encoder independent of Riffle.

Run from this directory with a Python that has fastavro (the oracle venv has it):

    ~/.cache/riffle-oracle-venv/bin/python make_fixtures.py

Schemas:
- payments.avsc and every_type.avsc are the schemas Riffle derives for the tables of
  tests/avro_formats.rs (that test checks they still are); bare messages are written with them.
- payments_writer_v1.avsc / _v2.avsc are a producer's own schemas (another record name, fields in
  another order, an extra field, an INT where the table has BIGINT, a field missing in v2), under
  registry ids 42 and 43; Confluent-framed messages are written with them.
"""

import io
import json
from decimal import Decimal
from pathlib import Path

import fastavro

HERE = Path(__file__).parent


def schema(name):
    return fastavro.parse_schema(json.loads((HERE / name).read_text()))


def datum(parsed, record):
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parsed, record)
    return buf.getvalue()


def confluent(schema_id, parsed, record):
    return b"\x00" + schema_id.to_bytes(4, "big") + datum(parsed, record)


# 2025-01-03T10:15:30.123, 2024-12-31T23:59:59.999, 1969-12-31T23:59:59.500 in epoch ms.
PAYMENTS = [
    {"payment_id": "p-1", "merchant_id": 7, "amount": Decimal("19.99"), "currency": "EUR",
     "status": "SETTLED", "settled_at": 1735899330123},
    {"payment_id": "p-2", "merchant_id": 8, "amount": Decimal("-5.00"), "currency": "USD",
     "status": "PENDING", "settled_at": None},
    {"payment_id": "p-3", "merchant_id": 7, "amount": Decimal("1234567890123456.78"),
     "currency": "EUR", "status": "SETTLED", "settled_at": 1735689599999},
    {"payment_id": "p-4", "merchant_id": None, "amount": None, "currency": None,
     "status": "SETTLED", "settled_at": -500},
]

EVERY_TYPE = [
    {"id": 1, "flag": True, "tiny": -128, "small": -300, "i": 42, "f": 1.5, "d": -0.25,
     "s": "h\u00e9llo", "b": b"\x00\xff", "amount": Decimal("12.34"), "day": 18367,
     "t": 29105120, "ts": 1586937605120, "tags": ["x", None], "counts": {"b": 2},
     "address": {"city": "Lyon", "zip": 69000},
     "history": [{"city": "Rome", "zip": 1}, {"city": "Bern", "zip": None}]},
    {"id": 2, "flag": None, "tiny": None, "small": None, "i": None, "f": None, "d": None,
     "s": None, "b": None, "amount": None, "day": None, "t": None, "ts": None, "tags": None,
     "counts": None, "address": None, "history": None},
    {"id": -9007199254740993, "flag": False, "tiny": 127, "small": 32767, "i": -2147483648,
     "f": -3.25, "d": 1e300, "s": "", "b": b"", "amount": Decimal("-9999999999999999.99"),
     "day": -1, "t": 0, "ts": -1, "tags": [], "counts": {}, "address": {"city": "", "zip": None},
     "history": []},
]


def main():
    payments = schema("payments.avsc")
    v1 = schema("payments_writer_v1.avsc")
    v2 = schema("payments_writer_v2.avsc")
    every = schema("every_type.avsc")
    # Confluent messages: ids 42 (v1), 42, 43 (v2: no status), 42.
    framed = [
        confluent(42, v1, dict(PAYMENTS[0], note="first")),
        confluent(42, v1, dict(PAYMENTS[1], note="")),
        confluent(43, v2, {k: v for k, v in PAYMENTS[2].items() if k != "status"}),
        confluent(42, v1, dict(PAYMENTS[3], note="last")),
    ]
    out = {
        "comment": "made by make_fixtures.py with fastavro " + fastavro.__version__,
        "payments_bare": [datum(payments, r).hex() for r in PAYMENTS],
        "payments_confluent": [m.hex() for m in framed],
        "writer_schemas": {
            "42": (HERE / "payments_writer_v1.avsc").read_text().strip(),
            "43": (HERE / "payments_writer_v2.avsc").read_text().strip(),
        },
        "every_type_bare": [datum(every, r).hex() for r in EVERY_TYPE],
    }
    (HERE / "fixtures.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
