#!/usr/bin/env bash
# Schemathesis against the served OpenAPI document: a pinned version in a venv of its own, a pet
# service (in-memory store) and a gateway started for the run, a bounded number of examples, every
# check, the stateful phase on. Any finding fails CI (schemathesis exits non-zero), and so does a
# run in which POST /v1/pets was never answered 201: a pattern the generator cannot handle would
# otherwise pass unnoticed with nothing generated.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
VENV="${SCHEMATHESIS_VENV:-${TMPDIR:-/tmp}/petstore-schemathesis-${SCHEMATHESIS_VERSION}}"
MAX_EXAMPLES="${SCHEMATHESIS_MAX_EXAMPLES:-100}"
# The demo keys file's enterprise key: limits (5000 a minute) that the run does not reach.
KEY=demo-enterprise-key-0000

if [[ ! -x "$VENV/bin/st" ]] || ! "$VENV/bin/st" --version | grep -F "$SCHEMATHESIS_VERSION" >/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
"$VENV/bin/st" --version

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
GATEWAY_PORT=$(free_port)
PET_SERVICE_PORT=$(free_port)
WORK=$(mktemp -d)
LOG="$WORK/services.log"

# npm start's launcher on the project's Node, run directly so that SIGTERM reaches it: both
# services, stopped in order. Requests without a valid key are limited per client IP, and every
# request here comes from 127.0.0.1: the run's unauthenticated requests (the `ignored_auth` check)
# must not turn into 429s.
PORT=$GATEWAY_PORT HOST=127.0.0.1 ADMIN_PORT=0 PET_SERVICE_PORT=$PET_SERVICE_PORT PET_SERVICE_ADMIN_PORT=0 \
  UNAUTHENTICATED_PER_MINUTE=100000 LOG_LEVEL=warn \
  node_modules/.bin/node --import tsx scripts/start-all.ts >"$LOG" 2>&1 &
SERVICES=$!
stop() {
  kill -TERM "$SERVICES" 2>/dev/null || true
  wait "$SERVICES" 2>/dev/null || true
  rm -rf "$WORK"
}
trap stop EXIT

BASE="http://127.0.0.1:$GATEWAY_PORT"
if ! curl --silent --fail --retry 60 --retry-delay 1 --retry-connrefused --output /dev/null "$BASE/v1/openapi.json"; then
  echo "gateway did not start:" >&2
  cat "$LOG" >&2
  exit 1
fi

# Real cursors, one per status filter, for .ci/schemathesis_hooks.py: two pets of each status make
# every first page of one pet end in a Link.
AUTH="Authorization: Bearer $KEY"
for status in available pending sold; do
  for _ in 1 2; do
    curl --silent --fail --output /dev/null -H "$AUTH" -H 'Content-Type: application/json' \
      --data "{\"name\":\"seed\",\"categoryId\":1,\"status\":\"$status\"}" "$BASE/v1/pets"
  done
done
cursors=()
for status in '' available pending sold; do
  link=$(curl --silent --fail --output /dev/null --dump-header - -H "$AUTH" "$BASE/v1/pets?limit=1${status:+&status=$status}" | tr -d '\r' | sed -n 's/^[Ll]ink: .*cursor=\([^>&]*\).*/\1/p')
  [[ -n "$link" ]] || { echo "no next-page cursor for status '$status'" >&2; exit 1; }
  cursors+=("\"$status\":\"$link\"")
done
export PETSTORE_CURSORS="{$(IFS=,; echo "${cursors[*]}")}"
export PETSTORE_CURSOR_PATTERN
PETSTORE_CURSOR_PATTERN=$(curl --silent --fail "$BASE/v1/openapi.json" | python3 -c 'import json, sys; print(next(p["schema"]["pattern"] for p in json.load(sys.stdin)["paths"]["/pets"]["get"]["parameters"] if p["name"] == "cursor"))')
export PETSTORE_CONDITION_PATTERN
PETSTORE_CONDITION_PATTERN=$(curl --silent --fail "$BASE/v1/openapi.json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["components"]["schemas"]["EtagCondition"]["pattern"])')
export SCHEMATHESIS_HOOKS="$PWD/.ci/schemathesis_hooks.py"

REPORT="$WORK/report"
"$VENV/bin/st" --config-file .ci/schemathesis.toml run "$BASE/v1/openapi.json" \
  --url "$BASE/v1" \
  --header "Authorization: Bearer $KEY" \
  --checks all \
  --phases examples,coverage,fuzzing,stateful \
  --max-examples "$MAX_EXAMPLES" \
  --seed 27 \
  --workers 1 \
  --no-color \
  --report har --report-dir "$REPORT"

# Schemathesis passes an operation it generated nothing for: check POST /v1/pets was exercised.
created=$(python3 - "$REPORT" <<'PY'
import json, pathlib, sys
count = 0
for har in pathlib.Path(sys.argv[1]).glob("har-*.json"):
    for entry in json.loads(har.read_text())["log"]["entries"]:
        request, response = entry["request"], entry["response"]
        if request["method"] == "POST" and request["url"].split("?")[0].endswith("/v1/pets") and response["status"] == 201:
            count += 1
print(count)
PY
)
echo "POST /v1/pets answered 201 to $created generated bodies"
# The stateful phase follows createPet's links to getPet, updatePet and deletePet: count what it sent.
python3 - "$REPORT" <<'PY'
import collections, json, pathlib, re, sys
counts = collections.Counter()
for har in pathlib.Path(sys.argv[1]).glob("har-*.json"):
    for entry in json.loads(har.read_text())["log"]["entries"]:
        request, response = entry["request"], entry["response"]
        path = re.sub(r"/v1/pets/[^/?]+", "/v1/pets/{petId}", request["url"].split("?")[0].split("/v1", 1)[-1] and "/v1" + request["url"].split("?")[0].split("/v1", 1)[-1])
        counts[f'{request["method"]} {path} {response["status"]}'] += 1
for key in sorted(counts):
    print(f"  {counts[key]:5d}  {key}")
PY
if ((created == 0)); then
  echo "schemathesis generated no valid POST /v1/pets body" >&2
  exit 1
fi
