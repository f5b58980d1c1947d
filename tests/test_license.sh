#!/bin/sh
# The licence is stated once and named everywhere it should be: LICENSE
# (MIT), meson's project(), python/pyproject.toml, the README, and the
# installed copy (share/doc/convtune/LICENSE, checked by test_install.sh).
#   tests/test_license.sh SOURCE_DIR
set -u
src=${1:?usage: test_license.sh SOURCE_DIR}
pass=0 fail=0
check() { if eval "$2"; then echo "ok   $1"; pass=$((pass + 1)); else echo "FAIL $1: $2"; fail=$((fail + 1)); fi; }

check "LICENSE exists" "[ -s '$src/LICENSE' ]"
check "LICENSE is the MIT licence" "head -n 1 '$src/LICENSE' | grep -q '^MIT License$' && grep -q 'Permission is hereby granted, free of charge' '$src/LICENSE'"
check "meson project() says MIT" "sed -n '/^project(/,/)/p' '$src/meson.build' | grep -q \"license : 'MIT'\""
check "pyproject.toml says MIT" "grep -q '^license = {text = \"MIT\"}' '$src/python/pyproject.toml'"
check "the README names the licence" "grep -q '^MIT (\`LICENSE\`)' '$src/README.md'"
check "the Python README names the licence" "grep -q 'MIT' '$src/python/README.md'"
echo "license: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
