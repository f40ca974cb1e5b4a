"""Schemathesis hooks for .ci/schemathesis.sh.

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


@schemathesis.hook
def before_call(context, case, kwargs):
    query = case.query
    if not query or not isinstance(query.get("cursor"), str) or not CURSOR_SHAPE.match(query["cursor"]):
        return
    status = query.get("status", "")
    if isinstance(status, str) and status in CURSORS:
        query["cursor"] = CURSORS[status]
