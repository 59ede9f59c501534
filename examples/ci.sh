#!/bin/sh
# Gradient checks in CI with gradcli: copy this file and change the programs.
# Exit codes: 0 ok, 1 a check failed, 2 bad input, 3 evaluation error. `set -e` stops at the first failure.
set -eu
GRADCLI=${GRADCLI:-gradcli}
HERE=$(cd "$(dirname "$0")" && pwd)

# 1. The analytic gradient of a formula agrees with finite differences.
$GRADCLI check 'sum(sin(x) * x + x ** 3)' -g 'x=randn(5)' --seed 0

# 2. A program's own assertions hold (assert ... fails with exit 1 and says which line).
$GRADCLI eval -f "$HERE/seed3_quickstart.grad" > /dev/null

# 3. A value in the JSON output, without jq: python reads the document.
$GRADCLI eval 'mean(x + temp + 2)' -l 'x=ones(2,2)' -g 'temp=zeros(2,2)' --json |
  python3 -c 'import json, sys; doc = json.load(sys.stdin); assert doc["variables"][1]["grad"] == [[0.25, 0.25], [0.25, 0.25]], doc'

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
