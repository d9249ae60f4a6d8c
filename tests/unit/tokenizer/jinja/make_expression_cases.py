#!/usr/bin/python3
"""Seeded random expressions over literals, variables (str, None, list, dict, undefined),
operators, filters, tests, methods and subscripts, rendered by real Jinja2 in the transformers
environment; writes data/expression_cases.json for semantics_test.cpp.

    /usr/bin/python3 tests/unit/tokenizer/jinja/make_expression_cases.py

Slices are left out here: Jinja2 constant-folds `(2)[1:]` into an undefined value but raises
TypeError for the same slice of a variable; lemma implements the variable behaviour.
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_semantics_cases import ENV, error_line  # noqa: E402

ATOMS = ["0", "1", "2", "3", "-1", "7", "0.5", "2.0", "-1.5", "'a'", "'Ab c'", "''", "' x '", "[1, 'a']", "[3, 1, 2]", "[]",
         "{'k': 1, 'b': 'z'}", "{}", "none", "true", "false", "s", "n", "u", "l", "d", "(1, 2)", "'a,b,,c'", "'10'", "'3.5'", "e"]
BINOPS = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"]
FILTERS = ["length", "upper", "lower", "first", "last", "list", "string", "int", "float", "abs", "join", "join(', ')", "trim",
           "tojson", "default('D')", "default('D', true)", "reverse | list", "sort", "unique | list", "sum", "min", "max",
           "capitalize", "title", "count", "e", "round", "items | list", "dictsort", "select | list", "map('string') | list",
           "batch(2) | list", "replace('a', 'X')", "indent(2)", "center(5)", "wordcount", "first | string", "safe", "pprint"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "iterable", "mapping", "sequence",
         "odd", "even", "divisibleby(2)", "boolean", "true", "false", "in([1, 'a'])", "eq(1)", "callable", "lower", "upper"]
METHODS = [".upper()", ".split()", ".split(',')", ".strip()", ".lstrip('a')", ".get('k')", ".get('x', 5)", ".items() | list",
           ".keys() | list", ".values() | list", ".startswith('a')", ".endswith(('c', 'z'))", ".replace('a', 'b')",
           ".title()", ".count('a')", ".find('b')", ".index(1)", ".rsplit(',', 1)", ".format(1)", ".isdigit()"]
SUBS = ["[0]", "[-1]", "['k']", "[5]", "[1]", ".k", ".b"]  # slices: see semantics cases (constant folding differs)


def expr(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.3:
        return rng.choice(ATOMS)
    if r < 0.5:
        return "(%s %s %s)" % (expr(rng, depth + 1), rng.choice(BINOPS), expr(rng, depth + 1))
    if r < 0.65:
        return "(%s | %s)" % (expr(rng, depth + 1), rng.choice(FILTERS))
    if r < 0.75:
        return "(%s is %s%s)" % (expr(rng, depth + 1), rng.choice(["", "not "]), rng.choice(TESTS))
    if r < 0.85:
        return "(%s)%s" % (expr(rng, depth + 1), rng.choice(METHODS))
    if r < 0.93:
        return "(%s)%s" % (expr(rng, depth + 1), rng.choice(SUBS))
    if r < 0.97:
        return "(not %s)" % expr(rng, depth + 1)
    return "(%s if %s else %s)" % (expr(rng, depth + 1), expr(rng, depth + 1), expr(rng, depth + 1))


CTX = {"s": "hello", "n": None, "l": [1, 2, "x"], "d": {"k": "v", "b": 2}, "e": ""}
rng = random.Random(int(os.environ.get("SEED", "20250115")))
cases, seen = [], set()
N = int(os.environ.get("N", "800"))
while len(cases) < N:
    t = "{{ %s }}" % expr(rng)
    if t in seen:
        continue
    seen.add(t)
    c = {"name": "expr_%04d" % len(cases), "template": t, "context": CTX}
    try:
        c["output"] = ENV.from_string(t).render(**json.loads(json.dumps(CTX)))
    except Exception as ex:
        c["error"] = "%s: %s" % (type(ex).__name__, ex)
        c["line"] = error_line(ex)
    cases.append(c)
out = os.environ.get("OUT", os.path.join(HERE, "data", "expression_cases.json"))
with open(out, "w", encoding="utf-8") as f:
    json.dump(cases, f, ensure_ascii=False, separators=(",", ":"))
    f.write("\n")
print("%d cases (%d errors) -> %s" % (len(cases), sum("error" in c for c in cases), out))
