#!/usr/bin/env bash
# A release gate that needs three of four approvers, each answering through their own signed link.
#   ./scripts/serve            # in one terminal; note the dev key it prints
#   BRIDGE_KEY=owb_dev_... ./examples/governed_release.sh
set -euo pipefail
URL=${BRIDGE_URL:-http://127.0.0.1:8000}
KEY=${BRIDGE_KEY:?set BRIDGE_KEY to the dev key printed by openwop-bridge serve}
auth=(-H "Authorization: Bearer $KEY")
json=(-H "Content-Type: application/json")
py() { local code=$1; shift; python3 -c "import json,sys; d=json.load(sys.stdin); $code" "$@"; }

RUN=$(curl -sf "${auth[@]}" "${json[@]}" -d '{"workflowId": "demo-governed-release"}' "$URL/v1/runs" | py 'print(d["runId"])')
for _ in $(seq 50); do
  [ "$(curl -sf "${auth[@]}" "$URL/v1/runs/$RUN" | py 'print(d["status"])')" = waiting-approval ] && break
  sleep 0.1
done
echo "run $RUN waits for 3 of: alice bob carol dave (majority rejection stops it)"

# An operator (the dev key is admin) mints one link per approver; each link votes as its subject.
for who in alice bob carol; do
  LINK=$(curl -sf "${auth[@]}" "${json[@]}" -d "{\"subject\": \"$who\"}" \
         "$URL/v1/runs/$RUN/interrupts/release-gate/links" | py 'print(d["url"])')
  # ...sent to $who by mail or chat; $who opens it and approves, with no API key:
  VOTE=$(curl -sf "${json[@]}" -d '{"resumeValue": {"action": "accept"}}' "$LINK")
  echo "$VOTE" | py 'v = d.get("votes") or {}; print("  %-5s voted -> %s %s" % (sys.argv[1], d["status"], "(%s/%s accepted)" % (v["accept"], v["required"]) if v else ""))' "$who"
done

for _ in $(seq 50); do
  [ "$(curl -sf "${auth[@]}" "$URL/v1/runs/$RUN" | py 'print(d["status"])')" = completed ] && break
  sleep 0.1
done
curl -sf "${auth[@]}" "$URL/v1/runs/$RUN" \
  | py 'g=d["nodeStates"]["release-gate"]["outputs"]; print("status:", d["status"], "| decided by", g["decidedBy"], "|", g["quorum"])'
curl -sf "${auth[@]}" "$URL/v1/runs/$RUN/audit" | py 'print("audit:", ", ".join(e["principal"] + " " + e["action"] for e in d["entries"]))'
