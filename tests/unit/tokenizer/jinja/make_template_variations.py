#!/usr/bin/python3
"""Renders every shared chat template (shared/data/chat_templates/*.jinja) with more
conversations than the 7 shipped cases -- reasoning content, multimodal content lists,
string tool arguments, parallel tool calls, richer tool schemas, template switches such as
enable_thinking -- using real Jinja2 in the transformers environment, and writes
data/template_variations.json for template_variations_test.cpp.

    /usr/bin/python3 tests/unit/tokenizer/jinja/make_template_variations.py [SHARED_DIR]
    /usr/bin/python3 tests/unit/tokenizer/jinja/make_template_variations.py --show TEMPLATE CASE

Outputs are stored as length + 64-bit FNV-1a of their UTF-8 bytes (to keep the file small);
--show prints one expected output in full. Errors are stored as "<Type>: <msg>" and the line.
"""
import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_semantics_cases import ENV, error_line  # noqa: E402

SYS = {"role": "system", "content": "You are terse."}
U1 = {"role": "user", "content": "Hi there"}
A1 = {"role": "assistant", "content": "Hello! How can I help?"}
U2 = {"role": "user", "content": "Weather in Paris and Rome? \u00e9\U0001F642"}
A_REASON = {"role": "assistant", "content": "Sure thing.", "reasoning_content": "User wants help."}
A_THINK_INLINE = {"role": "assistant", "content": "<think>\nInline thought.\n</think>\n\nAnswer text."}
U_MM = {"role": "user", "content": [{"type": "text", "text": "What is in this image?"}, {"type": "image"}]}
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the weather.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
            "days": {"type": "integer", "description": "Forecast days"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opts": {"type": "object", "properties": {"verbose": {"type": "boolean"}}},
        }, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search", "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}},
]
TC_DICT = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}
TC_DICT2 = {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}
TC_STR = {"id": "call_3", "type": "function", "function": {"name": "search", "arguments": "{\"q\": \"news\"}"}}
A_TC2 = {"role": "assistant", "content": "", "tool_calls": [TC_DICT, TC_DICT2]}
A_TC_NONE = {"role": "assistant", "content": None, "tool_calls": [TC_DICT]}
A_TC_STR = {"role": "assistant", "content": "Searching.", "tool_calls": [TC_STR]}
T1 = {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"t\": 18}"}
T2 = {"role": "tool", "tool_call_id": "call_2", "name": "get_weather", "content": "{\"t\": 21}"}
T3 = {"role": "tool", "tool_call_id": "call_3", "name": "search", "content": "No results."}
A_FINAL = {"role": "assistant", "content": "Paris 18C, Rome 21C."}

# (case, messages, tools, add_generation_prompt, extra variables)
CASES = [
    ("reasoning_history", [SYS, U1, A_REASON, U2], None, True, {}),
    ("inline_think_history", [U1, A_THINK_INLINE, U2], None, True, {}),
    ("thinking_off", [U1, A1, U2], None, True, {"enable_thinking": False}),
    ("thinking_on", [SYS, U1], None, True, {"enable_thinking": True}),
    ("multimodal_user", [U_MM], None, True, {}),
    ("parallel_tool_calls", [U2, A_TC2, T1, T2, A_FINAL, U1], TOOLS, True, {}),
    ("tool_call_content_none", [SYS, U2, A_TC_NONE, T1], TOOLS, True, {}),
    ("tool_call_string_args", [U1, A_TC_STR, T3], TOOLS, False, {}),
    ("tools_with_system", [SYS, U1], TOOLS, True, {}),
    ("assistant_last_no_prompt", [U1, A1], None, False, {}),
    ("only_system", [SYS], None, True, {}),
]

TOKENS = {}


def tokens_for(name):
    # Reuse the shared renderer's token table so bos/eos match the shipped expectations.
    if not TOKENS:
        shared_tools = os.path.join(SHARED, "tools")
        sys.path.insert(0, shared_tools)
        import render_chat_templates as r  # noqa: E402
        TOKENS.update(r.TOKENS)
        TOKENS["__default__"] = r.DEFAULT_TOKENS
    return TOKENS.get(name, TOKENS["__default__"])


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def render(name, text, case):
    case_id, msgs, tools, agp, extra = case
    bos, eos = tokens_for(name)
    kwargs = dict(extra)
    if bos is not None:
        kwargs["bos_token"] = bos
    if eos is not None:
        kwargs["eos_token"] = eos
    entry = {"template": name, "case": case_id, "messages": msgs, "tools": tools,
             "add_generation_prompt": agp, "bos_token": bos, "eos_token": eos, "extra": extra}
    try:
        out = ENV.from_string(text).render(
            messages=json.loads(json.dumps(msgs)), tools=json.loads(json.dumps(tools)),
            documents=None, add_generation_prompt=agp, **json.loads(json.dumps(kwargs)))
        data = out.encode("utf-8")
        entry["output_length"] = len(data)
        entry["output_fnv1a64"] = fnv1a64(data)
        return entry, out
    except Exception as e:  # noqa: BLE001
        entry["error"] = "%s: %s" % (type(e).__name__, e)
        entry["line"] = error_line(e)
        return entry, None


def main(argv):
    global SHARED
    show = None
    if argv and argv[0] == "--show":
        show = (argv[1], argv[2])
        argv = argv[3:]
    SHARED = os.path.abspath(argv[0] if argv else os.path.join(HERE, "..", "..", "..", "..", "..", "shared"))
    tdir = os.path.join(SHARED, "data", "chat_templates")
    results = []
    for fn in sorted(os.listdir(tdir)):
        if not fn.endswith(".jinja"):
            continue
        name = fn[:-len(".jinja")]
        with open(os.path.join(tdir, fn), encoding="utf-8") as f:
            text = f.read()
        for case in CASES:
            if show and (name, case[0]) != show:
                continue
            entry, out = render(name, text, case)
            if show:
                print(out if out is not None else entry["error"], end="")
                return
            results.append(entry)
    path = os.path.join(HERE, "data", "template_variations.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")
    ok = sum(1 for r in results if "error" not in r)
    print("%d cases (%d rendered, %d raised) -> %s" % (len(results), ok, len(results) - ok, path))


SHARED = None

if __name__ == "__main__":
    main(sys.argv[1:])
