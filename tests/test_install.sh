#!/bin/sh
# Packaging: `meson install` into a staging folder, then the README's C
# example (section "Installing") built against it with
# `pkg-config --cflags --libs convtune` and run: without a driver it must
# say why; with the mock driver of the build (tests/mock_cuda.c) it must
# load a default variant.
#   tests/test_install.sh BUILD_DIR
set -u
build=$(cd "${1:?usage: tests/test_install.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

meson install -C "$build" --destdir "$tmp/stage" > "$tmp/install.log" 2>&1 \
  && ok install || { cat "$tmp/install.log"; bad install; }
pc=$(find "$tmp/stage" -name convtune.pc | head -n 1)
lib=$(find "$tmp/stage" -name 'libconvtune.so' | head -n 1)
hdr=$(find "$tmp/stage" -name convtune.h | head -n 1)
lic=$(find "$tmp/stage" -path '*/doc/convtune/LICENSE' | head -n 1)
[ -n "$lic" ] && cmp -s "$lic" "$src/LICENSE" && ok "installed: the licence ($lic)" || bad "installed licence"
[ -n "$pc" ] && [ -n "$lib" ] && [ -n "$hdr" ] && ok "installed: library, header, pkg-config file" \
  || bad "installed files (pc '$pc', library '$lib', header '$hdr')"

awk '/^## Installing/{s=1} s && /^```c$/{p=1; next} p && /^```$/{exit} p' \
  "$src/README.md" > "$tmp/example.c"
[ -s "$tmp/example.c" ] && ok "README example found" || bad "README example found"

export PKG_CONFIG_SYSROOT_DIR="$tmp/stage" PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --cflags --libs convtune)
if cc -Wall -Wextra -Werror -o "$tmp/example" "$tmp/example.c" $flags 2> "$tmp/cc.log"; then
  ok "README example builds with: $flags"
else
  cat "$tmp/cc.log"; bad "README example builds"
fi

libdir=$(dirname "$lib")
out=$(LD_LIBRARY_PATH="$libdir" CONVTUNE_LIBCUDA="$tmp/none/libcuda.so.1" "$tmp/example" 2>&1)
[ $? -eq 1 ] && printf '%s' "$out" | grep -q 'no CUDA driver' \
  && ok "example without a driver says why" || { echo "$out"; bad "example without a driver"; }
mock="$build/tests/libct_mockcuda.so"
if [ -e "$mock" ]; then
  out=$(LD_LIBRARY_PATH="$libdir" CONVTUNE_LIBCUDA="$mock" CONVTUNE_DB="$tmp/none.db" \
        "$tmp/example" 2>&1)
  [ $? -eq 0 ] && printf '%s' "$out" | grep -q 'default variant' \
    && ok "example with the mock driver: $out" || { echo "$out"; bad "example with the mock driver"; }
fi
echo "install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
