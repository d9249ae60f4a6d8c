#!/usr/bin/python3
"""Renders the snippets below with real Jinja2 (the same environment as
shared/tools/render_chat_templates.py: ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols, {% generation %}, HF tojson, raise_exception, frozen
strftime_now) and writes data/semantics_cases.json for semantics_test.cpp.

    /usr/bin/python3 tests/unit/tokenizer/jinja/make_semantics_cases.py

Each case: {"name", "template", "context", "output"} or, where Jinja2 raised,
{"name", "template", "context", "error": "<Type>: <msg>", "line": <template line or 0>}.
"""
import datetime
import json
import os
import sys
import traceback

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2025, 1, 15, 12, 0, 0)


class GenerationTag(jinja2.ext.Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.Scope(body).set_lineno(lineno)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


ENV = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=[GenerationTag, jinja2.ext.loopcontrols])
ENV.filters["tojson"] = tojson
ENV.globals["raise_exception"] = raise_exception
ENV.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)

MSGS = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"}, {"role": "user", "content": "bye \U0001F642"}]

CASES = [
    # ---- whitespace control ----
    ("ws_trim_blocks", "{% if true %}\nA\n{% endif %}\nB", {}),
    ("ws_lstrip_blocks", "  {% if true %}\n  A\n  {% endif %}\nB", {}),
    ("ws_lstrip_not_after_text", "x {% if true %}A{% endif %}", {}),
    ("ws_lstrip_after_tag_same_line", "{{ 1 }}  {% if true %}A{% endif %}", {}),
    ("ws_minus_both", "a   {%- if true -%}   b   {%- endif -%}   c", {}),
    ("ws_var_minus", "a \n {{- 'b' -}} \n c", {}),
    ("ws_plus_keeps", "  {%+ if true %}A{% endif +%}\nB", {}),
    ("ws_comment_trim", "a\n  {# note #}\nb", {}),
    ("ws_comment_minus", "a  {#- note -#}  b", {}),
    ("ws_trailing_newline", "a\n", {}),
    ("ws_two_trailing_newlines", "a\n\n", {}),
    ("ws_crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n", {}),
    ("ws_var_no_trim", "{{ 'a' }}\nb", {}),
    ("ws_tabs_lstrip", "\t\t{% set x = 1 %}\nv={{ x }}", {}),
    ("ws_block_then_text_same_line", "{% for i in [1,2] %}{{ i }} {% endfor %}|", {}),
    ("ws_nested_indent", "{% for m in messages %}\n    {% if m.role == 'user' %}\n        U:{{ m.content }}\n    {% endif %}\n{% endfor %}", {"messages": MSGS}),
    # ---- literals and printing ----
    ("print_types", "{{ 1 }} {{ 1.0 }} {{ 1.5 }} {{ true }} {{ none }} {{ 'a' }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 10 / 4 }} {{ 2 ** 40 }}", {}),
    ("print_list_repr", "{{ [1, 'a', \"b'c\", none, true, 2.5, [3], {'k': 'v'}] }}", {}),
    ("print_dict_repr", "{{ {'a': 1, 'b': [1, 2], 3: 'x'} }}", {}),
    ("print_tuple", "{{ (1, 2) }}", {}),
    ("string_escapes", "{{ 'a\\nb\\t\\'c\\' \\\\ \\u00e9 \\x41' }}|{{ \"q\\\"q\" }}", {}),
    ("string_concat_literals", "{{ 'a' 'b' \"c\" }}", {}),
    ("int_float_ops", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 // 2 }} {{ 2 ** 3 }} {{ 2 ** -1 }} {{ 1 + 2.0 }} {{ 3 * 'ab' }}", {}),
    ("concat_tilde", "{{ 1 ~ 'a' ~ none ~ true ~ [1] }}", {}),
    ("unary_minus_filter", "{{ -3 | abs }} {{ -(3) }} {{ not true }}", {}),
    ("string_mult", "{{ '-' * 5 }}{{ [1] * 2 }}", {}),
    ("list_concat", "{{ [1] + [2, 3] }}", {}),
    # ---- comparisons and logic ----
    ("compare", "{{ 1 < 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ [1,2] == [1,2] }} {{ {'a':1} == {'a':1} }} {{ 1 != 2 }} {{ true == 1 }}", {}),
    ("and_or_values", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }} {{ none or [] }}", {}),
    ("in_operator", "{{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'cat' }} {{ 'x' in undefined_thing }}", {}),
    ("is_precedence", "{{ not x is defined }} {{ 1 + 1 is number }}", {}),
    ("cond_expr", "{{ 'y' if true else 'n' }}|{{ 'y' if false }}|{{ 'a' if false else 'b' if true else 'c' }}", {}),
    ("chained_compare", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 < 3 > 2 }} {{ 5 > 1 < 3 }} {{ 1 == 1 == 1 }} {{ 2 > 1 == 1 }}", {}),
    # ---- undefined ----
    ("undefined_print", "[{{ nope }}] [{{ nope | default('d') }}] [{{ none | default('d') }}] [{{ '' | default('d', true) }}]", {}),
    ("undefined_attr_of_dict", "[{{ d.missing }}] {{ d.missing is defined }} {{ d['x'] is defined }}", {"d": {"x": 1}}),
    ("undefined_attr_of_undefined", "{{ nope.attr }}", {}),
    ("undefined_add", "{{ nope + 1 }}", {}),
    ("undefined_iter", "{% for x in nope %}x{% else %}empty{% endfor %}", {}),
    ("undefined_length", "{{ nope | length }} {{ nope | trim }}|", {}),
    ("undefined_tojson", "\n\n{{ nope | tojson }}", {}),
    ("none_attr", "[{{ n.attr }}] {{ n.attr is defined }}", {"n": None}),
    ("none_iter", "line1\n{% for x in n %}{% endfor %}", {"n": None}),
    ("none_length", "{{ n | length }}", {"n": None}),
    ("string_plus_dict", "x\n\n{{ 'a' + d }}", {"d": {"k": 1}}),
    ("index_out_of_range", "[{{ l[5] }}] {{ l[-1] }} {{ l[5] is defined }}", {"l": [1, 2, 3]}),
    ("call_undefined", "{{ nope() }}", {}),
    ("compare_undefined", "{{ nope < 1 }}", {}),
    # ---- slicing and indexing ----
    ("slices", "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }} {{ l[1:3] }} {{ l[5:] }} {{ l[3:1:-1] }}", {"l": [0, 1, 2, 3, 4]}),
    ("string_slices", "{{ s[1:] }} {{ s[::-1] }} {{ s[-1] }} {{ s[0] }} {{ s[:2] }}", {"s": "h\u00e9llo\U0001F642"}),
    ("dotted_index", "{{ l.0 }} {{ d.k.1 }}", {"l": ["a", "b"], "d": {"k": [1, 2]}}),
    ("dict_items_key_vs_method", "{{ d['items'] }} {{ d.items() | list }}", {"d": {"items": "I"}}),
    # ---- loops ----
    ("loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", {}),
    ("loop_prev_next", "{% for x in [1,2,3] %}[{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}]{{ loop.previtem is defined }}{% endfor %}", {}),
    ("loop_cycle", "{% for x in range(5) %}{{ loop.cycle('a','b','c') }}{% endfor %}", {}),
    ("loop_filter", "{% for m in messages if m.role == 'user' %}{{ loop.index }}/{{ loop.length }}:{{ m.content }} {% endfor %}", {"messages": MSGS}),
    ("loop_else", "{% for x in [] %}x{% else %}none{% endfor %}", {}),
    ("loop_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("loop_nested_depth", "{% for a in [1,2] %}{% for b in [1] %}{{ loop.depth }}{{ a }}{{ b }} {% endfor %}{{ loop.depth }}{% endfor %}", {}),
    ("loop_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1,2],[3,4]] %}{{ a+b }}{% endfor %}", {"d": {"x": 1, "y": 2}}),
    ("loop_dict", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"x": 1, "y": 2}}),
    ("loop_scope", "{% set x = 1 %}{% for i in [1,2] %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}", {}),
    ("loop_set_persists_in_iteration", "{% for i in [1,2] %}{% if loop.first %}{% set y = 5 %}{% endif %}[{{ y }}]{% endfor %}", {}),
    ("if_scope_leaks", "{% if true %}{% set x = 3 %}{% endif %}{{ x }}", {}),
    ("loop_over_none_in_loop_var", "{% for m in messages %}{{ loop.index }}{% endfor %}", {"messages": MSGS}),
    # ---- set / namespace ----
    ("namespace", "{% set ns = namespace(a=1, b=[]) %}{% for i in [1,2,3] %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }} {{ ns.b }}", {}),
    ("namespace_from_dict", "{% set ns = namespace({'x': 5}) %}{{ ns.x }}", {}),
    ("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}", {}),
    ("set_block", "{% set x %}  hello {{ 1 }}  {% endset %}[{{ x }}]", {}),
    ("set_block_filter", "{% set x | trim | upper %}  hello  {% endset %}[{{ x }}]", {}),
    ("set_attr_non_namespace", "{% set d = {} %}\n{% set d.x = 1 %}", {}),
    ("filter_block", "{% filter upper %}abc {{ 'd' }}{% endfilter %}", {}),
    ("generation_block", "a{% generation %}b{{ 1 }}{% endgeneration %}c", {}),
    # ---- macros ----
    ("macro_basic", "{% macro greet(name, greeting='Hi') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Bob') }} {{ greet('Al', greeting='Yo') }} {{ greet(name='C') }}", {}),
    ("macro_missing_arg", "{% macro f(a, b) %}[{{ a }}|{{ b }}]{% endmacro %}{{ f(1) }}", {}),
    ("macro_varargs_kwargs", "{% macro f(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, 3, x=4) }}", {}),
    ("macro_recursive", "{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(3) }}", {}),
    ("macro_sees_globals", "{% set g = 'G' %}{% macro f() %}{{ g }}{{ bos_token }}{% endmacro %}{{ f() }}", {"bos_token": "<s>"}),
    ("macro_returns_string", "{% macro f() %}  x  {% endmacro %}[{{ f() | trim }}] {{ f() | length }}", {}),
    ("macro_caller", "{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inner{% endcall %}", {}),
    ("macro_caller_args", "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(v) each([1,2]) %}[{{ v }}]{% endcall %}", {}),
    ("macro_default_uses_param", "{% macro f(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ f(3) }}", {}),
    # ---- tojson ----
    ("tojson_basic", "{{ v | tojson }}", {"v": {"b": 1, "a": [1, 2.5, None, True, "x\u00e9\U0001F642\n\"q\"\\"], "c": {}}}),
    ("tojson_indent", "{{ v | tojson(indent=2) }}", {"v": {"b": 1, "a": [1, {"x": []}], "c": {}}}),
    ("tojson_separators", "{{ v | tojson(separators=(',', ':')) }}", {"v": {"b": 1, "a": [1, 2]}}),
    ("tojson_sort_keys", "{{ v | tojson(sort_keys=true) }}", {"v": {"b": 1, "a": 2}}),
    ("tojson_ensure_ascii", "{{ v | tojson(ensure_ascii=true) }}", {"v": "\u00e9\U0001F642"}),
    ("tojson_floats", "{{ [1.0, 0.5, 1e-7, 123456789012345678.0, 3] | tojson }}", {}),
    ("tojson_int_keys", "{{ {1: 'a', 2: 'b'} | tojson }}", {}),
    ("tojson_control_chars", "{{ '\\x01\\x7f\\u2028' | tojson }}", {}),
    ("tojson_generator", "x\n{{ [1,2] | map('string') | tojson }}", {}),
    # ---- filters ----
    ("filter_strings", "{{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'hello world-foo(bar' | title }}|{{ 'hELLO' | capitalize }}|{{ 'Ab' | upper }}{{ 'Ab' | lower }}|{{ 'aaa' | replace('a', 'b', 2) }}", {}),
    ("filter_length_count", "{{ 'h\u00e9\U0001F642' | length }} {{ [1,2] | count }} {{ {'a':1} | length }}", {}),
    ("filter_first_last", "{{ [1,2,3] | first }} {{ [1,2,3] | last }} {{ 'abc' | first }} [{{ [] | first }}]", {}),
    ("filter_join", "{{ [1, 'a', none] | join(', ') }}|{{ users | join(',', attribute='name') }}", {"users": [{"name": "a"}, {"name": "b"}]}),
    ("filter_default", "{{ x | d('D') }} {{ false | default('D') }} {{ false | default('D', true) }}", {}),
    ("filter_int_float", "{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 3 | float }} {{ 'x' | float }}", {}),
    ("filter_list", "{{ 'ab' | list }} {{ {'a': 1} | list }} {{ [1] | list }}", {}),
    ("filter_items", "{{ d | items | list }}", {"d": {"a": 1, "b": 2}}),
    ("filter_dictsort", "{{ d | dictsort }} {{ d | dictsort(reverse=true) }} {{ d | dictsort(by='value') }}", {"d": {"b": 1, "A": 3, "c": 2}}),
    ("filter_sort", "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} {{ us | sort(attribute='n', reverse=true) | map(attribute='n') | list }}", {"us": [{"n": 1}, {"n": 3}, {"n": 2}]}),
    ("filter_unique", "{{ ['a', 'A', 'b', 'a'] | unique | list }} {{ [1, 2, 1] | unique | list }}", {}),
    ("filter_min_max_sum", "{{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ [1, 2, 3] | sum }} {{ us | sum(attribute='n') }}", {"us": [{"n": 1}, {"n": 3}]}),
    ("filter_select", "{{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3, 4] | reject('odd') | list }} {{ [0, 1, '', 'a'] | select | list }}", {}),
    ("filter_selectattr", "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} {{ messages | rejectattr('role', 'eq', 'user') | list | length }} {{ messages | selectattr('content') | list | length }}", {"messages": MSGS}),
    ("filter_selectattr_none", "{{ n | selectattr('x') | list }} {{ n | map(attribute='x') | list }}", {"n": None}),
    ("filter_map", "{{ [1, 2] | map('string') | list }} {{ ['a', 'B'] | map('upper') | join }} {{ us | map(attribute='n', default=0) | list }}", {"us": [{"n": 1}, {}]}),
    ("filter_map_nested_attr", "{{ tcs | map(attribute='function.name') | list }}", {"tcs": [{"function": {"name": "f"}}, {"function": {"name": "g"}}]}),
    ("filter_generator_print", "{{ ([1] | map('string') | list) }} {{ [1] | select | first }}", {}),
    ("filter_generator_truthy", "{% if [] | select %}T{% else %}F{% endif %}{% if [] | select | list %}T{% else %}F{% endif %}", {}),
    ("filter_generator_length", "{{ [1] | select | length }}", {}),
    ("filter_round_abs", "{{ 2.5 | round }} {{ 3.5 | round }} {{ 2.567 | round(2) }} {{ 2.1 | round(0, 'ceil') }} {{ -2 | abs }} {{ -2.5 | abs }}", {}),
    ("filter_indent", "{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) }}", {}),
    ("filter_batch", "{{ [1,2,3,4,5] | batch(2) | list }} {{ [1,2,3] | batch(2, 'x') | list }}", {}),
    ("filter_reverse", "{{ 'abc' | reverse }} {{ [1,2] | reverse | list }}", {}),
    ("filter_format", "{{ '%s-%d-%.2f' | format('a', 3, 1.5) }} {{ '%s and %s' % ('x', 'y') }} {{ '%05.1f|%x|%r' % (3.14159, 255, 'q') }}", {}),
    ("filter_escape_safe", "{{ '<a href=\"x\">&</a>' | e }} {{ '<b>' | safe }} {{ '<b>' | safe + '<i>' }} {{ ('<b>' | safe) ~ '<i>' }} {{ '<i>' + ('<b>' | safe) }}", {}),
    ("filter_string", "{{ [1, 'a'] | string }} {{ none | string }} {{ 1.0 | string }}", {}),
    ("filter_wordcount_center", "{{ 'a b  c' | wordcount }}[{{ 'ab' | center(7) }}]", {}),
    ("filter_unknown", "a\n{% if false %}{{ x | nosuchfilter }}{% endif %}b", {}),
    ("filter_unknown_runtime", "a\n{% if true %}\n{{ x | nosuchfilter }}{% endif %}b", {}),
    ("filter_attr", "{{ d | attr('k') }}", {"d": {"k": "v"}}),
    # ---- tests ----
    ("tests_types", "{{ 1 is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ true is integer }}{{ true is boolean }}{{ 's' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 's' is iterable }}{{ 1 is iterable }}{{ [] is sequence }}{{ none is none }}{{ x is undefined }}{{ range is callable }}", {}),
    ("tests_values", "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 1 is eq 1 }}{{ 1 is ne 2 }}{{ 'a' is in 'cat' }}{{ 2 is in [1, 2] }}{{ 2 is gt 1 }}{{ 2 is ge 3 }}{{ 1 is lt 2 }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ true is true }}{{ 1 is true }}{{ false is false }}", {}),
    ("tests_sameas_filter", "{{ none is sameas none }}{{ 'trim' is filter }}{{ 'nosuch' is filter }}{{ 'defined' is test }}", {}),
    ("tests_negated", "{{ 1 is not string }}{{ x is not defined }}", {}),
    ("tests_equalto_in_select", "{{ [1, 2, 1] | select('equalto', 1) | list }}", {}),
    ("tests_unknown", "{{ 1 is nosuchtest }}", {}),
    # ---- string methods ----
    ("str_strip", "[{{ '  a  '.strip() }}][{{ 'xxaxx'.strip('x') }}][{{ '  a '.lstrip() }}][{{ ' a  '.rstrip() }}][{{ 'abcba'.rstrip('ab') }}][{{ '\\n a \\t'.strip() }}]", {}),
    ("str_split", "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'a b c'.split(none, 1) }} {{ ''.split(',') }} {{ ''.split() }} {{ '</think>x'.split('</think>')[-1] }}", {}),
    ("str_startswith", "{{ 'hello'.startswith('he') }}{{ 'hello'.endswith('lo') }}{{ 'hello'.startswith(('x', 'h')) }}{{ 'hello'.endswith(('x', 'y')) }}", {}),
    ("str_misc", "{{ 'a-b'.replace('-', '+') }} {{ 'abc'.upper() }} {{ 'ABC'.lower() }} {{ 'hello world'.title() }} {{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ ', '.join(['a', 'b']) }} {{ 'abc'.capitalize() }}", {}),
    ("str_format_method", "{{ '{} and {}'.format('a', 'b') }} {{ '{0}{0}'.format('x') }} {{ '{name}!'.format(name='n') }}", {}),
    ("str_is_methods", "{{ '123'.isdigit() }}{{ 'ab'.isalpha() }}{{ ' '.isspace() }}{{ ''.isdigit() }}{{ 'abc'.islower() }}{{ 'ABC'.isupper() }}", {}),
    ("str_splitlines", "{{ 'a\\nb\\r\\nc\\n'.splitlines() }}", {}),
    ("str_unicode_methods", "{{ 'é\U0001F642x'.find('x') }} {{ 'éé'.upper() }} {{ 'ÉÉ'.lower() }}", {}),
    # ---- dict and list methods ----
    ("dict_methods", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'def') }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }}", {"d": {"a": 1, "b": 2}}),
    ("dict_attr_fallback", "{{ d.a }} {{ d['a'] }} {{ d.get is defined }}", {"d": {"a": 1}}),
    ("list_append_forbidden", "x\n{% set l = [] %}\n{% set _ = l.append(1) %}", {}),
    ("list_pop_allowed", "{{ l.pop(0) }}{{ l }}{{ l.pop() }}{{ l }}", {"l": [1, 2, 3]}),
    ("list_pop_shared", "{% set ns = namespace(ids=['a', 'b']) %}{% for i in [1, 2] %}{{ ns.ids.pop(0) }}{% endfor %}{{ ns.ids }}", {}),
    ("list_pop_empty", "{{ [].pop() }}", {}),
    ("list_clear_allowed", "{% set l = [1] %}{{ l.clear() }}{{ l }}", {}),
    ("list_sort_forbidden", "{{ [2, 1].sort() }}", {}),
    ("dict_pop_forbidden", "{{ {'a': 1}.pop('a') }}", {}),
    ("tuple_printing", "{{ (1,) }} {{ () }} {{ (1, 'a') | tojson }} {{ (1, 2) == [1, 2] }} {{ (1, 2) | list }}", {}),
    ("dict_update_forbidden", "{{ d.update({'b': 2}) }}", {"d": {"a": 1}}),
    ("list_append_is_defined", "{{ l.append is defined }}[{{ l.append }}]", {"l": []}),
    ("list_index_count", "{{ l.index(2) }} {{ l.count(1) }}", {"l": [1, 2, 1]}),
    # ---- globals ----
    ("range", "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }}", {}),
    ("dict_global", "{{ dict(a=1, b='x') }}", {}),
    ("strftime_now", "{{ strftime_now('%d %b %Y') }} {{ strftime_now('%Y-%m-%d %H:%M:%S') }} {{ strftime_now('%A %B %-d') }}", {}),
    ("raise_exception", "a\n{{ raise_exception('Bad role: ' ~ 'x') }}", {}),
    ("bos_undefined", "[{{ bos_token }}]{{ bos_token is defined }}", {}),
    # ---- errors with line numbers ----
    ("error_line_in_loop", "{% for m in messages %}\n{{ m.content }}\n{% if m.role == 'assistant' %}\n{{ m.content + 1 }}\n{% endif %}\n{% endfor %}", {"messages": MSGS}),
    ("error_in_macro", "{% macro f(x) %}\n\n{{ x.y.z }}\n{% endmacro %}\n{{ f({}) }}", {}),
    ("error_unpack", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", {}),
    ("error_division_by_zero", "\n{{ 1 // 0 }}", {}),
    ("error_iter_int", "{% for x in 5 %}{% endfor %}", {}),
    ("error_call_string", "{{ 'abc'() }}", {}),
    ("error_syntax_unclosed", "{% if true %}\nabc", {}),
    ("error_syntax_unknown_tag", "a\n{% frobnicate %}", {}),
    ("error_syntax_bad_expr", "{{ 1 + }}", {}),
    ("error_syntax_unclosed_string", "x\n{{ 'abc }}", {}),
    ("error_syntax_endfor_mismatch", "{% if true %}{% endfor %}", {}),
    ("with_block", "{% set a = 1 %}{% with a = 2, b = a %}{{ a }}{{ b }}{% set c = 3 %}{% endwith %}{{ a }}[{{ c }}]", {}),
    ("loop_changed", "{% for x in [1, 1, 2, 2, 1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}", {}),
    ("loop_recursive", "{% for n in tree recursive %}<{{ n.name }}{{ loop.depth }}{% if n.kids %}[{{ loop(n.kids) }}]{% endif %}>{% endfor %}", {"tree": [{"name": "a", "kids": [{"name": "b", "kids": [{"name": "c"}]}, {"name": "d"}]}, {"name": "e"}]}),
    ("break_in_else_scope", "{% for x in [] %}{% else %}E{% endfor %}{% for x in [1, 2] %}{{ x }}{% break %}{% endfor %}", {}),
    # ---- undefined / none through filters and operators ----
    ("undef_filters", "[{{ u ~ 'x' }}][{{ u | join(',') }}][{{ u | list }}][{{ u | items | list }}][{{ u | string }}][{{ u | upper }}][{{ u | replace('a', 'b') }}][{{ u | length }}][{{ u | sort }}][{{ u | select | list }}][{{ u | map('upper') | list }}][{{ u | first }}][{{ u | reverse | list }}][{{ u | unique | list }}][{{ u | capitalize }}][{{ u | sum }}][{{ u | min }}][{{ u | last }}][{{ u | batch(2) | list }}][{{ u | wordcount }}][{{ u | safe }}][{{ u | e }}][{{ u | format }}][{{ u | trim }}]", {}),
    ("undef_int", "{{ u | int }}", {}),
    ("undef_float", "{{ u | float }}", {}),
    ("undef_indent", "{{ u | indent }}", {}),
    ("undef_attr_filter", "{{ u | attr('x') }}", {}),
    ("undef_abs", "{{ u | abs }}", {}),
    ("undef_round", "{{ u | round }}", {}),
    ("undef_compare", "{{ u == none }} {{ u != 1 }} {{ not u }} {{ u in ['a'] }} {{ u is none }} {{ u | default(none) is none }}", {}),
    ("undef_subscript", "{{ u[0] }}", {}),
    ("undef_dictsort", "{{ u | dictsort }}", {}),
    ("undef_method", "{{ u.strip() }}", {}),
    ("undef_in_if", "{% if u %}T{% elif u is not defined %}U{% endif %}", {}),
    ("none_filters", "[{{ n | trim }}][{{ n | upper }}][{{ n | string }}][{{ n | tojson }}][{{ n | default('x') }}][{{ n ~ 'x' }}][{{ n | replace('o', '0') }}][{{ n | int }}]", {"n": None}),
    ("none_join", "{{ n | join }}", {"n": None}),
    ("none_plus_str", "{{ n + 'x' }}", {"n": None}),
    ("none_compare", "{{ n < 1 }}", {"n": None}),
    ("num_mixed", "{{ '3' | int + 1 }} {{ [1] < [2] }} {{ (1, 2) < (1, 3) }} {{ 1.5 | int }} {{ -1.5 | round }} {{ 0.5 | round }} {{ 1 / 2 * 4 }}", {}),
    ("num_plus_str", "{{ 1 + '1' }}", {}),
    ("str_lt_int", "{{ 'a' < 1 }}", {}),
    ("str_first_last_empty", "{{ 'abc' | first }}{{ 'abc' | last }}[{{ '' | last }}]", {}),
    ("markup_trim", "{{ ('<b> ' | safe | trim) + '<i>' }}", {}),
    ("markup_in_macro", "{% macro m() %}<b>{% endmacro %}{{ m() + '<i>' }}", {}),
    ("markup_join", "{{ ['<a>', '<b>' | safe] | join(', ') }} {{ ('<x>' | safe).join(['<a>', '<b>']) }}", {}),
    ("markup_format", "{{ ('<%s>' | safe) % '<a>' }}", {}),
    ("markup_replace", "{{ ('<a>' | safe) | replace('a', '<') }} {{ ('<a>' | safe).replace('a', '<') }}", {}),
    ("markup_upper", "{{ ('<a>' | safe) | upper }}{{ ('<a>' | safe).upper() + '<' }}", {}),
    ("escape_types", "{{ 1 | e }} {{ none | e }} {{ [1, '<'] | e }}", {}),
    ("items_of_list", "{{ [1] | items | list }}", {}),
    ("string_methods_on_markup_eq", "{{ ('a' | safe) == 'a' }} {{ 'a' in ('abc' | safe) }}", {}),
    ("dict_get_none_key", "{{ d.get(none) }} {{ d[none] }}", {"d": {"a": 1}}),
    ("attr_on_int", "[{{ x.y }}][{{ x.y is defined }}]", {"x": 5}),
    ("list_of_dict_in", "{{ {'a': 1} in [{'a': 1}] }} {{ [1] in [[1]] }}", {}),
    ("nested_namespace_list", "{% set ns = namespace(items=[]) %}{% set ns.items = ns.items + ['a'] %}{% set ns.items = ns.items + ['b'] %}{{ ns.items | join }}", {}),
    ("tojson_in_string_concat", "{{ 'x=' + {'a': [1, 2]} | tojson }}", {}),
    ("tojson_nested_indent_empty", "{{ {'a': [], 'b': {}, 'c': [{}]} | tojson(indent=4) }}", {}),
    ("tojson_unicode_keys", "{{ {'é': '🙂'} | tojson }} {{ {'é': '🙂'} | tojson(ensure_ascii=true) }}", {}),
    ("tojson_float_values", "{{ [0.1, 1e21, 1e-5, -0.0, 2.0 ** 0.5] | tojson }}", {}),
    ("repr_escapes", "{{ ['a\\nb', \"it's\", 'q\"', '\\\\', '\\t'] }}", {}),
    # ---- scoping ----
    ("scope_load_before_store_in_loop", "{% set x = 'outer' %}{% for i in [1, 2] %}[{{ x }}{% set x = 'inner' ~ i %}{{ x }}]{% endfor %}{{ x }}", {}),
    ("scope_outer_loop_alias", "{% for a in [1, 2] %}{% set outer = loop %}{% for b in [1] %}{{ outer.index }}{{ loop.index }}{% endfor %}{% endfor %}", {}),
    ("scope_macro_set_local", "{% set x = 1 %}{% macro f() %}{% set x = 2 %}{{ x }}{% endmacro %}{{ f() }}{{ x }}", {}),
    ("scope_macro_namespace_mutation", "{% set ns = namespace(n=0) %}{% macro inc() %}{% set ns.n = ns.n + 1 %}{% endmacro %}{{ inc() }}{{ inc() }}{{ ns.n }}", {}),
    ("scope_macro_defined_later_var", "{% macro f() %}{{ late }}{% endmacro %}{% set late = 'L' %}{{ f() }}", {}),
    ("scope_set_in_if_in_loop", "{% for i in [1, 2, 3] %}{% if i == 2 %}{% set found = i %}{% endif %}{% endfor %}[{{ found }}]", {}),
    ("scope_loop_var_after_loop", "{% for i in [1, 2] %}{% endfor %}[{{ i }}]", {}),
    ("scope_with_loop_inside_macro", "{% macro m(xs) %}{% for x in xs %}{{ loop.index }}{{ x }}{% endfor %}{% endmacro %}{% for y in [1] %}{{ m(['a', 'b']) }}{{ loop.index }}{% endfor %}", {}),
    ("scope_shadow_builtin", "{% set range = 5 %}{{ range }}", {}),
    ("scope_messages_override", "{% set messages = messages[1:] %}{{ messages | length }}", {"messages": [1, 2, 3]}),
    ("scope_filter_block_sets", "{% filter upper %}{% set z = 'q' %}{{ z }}{% endfilter %}[{{ z }}]", {}),
    ("scope_set_block_inside_loop", "{% for i in [1, 2] %}{% set t %}<{{ i }}>{% endset %}{{ t }}{% endfor %}", {}),
    # ---- unknown filters/tests: compile errors except inside if blocks ----
    ("unknown_filter_top", "a\n{{ x | nosuch }}", {}),
    ("unknown_filter_in_for", "{% for i in [] %}\n{{ x | nosuch }}{% endfor %}", {}),
    ("unknown_filter_in_if_in_for", "{% for i in [1] %}{% if false %}{{ x | nosuch }}{% endif %}{% endfor %}ok", {}),
    ("unknown_filter_in_for_in_if", "{% if false %}{% for i in [] %}\n\n{{ x | nosuch }}{% endfor %}{% endif %}", {}),
    ("unknown_filter_in_macro", "{% macro f() %}{{ x | nosuch }}{% endmacro %}ok", {}),
    ("unknown_filter_in_if_test", "{% if x is defined and x | nosuch %}y{% endif %}ok", {}),
    ("unknown_filter_in_elif_else", "{% if true %}a{% elif x | nosuch %}b{% else %}{{ y | nosuch2 }}{% endif %}", {}),
    ("unknown_test_top", "{{ 1 is nosuchtest }}", {}),
    ("unknown_filter_in_set_block", "{% if true %}{% set v | nosuch %}x{% endset %}{% endif %}", {}),
    ("unknown_filter_in_for_iterable_in_if", "{% if false %}{% for i in x | nosuch %}{% endfor %}{% endif %}ok", {}),
    ("unknown_filter_in_filter_block_in_if", "{% if false %}{% filter nosuch %}x{% endfilter %}{% endif %}ok", {}),
    ("filter_truncate", "[{{ 'hello world foo bar' | truncate(9) }}][{{ 'hello world foo bar' | truncate(9, true) }}][{{ 'hello world foo bar' | truncate(11, false, '..', 0) }}][{{ 'short' | truncate(3, leeway=5) }}][{{ 'héllo wörld ünïcode' | truncate(8, leeway=0) }}]", {}),
    ("filter_slice", "{{ [1,2,3,4,5] | slice(2) | list }} {{ [1,2,3,4,5] | slice(3, 0) | list }} {{ [] | slice(2) | list }}", {}),
    ("filter_striptags", "[{{ '<p>Hello <b>world</b></p>  <!-- c --> &amp; &lt;x&gt;\n  more' | striptags }}]", {}),
    ("global_joiner", "{% set j = joiner(' | ') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}{% set k = joiner() %}{{ k() }}{{ k() }}", {}),
    ("strftime_long", "{{ strftime_now('%Y' * 200) | length }}", {}),
    ("str_format_specs", "[{{ '{:>8}|{:<6}|{:^7}|{:*^9}'.format('ab', 'cd', 'ef', 'gh') }}][{{ '{:05d}|{:+d}|{:,}|{:x}|{:#x}|{:08.3f}|{:.2%}|{:e}|{:.3g}'.format(42, 7, 1234567, 255, 255, 3.14159, 0.256, 12345.678, 0.000123456) }}][{{ '{0[a]}-{0[b][1]}-{1.k}'.format({'a': 1, 'b': [2, 3]}, {'k': 'v'}) }}][{{ '{!r}|{:.2}|{}'.format('q', 'xyz', 1.0) }}][{{ '{:=+6d}|{:^+7.1f}'.format(5, 2.25) }}]", {}),
    ("str_format_errors", "{{ '{:q}'.format(1) }}", {}),
    # ---- found by random expression fuzzing ----
    ("fuzz_dictsort_non_mapping", "{{ 'abc' | dictsort }}", {}),
    ("fuzz_reverse_non_iterable", "{{ n | reverse | list }}", {"n": None}),
    ("fuzz_percent_rules", "[{{ 'abc' % [1] }}][{{ 'abc' % {'a': 1} }}][{{ '%s' % [1, 2] }}][{{ '%s|%s' % (1, 'x') }}][{{ 'a' % u }}]", {}),
    ("fuzz_percent_leftover", "{{ 'abc' % 'x' }}", {}),
    ("fuzz_percent_leftover_int", "{{ 'abc' % 5 }}", {}),
    ("fuzz_indent_none", "{{ n | indent }}", {"n": None}),
    ("fuzz_indent_list", "{{ [1] | indent }}", {}),
    ("fuzz_lower_upper_tests", "{{ '10' is lower }}{{ '10' is upper }}{{ 7 is lower }}{{ ['x'] is lower }}{{ 'A1' is upper }}{{ '' is lower }}", {}),
    ("fuzz_round_int", "{{ 7 | round }} {{ -1 | round }} {{ true | round }} {{ 7 | round(1, 'floor') }} {{ 2.5 | round }}", {}),
    ("fuzz_wordcount", "{{ [] | wordcount }} {{ [' ', 'x'] | wordcount }} {{ 0.5 | wordcount }} {{ 'a_b c-d é' | wordcount }}", {}),
    ("fuzz_tuple_ops", "{{ (1, 2) * 2 }} {{ (1,) + (2,) }} {{ ((1, 2, 3))[1:] }}", {}),
    ("fuzz_list_plus_tuple", "{{ [1] + (1, 2) }}", {}),
    ("fuzz_unhashable_in_dict", "{{ {} in {'k': 1} }}", {}),
    ("fuzz_slice_none_variable", "{{ n[1:] }}", {"n": None}),
    ("fuzz_slice_dict_variable", "{{ d[1:] }}", {"d": {"a": 1}}),
    ("fuzz_undefined_tests_numeric", "{{ u is odd }}", {}),
    ("fuzz_tuple_methods", "{{ (1, 2).index(2) }} {{ (1, 2).append is defined }} {{ (1, 2).pop is defined }}", {}),
    ("fuzz_tuple_list_compare", "{{ (1, 2) < [1, 3] }}", {}),
    ("fuzz_undefined_sequence", "{{ u is sequence }} {{ u is iterable }} {{ ([1] | select) is sequence }}", {}),
    ("fuzz_float_parity_tests", "{{ 0.5 is divisibleby(2) }}{{ 3.0 is odd }}{{ 1.5 is odd }}{{ 4.0 is even }}{{ -3 is odd }}{{ 6 is divisibleby(1.5) }}", {}),
    ("fuzz_undefined_callable", "{{ u is callable }} {{ 1 is callable }}", {}),
    ("fuzz_tuple_in_dict", "{{ (1, 2) not in {} }}", {}),
    ("fuzz_pprint", "{{ {'k': 1, 'b': ('z',)} | pprint }} {{ u | pprint }} {{ ('a' | e) | pprint }}", {}),
    ("fuzz_markup_repr", "{{ ('a,b' | e).split(',') }} {{ [('<x>' | safe)] }} {{ ('' | e | center(3)).split(',') }}", {}),
    ("fuzz_unique_unhashable", "{{ [[1], [1]] | unique | list }}", {}),
    ("fuzz_float_mod_signs", "{{ 0 % -3.0 }} {{ -0.0 % 3 }} {{ 5.5 % -2 }} {{ -5.5 // 2 }} {{ 0.0 // -1 }} {{ 7 // -2.0 }}", {}),
    ("str_pad_methods", "[{{ 'ab'.ljust(5) }}][{{ 'ab'.rjust(5, '*') }}][{{ 'ab'.center(7, '-') }}][{{ 'abc'.center(6) }}][{{ '42'.zfill(5) }}][{{ '-42'.zfill(6) }}][{{ 'é'.ljust(3, '·') }}][{{ 'long'.rjust(2) }}]", {}),
    ("str_partition", "{{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'abc'.partition('=') }} {{ 'abc'.rpartition('=') }} {{ 'Hello World'.swapcase() }}", {}),
    ("filter_groupby", "{% for g in users | groupby('city') %}{{ g.grouper }}:{{ g.list | map(attribute='name') | join(',') }};{% endfor %}|{% for city, us in users | groupby('city') %}{{ city }}={{ us | length }} {% endfor %}|{% for g in users | groupby('city', case_sensitive=true) %}{{ g.grouper }}{% endfor %}|{% for g in users | groupby('age', default=0) %}{{ g.grouper }}{% endfor %}", {"users": [{"name": "a", "city": "Paris", "age": 3}, {"name": "b", "city": "rome"}, {"name": "c", "city": "paris", "age": 1}, {"name": "d", "city": "Rome", "age": 3}]}),
    # ---- misc ----
    ("raw_block", "{% raw %}{{ not evaluated }}{% endraw %}", {}),
    ("raw_block_ws", "a\n  {% raw %}\n  {{ x }}\n  {%- endraw %}\nb", {}),
    ("unicode_case", "{{ 'éàçñøß'.upper() }} {{ 'ÉÀÇÑØ'.lower() }} {{ 'αβγ'.upper() }} {{ 'ДЖ'.lower() }} {{ 'éa' | upper }} {{ 'émile zola' | title }} {{ 'émile'.capitalize() }}", {}),
    ("comment_inside", "a{# {{ x }} {% if %} #}b", {}),
    ("nested_data", "{% for m in messages %}{{ m['role'] }}:{{ m.content }}{% if not loop.last %}, {% endif %}{% endfor %}", {"messages": MSGS}),
    ("dict_literal_order", "{{ {'z': 1, 'a': 2} | tojson }} {% for k in {'z': 1, 'a': 2} %}{{ k }}{% endfor %}", {}),
    ("none_equals", "{{ none == none }} {{ n is none }} {{ n == 0 }}", {"n": None}),
    ("string_index_unicode", "{{ s[1] }}{{ s | length }}", {"s": "a\U0001F642b"}),
    ("int_key_dictsort_compare", "{% set d = {100: 'a', 5: 'b'} %}{% for k, v in d | dictsort %}{{ k }}{{ v }}{% endfor %}{{ d[5] }}", {}),
    ("bool_arith", "{{ true + 1 }} {{ [1, 2][true] }}", {}),
    ("float_formats", "{{ 1e16 }} {{ 1.5e-5 }} {{ 0.0001 }} {{ 123456.789 }} {{ -0.0 }} {{ 1/3 }} {{ 100.0 }}", {}),
    ("keyword_none_variants", "{{ None }} {{ True }} {{ False }} {{ none is none }}", {}),
]


def error_line(exc):
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return exc.lineno or 0
    line = 0
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == "<template>":
            line = frame.lineno
    return line


def main():
    out = []
    for name, template, context in CASES:
        case = {"name": name, "template": template, "context": context}
        try:
            # render a deep copy: templates may mutate lists (list.pop is allowed)
            case["output"] = ENV.from_string(template).render(**json.loads(json.dumps(context)))
        except Exception as e:  # noqa: BLE001
            case["error"] = "%s: %s" % (type(e).__name__, e)
            case["line"] = error_line(e)
        out.append(case)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "semantics_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%d cases -> %s" % (len(out), path))


if __name__ == "__main__":
    main()
