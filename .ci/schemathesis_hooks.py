"""Schemathesis hooks for .ci/schemathesis.sh.

Conditions: Schemathesis 4.32.5's coverage phase also sends, as schema-valid, If-Match and
If-None-Match values that miss the EtagCondition pattern (`0`, seen for DELETE, GET and PATCH);
the gateway refuses them with 400, as the document says it does. A positive case's condition that
misses the pattern is replaced with `*`, which it documents; negative cases are sent as generated.

A page cursor of the shape the OpenAPI document declares is still refused (400) unless the pet
service issued it: it carries a MAC that no generator can forge, and the document cannot say
"a value the server issued". Without this hook the schema-valid-request check (ST202) reports
every generated cursor of the right shape. A generated cursor of that shape is replaced with a
real one the pet service issued for the same status filter (see PETSTORE_CURSORS, set by the
script); malformed cursors, which the server must refuse, are sent as generated.
"""

import json
import os
import re

import schemathesis

CURSOR_SHAPE = re.compile(os.environ["PETSTORE_CURSOR_PATTERN"])
# Status filter ("" for none) -> a cursor the pet service issued for it.
CURSORS = json.loads(os.environ["PETSTORE_CURSORS"])
# The EtagCondition schema's pattern, as the served document gives it.
CONDITION_SHAPE = re.compile(os.environ["PETSTORE_CONDITION_PATTERN"])


def _positive(case):
    meta = getattr(case, "meta", None)
    generation = getattr(meta, "generation", None)
    mode = getattr(generation, "mode", None)
    return mode is not None and mode.is_positive


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers or {}
    if _positive(case):
        for name in list(headers):
            if name.lower() in ("if-match", "if-none-match") and isinstance(headers[name], str) and not CONDITION_SHAPE.match(headers[name].strip()):
                headers[name] = "*"
    query = case.query
    if not query or not isinstance(query.get("cursor"), str) or not CURSOR_SHAPE.match(query["cursor"]):
        return
    status = query.get("status", "")
    if isinstance(status, str) and status in CURSORS:
        query["cursor"] = CURSORS[status]
