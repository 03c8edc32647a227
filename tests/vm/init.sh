#!/bin/busybox sh
# /init of the test guest: mount the kernel file systems, run every line of /commands.txt
# (NAME EXPECTED-EXIT COMMAND...) with $OUT as its output directory, record the exit codes,
# then send $OUT back over the serial console as base64 of a gzipped tar between markers,
# and power off. Kernel messages between the marked lines do no harm: the host takes only
# lines that carry the prefix.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
ip link set lo up
# The modules the harness put in for this kernel (tests/vm/run.sh, MODULES), in order.
for m in $(cat /lib/modules/$(uname -r)/load 2>/dev/null); do insmod /lib/modules/$(uname -r)/$m; done
OUT=/tmp/out
mkdir -p $OUT
export OUT
{
  echo "arch=$(uname -m)"
  echo "release=$(uname -r)"
  echo "version=$(uname -v)"
  echo "realtime=$(cat /sys/kernel/realtime 2>/dev/null || echo absent)"
  echo "cpus=$(cat /sys/devices/system/cpu/online)"
} > $OUT/guest-info
echo "@@RTGAUGE-GUEST-UP@@"
: > $OUT/exit-codes
while read -r name expect cmd; do
  case "$name" in ''|\#*) continue ;; esac
  echo "@@RTGAUGE-RUN@@ $name"
  sh -c "$cmd" > $OUT/$name.stdout 2> $OUT/$name.stderr
  rc=$?
  echo "$name $rc" >> $OUT/exit-codes
  echo "@@RTGAUGE-DONE@@ $name rc=$rc"
done < /commands.txt
echo "@@RTGAUGE-OUT-BEGIN@@"
tar -C $OUT -czf - . | base64 | sed 's/^/@@B64 /'
echo "@@RTGAUGE-OUT-END@@"
poweroff -f
