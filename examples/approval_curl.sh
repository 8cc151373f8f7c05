#!/usr/bin/env bash
# Pause a run on an approval and resolve it with curl.
#   ./scripts/serve            # in one terminal; note the dev key it prints
#   BRIDGE_KEY=owb_dev_... ./examples/approval_curl.sh
set -euo pipefail
URL=${BRIDGE_URL:-http://127.0.0.1:8000}
KEY=${BRIDGE_KEY:?set BRIDGE_KEY to the dev key printed by openwop-bridge serve}
auth=(-H "Authorization: Bearer $KEY")
json=(-H "Content-Type: application/json")
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval('d' + sys.argv[1]))" "$1"; }

echo "1. start a run of the demo expense approval"
RUN=$(curl -sf "${auth[@]}" "${json[@]}" -d '{"workflowId": "demo-expense-approval"}' "$URL/v1/runs" | field '["runId"]')
echo "   runId: $RUN"

echo "2. wait until it is suspended on the approval"
for _ in $(seq 50); do
  STATUS=$(curl -sf "${auth[@]}" "$URL/v1/runs/$RUN" | field '["status"]')
  [ "$STATUS" = waiting-approval ] && break
  sleep 0.1
done
curl -sf "${auth[@]}" "$URL/v1/runs/$RUN" | field '["interrupt"]["payload"]["data"]["title"]'
echo "   status: $STATUS"

echo "3. ask a question first (the approval stays pending)"
curl -sf "${auth[@]}" "${json[@]}" -d '{"resumeValue": {"action": "ask", "question": "Why four people?"}}' \
  "$URL/v1/runs/$RUN/interrupts/review" | field '["status"]'

echo "4. approve it"
curl -sf "${auth[@]}" "${json[@]}" -d '{"resumeValue": {"action": "accept"}}' \
  "$URL/v1/runs/$RUN/interrupts/review" | field '["status"]'

echo "5. the run completes"
for _ in $(seq 50); do
  STATUS=$(curl -sf "${auth[@]}" "$URL/v1/runs/$RUN" | field '["status"]')
  [ "$STATUS" = completed ] && break
  sleep 0.1
done
echo "   status: $STATUS"
curl -sf "${auth[@]}" -H "Accept: application/json" "$URL/v1/runs/$RUN/events" \
  | python3 -c "import json,sys; print('   events:', ' '.join(e['type'] for e in json.load(sys.stdin)['events']))"
