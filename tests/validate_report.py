#!/usr/bin/python3
"""Validates JSON documents against packaging/schema/report.schema.json (Debian's python3-jsonschema).
Usage: validate_report.py SCHEMA FILE...   Exit 0 all valid, 1 a document is invalid, 77 no jsonschema."""
import json, sys
try:
    import jsonschema
except ImportError:
    print("validate_report: python3-jsonschema is not installed", file=sys.stderr); sys.exit(77)
schema = json.load(open(sys.argv[1]))
validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
bad = 0
for path in sys.argv[2:]:
    for error in validator.iter_errors(json.load(open(path))):
        bad += 1
        print(f"{path}: {'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}", file=sys.stderr)
sys.exit(1 if bad else 0)
