#!/usr/bin/python3
"""Validates JSON documents against a schema of packaging/schema/ (Debian's python3-jsonschema);
the other schemas of that directory resolve its references (explain.schema.json refers to
report.schema.json's definitions).
Usage: validate_report.py SCHEMA FILE...   Exit 0 all valid, 1 a document is invalid, 77 no jsonschema."""
import glob, json, os, sys
try:
    import jsonschema
except ImportError:
    print("validate_report: python3-jsonschema is not installed", file=sys.stderr); sys.exit(77)
schema = json.load(open(sys.argv[1]))
siblings = [json.load(open(p)) for p in glob.glob(os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "*.schema.json"))]
try:
    from referencing import Registry, Resource
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in siblings if "$id" in s)
    validator = jsonschema.Draft202012Validator(schema, registry=registry, format_checker=jsonschema.FormatChecker())
except ImportError:  # jsonschema before 4.18: a resolver with the siblings in its store
    resolver = jsonschema.RefResolver.from_schema(schema, store={s["$id"]: s for s in siblings if "$id" in s})
    validator = jsonschema.Draft202012Validator(schema, resolver=resolver, format_checker=jsonschema.FormatChecker())
bad = 0
for path in sys.argv[2:]:
    for error in validator.iter_errors(json.load(open(path))):
        bad += 1
        print(f"{path}: {'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}", file=sys.stderr)
sys.exit(1 if bad else 0)
