#!/bin/sh
# Gradient checks in CI with gradcli: copy this file and change the programs.
#
# Exit codes: 0 ok, 1 a check failed (a gradient, or an assert in the program), 2 bad input,
# 3 evaluation error. With `set -e` the script stops at the first command that fails, with
# its exit code, so the CI job fails and its log shows gradcli's message.
set -eu
GRADCLI=${GRADCLI:-gradcli}
PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)

# 1. An analytic gradient agrees with central finite differences (exit 1 if not).
$GRADCLI check 'sum(sin(x) * x + x ** 3)' -g 'x=randn(5)' --seed 0

# 2. A program file: its asserts hold (eval), and the gradients its backward() calls
#    accumulate agree with finite differences (check).
$GRADCLI eval -f "$HERE/seed3_quickstart.grad" > /dev/null
$GRADCLI check -f "$HERE/seed3_quickstart.grad" > /dev/null

# 3. A value in the JSON output, without jq: python reads the document...
$GRADCLI eval 'mean(x + temp + 2)' -l 'x=ones(2,2)' -g 'temp=zeros(2,2)' --json |
  $PYTHON -c 'import json, sys
doc = json.load(sys.stdin)
grad = {v["name"]: v["grad"] for v in doc["variables"]}["temp"]
sys.exit(0 if grad == [[0.25, 0.25], [0.25, 0.25]] else "unexpected temp.grad: %r" % (grad,))'

#    ... or plain grep on the one-line-per-variable JSON.
$GRADCLI check 'mean(w * w)' -g 'w=tensor([1., 2., 3.])' --json | grep -q '"passed": true'

# 4. An expected failure: a hook that doubles the gradient must make `check` exit 1.
status=0
$GRADCLI check 'h = x.register_hook(lambda g: g * 2)
sum(x * x)' -g 'x=ones(3)' > /dev/null 2>&1 || status=$?
if [ "$status" -ne 1 ]; then echo "expected exit 1 from a wrong gradient, got $status" >&2; exit 1; fi

# 5. Bad input is exit 2, not a crash.
status=0
$GRADCLI eval 'mean(x +' -l 'x=ones(2)' > /dev/null 2>&1 || status=$?
if [ "$status" -ne 2 ]; then echo "expected exit 2 from a syntax error, got $status" >&2; exit 1; fi

echo "gradcli checks passed"
