#!/usr/bin/env python3
"""Validates `myriarch-updater status --json` output against docs/status.schema.json.

Usage: check_status.py SCHEMA FILE
Prints every violation (path: message) and exits 1 when there is any, 0 when FILE conforms.
"""
import json
import sys

import jsonschema


def main() -> int:
    schema_path, doc_path = sys.argv[1], sys.argv[2]
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    with open(doc_path, encoding="utf-8") as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        print(f"{doc_path}: not JSON: {e}")
        return 1
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    errors = sorted(validator_class(schema).iter_errors(doc), key=lambda e: list(e.path))
    for e in errors:
        where = "/".join(str(p) for p in e.path) or "(root)"
        print(f"{where}: {e.message}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
