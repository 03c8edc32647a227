#!/usr/bin/env bash
# Fails when a crate only the lab needs reaches the board build (docs/builds.md): the dashboard's
# crate and the PNG renderer with its text and font stack. Reads the dependency tree of the
# board build (`--no-default-features`) of every target the boards use; builds nothing. Given
# board binaries (`scripts/board-deps.sh dist/rtgauge-x86_64`), checks what each offers and
# refuses too.
set -euo pipefail
cd "$(dirname "$0")/.."
lab_only='^(rtgauge-lab|resvg|usvg|tiny-skia|tiny-skia-path|fontdb|harfrust|skrifa|read-fonts|ttf-parser|rustybuzz|png|kurbo|roxmltree|svgtypes|imagesize|zune-jpeg|image-webp|gif) '
status=0
for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-musl armv7-unknown-linux-gnueabihf; do
  tree=$(cargo tree --locked --offline -p rtgauge --no-default-features -e normal --prefix none --target "$target" 2>&1) || {
    echo "board-deps: cargo tree failed for $target: $tree" >&2; exit 2; }
  leaked=$(printf '%s\n' "$tree" | grep -E "$lab_only" | sort -u || true)
  crates=$(printf '%s\n' "$tree" | sort -u | wc -l)
  if [ -n "$leaked" ]; then
    echo "board-deps: $target: crates only the lab needs are in the board build:"
    printf '  %s\n' "$leaked"
    status=1
  else
    echo "board-deps: $target: $crates crates in the board build, none of the lab's"
  fi
done
# The check itself: the lab build has them (else the pattern names nothing).
lab_tree=$(cargo tree --locked --offline -p rtgauge -e normal --prefix none)
printf '%s\n' "$lab_tree" | grep -E '^resvg ' >/dev/null || {
  echo "board-deps: the lab build has no resvg: the list of the lab's crates is out of date" >&2; exit 2; }
# With a board build's binary (scripts/build-static.sh makes them): what it lacks, its help does
# not offer, and asked for, it says in one line which build has it (exit 2).
for bin in "$@"; do
  version=$("$bin" --version)
  case $version in *"(board build"*) ;; *) echo "board-deps: $bin is not a board build: $version"; status=1; continue ;; esac
  for help in "--help" "report --help" "compare --help"; do
    # (the whole text first: a grep that stops at its first match would end rtgauge's writing)
    # shellcheck disable=SC2086
    text=$("$bin" $help)
    if printf '%s\n' "$text" | grep -E '(^|[[:space:]])(serve|--png|--font)([[:space:]]|$)' >/dev/null; then
      echo "board-deps: $bin $help offers what the board build lacks"; status=1
    fi
  done
  for asked in "serve" "serve --listen 127.0.0.1:0" "report last --png /nonexistent/png" "compare 1 2 --png /nonexistent/png"; do
    # shellcheck disable=SC2086
    err=$("$bin" $asked 2>&1 >/dev/null) && rc=0 || rc=$?
    lines=$(printf '%s\n' "$err" | grep -c . || true)
    if [ "$rc" != 2 ] || [ "$lines" != 1 ] || ! printf '%s' "$err" | grep -q "lab build"; then
      echo "board-deps: '$bin $asked': exit $rc, $lines line(s): $err"; status=1
    fi
  done
  [ -e /nonexistent/png ] && { echo "board-deps: --png made its directory in the board build"; status=1; }
  echo "board-deps: $bin: $version; no serve, no --png offered; each refused in one line naming the lab build"
done
exit $status
