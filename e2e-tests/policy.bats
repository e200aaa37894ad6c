#!/usr/bin/env bats
# The bundled requests through kwctl (`make e2e-tests`, for users with kwctl, bats and jq).
# The same decisions are asserted on the module without kwctl by e2e-tests/tests/module.rs.
#
# kwctl writes its verdict (the AdmissionResponse) alone on stdout, and its log lines and any
# refusal on stderr: every test runs it with `run --separate-stderr`, so `$output` is the JSON
# and `$stderr` the rest. e2e-tests/tests/kwctl_stand_in.rs runs this suite against a stand-in
# that writes the same streams.

bats_require_minimum_version 1.5.0

setup() {
  cd "$BATS_TEST_DIRNAME/.."
  POLICY=${RESTAGE_GATE_ANNOTATED_WASM:-annotated-policy.wasm}
}

# kwctl run ($KWCTL, as `make e2e-tests KWCTL=...` passes it) on a bundled request; extra
# arguments go to kwctl.
evaluate() {
  local request=$1
  shift
  "${KWCTL:-kwctl}" run --request-path "e2e-tests/requests/$request" "$@" "$POLICY"
}

patch_ops() {
  jq -r '.patch // empty' | base64 -d
}

@test "a first bind is held: OnDelete, the label and the annotations" {
  run --separate-stderr evaluate 01-bind.json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.allowed == true and .auditAnnotations.decision == "held"'
  echo "$output" | patch_ops | jq -e 'any(.[]; .path == "/spec/updateStrategy/type" and .value == "OnDelete")'
  echo "$output" | patch_ops | jq -e 'any(.[]; .path == "/metadata/labels/restage-gate.io~1held" and .value == "true")'
  echo "$output" | patch_ops | jq -e '[.[] | select(.path | startswith("/spec/template"))] | length == 0'
}

@test "a second bind while held refreshes pending only" {
  run --separate-stderr evaluate 02-second-bind-while-held.json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.allowed == true and .auditAnnotations.decision == "held"'
  echo "$output" | patch_ops | jq -e 'length == 1 and .[0].path == "/metadata/annotations/restage-gate.io~1pending"'
}

@test "Korifi's runner patch while held gets the hold re-applied" {
  run --separate-stderr evaluate 03-runner-patch-while-held.json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.allowed == true and .auditAnnotations.decision == "held"'
  echo "$output" | patch_ops | jq -e 'any(.[]; .path == "/metadata/annotations/restage-gate.io~1held-since" and .value == "2026-12-01T09:00:00Z")'
}

@test "a rolling deploy releases the hold" {
  run --separate-stderr evaluate 04-rolling-deploy-releases-hold.json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.allowed == true and .auditAnnotations.decision == "released"'
}

@test "a scale is accepted unchanged" {
  run --separate-stderr evaluate 05-scale.json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.allowed == true and .patch == null and .warnings == null'
}

@test "a DaemonSet bind is held with OnDelete" {
  run --separate-stderr evaluate 06-daemonset-bind.json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.allowed == true and .auditAnnotations.decision == "held"'
  echo "$output" | patch_ops | jq -e 'any(.[]; .path == "/spec/updateStrategy/type" and .value == "OnDelete")'
}

@test "a Deployment bind is held paused" {
  run --separate-stderr evaluate 07-deployment-bind.json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.allowed == true and .auditAnnotations.decision == "held"'
  echo "$output" | patch_ops | jq -e 'any(.[]; .path == "/spec/paused" and .value == true)'
}

@test "a Deployment unbind rolls now, with a warning saying why" {
  run --separate-stderr evaluate 08-deployment-unbind.json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.allowed == true and .patch == null and .auditAnnotations.decision == "rolling"'
  echo "$output" | jq -e 'any(.warnings[]; contains("rolls now"))'
}

@test "kubectl rollout resume releases a held Deployment" {
  run --separate-stderr evaluate 09-deployment-rollout-resume.json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.allowed == true and .auditAnnotations.decision == "released"'
}

@test "reject mode refuses a bind and says how to apply it" {
  run --separate-stderr evaluate 01-bind.json --settings-json '{"mode":"reject"}'
  [ "$status" -eq 0 ]
  echo "$output" | jq -e '.allowed == false and (.status.message | contains("kubectl rollout restart"))'
}

@test "invalid settings are refused with the field and the value" {
  run --separate-stderr evaluate 01-bind.json --settings-json '{"mode":"later"}'
  [ "$status" -ne 0 ]
  [[ "$stderr" == *'settings.mode: "later" is not a mode'* ]]
}
