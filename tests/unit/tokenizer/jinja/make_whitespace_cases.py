#!/usr/bin/python3
"""Random (seeded) templates mixing text, newlines, indentation and every whitespace-control
variant of tags ({%- -%}, {%+ +%}, {{- -}}, {#- -#}, raw blocks, nested if/for), rendered by real
Jinja2 in the transformers environment; writes data/whitespace_cases.json for semantics_test.cpp.

    /usr/bin/python3 tests/unit/tokenizer/jinja/make_whitespace_cases.py
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_semantics_cases import ENV, error_line  # noqa: E402

TEXTS = ["", " ", "  ", "\t", "\n", "\n\n", "  \n", "\n  ", " \t \n\t ", "a", "b c", "x\n", "\ny", " z ", "\r\n", "w\n  "]


def open_mark(rng):
    return rng.choice(["", "", "-", "+"])


def close_mark(rng):
    return rng.choice(["", "", "-", "+"])


def var(rng):
    return "{{%s %s %s}}" % (rng.choice(["", "-"]), rng.choice(["'v'", "1", "x", "' '", "'\\n'"]), rng.choice(["", "-"]))


def comment(rng):
    return "{#%s c %s#}" % (rng.choice(["", "-", "+"]), rng.choice(["", "-", "+"]))


def block(rng, depth):
    kind = rng.choice(["if", "for", "set", "raw"] if depth < 3 else ["set", "raw"])
    o1, c1, o2, c2 = open_mark(rng), close_mark(rng), open_mark(rng), close_mark(rng)
    if kind == "set":
        return "{%%%s set y = 1 %s%%}" % (o1, c1)
    if kind == "raw":
        return "{%%%s raw %s%%}%s{{ raw }}%s{%%%s endraw %s%%}" % (
            o1, "-" if c1 == "-" else "", rng.choice(TEXTS), rng.choice(TEXTS), o2, c2)
    head = "if true" if kind == "if" else "for i in [1, 2]"
    return "{%%%s %s %s%%}%s{%%%s end%s %s%%}" % (o1, head, c1, body(rng, depth + 1), o2, kind, c2)


def body(rng, depth):
    parts = []
    for _ in range(rng.randint(1, 5)):
        r = rng.random()
        if r < 0.4:
            parts.append(rng.choice(TEXTS))
        elif r < 0.6:
            parts.append(var(rng))
        elif r < 0.7:
            parts.append(comment(rng))
        else:
            parts.append(block(rng, depth))
    return "".join(parts)


def main():
    rng = random.Random(20250115)
    cases = []
    seen = set()
    while len(cases) < 400:
        template = body(rng, 0) + rng.choice(["", "\n", "\n\n", " "])
        if template in seen:
            continue
        seen.add(template)
        case = {"name": "ws_random_%03d" % len(cases), "template": template, "context": {"x": "X"}}
        try:
            case["output"] = ENV.from_string(template).render(x="X")
        except Exception as e:  # noqa: BLE001
            case["error"] = "%s: %s" % (type(e).__name__, e)
            case["line"] = error_line(e)
        cases.append(case)
    path = os.path.join(HERE, "data", "whitespace_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("%d cases (%d errors) -> %s" % (len(cases), sum("error" in c for c in cases), path))


if __name__ == "__main__":
    main()
