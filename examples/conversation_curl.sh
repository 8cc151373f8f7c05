#!/usr/bin/env bash
# Hold a three-turn conversation with a workflow, from curl.
#   ./scripts/serve            # in one terminal; note the dev key it prints
#   BRIDGE_KEY=owb_dev_... ./examples/conversation_curl.sh
set -euo pipefail
URL=${BRIDGE_URL:-http://127.0.0.1:8000}
KEY=${BRIDGE_KEY:?set BRIDGE_KEY to the dev key printed by openwop-bridge serve}
auth=(-H "Authorization: Bearer $KEY")
json=(-H "Content-Type: application/json")
py() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }

RUN=$(curl -sf "${auth[@]}" "${json[@]}" -d '{"workflowId": "demo-conversation"}' "$URL/v1/runs" | py 'print(d["runId"])')
echo "run $RUN"

turn() {  # wait for the next open exchange (or the end); print the agent's prompt
  for _ in $(seq 100); do
    SNAP=$(curl -sf "${auth[@]}" "$URL/v1/runs/$RUN")
    read -r ID STATUS < <(echo "$SNAP" | py 'print((d.get("interrupt") or {}).get("interruptId", "-"), d["status"])')
    if { [ "$ID" != - ] && [ "$ID" != "${LAST:-}" ]; } || [ "$STATUS" = completed ]; then break; fi
    sleep 0.1
  done
  LAST=$ID
  echo "$SNAP" | py 'i=d.get("interrupt"); print("agent:", i["payload"]["data"]["prompt"] if i else "(conversation over)")'
}

turn
for answer in "Lisbon, for a conference" "Three nights in May" "Two people, one room"; do
  echo "you:   $answer"
  curl -sf "${auth[@]}" "${json[@]}" -d "{\"resumeValue\": \"$answer\"}" "$URL/v1/runs/$RUN/interrupts/chat" >/dev/null
  turn
done

echo "transcript (the run's conversation channel):"
curl -sf "${auth[@]}" "$URL/v1/runs/$RUN" \
  | py 'print("\n".join("  %s %6s: %s" % (t["turnIndex"], t["role"], t["content"]) for t in d["channels"]["conversation"]))'
