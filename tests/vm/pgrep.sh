#!/bin/sh
# pgrep -f PATTERN for the test guest (Debian's busybox-static has no pgrep): prints the pids
# whose command line matches PATTERN (an extended regular expression) and exits 0, or exits 1
# when none does. Its own process and its ancestors (the shell running the check, whose command
# line holds the pattern too) are not counted.
[ "$1" = -f ] && shift
pattern=$1
skip=" "
p=$$
while [ -n "$p" ] && [ "$p" != 0 ]; do
  skip="$skip$p "
  p=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$p/status 2>/dev/null)
done
found=1
for d in /proc/[0-9]*; do
  pid=${d#/proc/}
  case "$skip" in *" $pid "*) continue ;; esac
  cmd=$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null) || continue
  [ -n "$cmd" ] || continue
  if printf '%s\n' "$cmd" | grep -qE -- "$pattern"; then
    echo "$pid"
    found=0
  fi
done
exit $found
