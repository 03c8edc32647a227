#!/usr/bin/env bash
# Boots real kernels under qemu (software emulation, TCG) with an initramfs holding a static
# rtgauge, runs tests/vm/commands.txt inside, and checks what rtgauge reported
# (tests/vm_results.rs). Debian's PREEMPT_RT and standard kernels are fetched with
# `apt-get download` (no installation); their versions are discovered, not hard-coded.
#
#   tests/vm/run.sh [--arch x86|arm64|all] [--kernels rt,std] [--commands FILE] [--prove-failure]
#   tests/vm/run.sh --fetch-only [--arch ...] [--kernels ...]
#
# --fetch-only downloads and unpacks the kernels and busybox the guests need, and stops (CI does it
# in the background while it compiles).
#
# --prove-failure boots once with a command whose expected exit status is wrong, and once with a
# time-out too short to finish, and succeeds only if both fail the check (the harness can fail).  Needs root (apt-get). Latency figures
# under emulation are meaningless: this proves function, not performance.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VM=$ROOT/tests/vm
WORK=${RTGAUGE_VM_WORK:-$VM/work}
ARCHES=x86
KERNELS=rt,std
COMMANDS=$VM/commands.txt
PROVE_FAILURE=0
FETCH_ONLY=0
TIMEOUT=${RTGAUGE_VM_TIMEOUT:-300}
while [ $# -gt 0 ]; do
  case $1 in
    --arch) ARCHES=$2; shift 2 ;;
    --kernels) KERNELS=$2; shift 2 ;;
    --commands) COMMANDS=$(realpath "$2"); shift 2 ;;
    --prove-failure) PROVE_FAILURE=1; shift ;;
    --fetch-only) FETCH_ONLY=1; shift ;;
    *) echo "run.sh: unknown option '$1' (see the comment at the top of tests/vm/run.sh)" >&2; exit 2 ;;
  esac
done
[ "$ARCHES" = all ] && ARCHES=x86,arm64
mkdir -p "$WORK/debs" "$WORK/kern" "$WORK/out"
log() { echo "vm: $*" >&2; }

apt_ready=0
apt_update() { [ $apt_ready = 1 ] || { apt-get update -qq; apt_ready=1; }; }
host_pkgs() { # command package ...
  local missing=""
  while [ $# -gt 1 ]; do command -v "$1" >/dev/null || missing="$missing $2"; shift 2; done
  [ -z "$missing" ] || { apt_update; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null; }
}

# Debian arch name, qemu binary, console, rust target of each architecture.
deb_arch() { case $1 in x86) echo amd64 ;; arm64) echo arm64 ;; esac; }

fetch() { # package[:arch] -> path of the .deb in $WORK/debs
  local pkg=$1 name=${1%%:*} arch
  arch=${1#*:}; [ "$arch" = "$1" ] && arch=amd64
  local f; f=$(ls "$WORK"/debs/"${name}"_*_"${arch}".deb 2>/dev/null | head -1 || true)
  if [ -z "$f" ]; then
    (cd "$WORK/debs" && apt-get download -qq "$pkg" >/dev/null 2>&1) || { apt_update; (cd "$WORK/debs" && apt-get download -qq "$pkg" >/dev/null); }
    f=$(ls "$WORK"/debs/"${name}"_*_"${arch}".deb | head -1)
  fi
  echo "$f"
}

# The versioned image package a Debian kernel metapackage points to, e.g. linux-image-6.1.0-56-rt-amd64.
kernel_package() { # metapackage[:arch]
  apt-cache depends "$1" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^ :]*\)\(:[a-z0-9]*\)\{0,1\}$/\1/p' | head -1
}

kernel() { # arch flavor -> path of the kernel image
  local arch=$1 flavor=$2 da meta pkg dir
  da=$(deb_arch "$arch")
  case $flavor in rt) meta=linux-image-rt-$da ;; std) meta=linux-image-$da ;; esac
  [ "$da" = amd64 ] || meta=$meta:$da
  pkg=$(kernel_package "$meta")
  if [ -z "$pkg" ]; then apt_update; pkg=$(kernel_package "$meta"); fi
  [ -n "$pkg" ] || { log "cannot resolve $meta to a kernel package"; exit 1; }
  dir=$WORK/kern/$pkg
  if [ ! -d "$dir/boot" ]; then
    log "fetching $pkg"
    local deb; deb=$(fetch "$pkg$([ "$da" = amd64 ] || echo ":$da")")
    rm -rf "$dir.tmp"; dpkg-deb -x "$deb" "$dir.tmp"; mv "$dir.tmp" "$dir"
  fi
  ls "$dir"/boot/vmlinuz-* | head -1
}

busybox_for() { # arch -> path of a static busybox for it
  local da; da=$(deb_arch "$1")
  local dir=$WORK/busybox-$da
  if [ ! -x "$dir/bin/busybox" ]; then
    rm -rf "$dir"; dpkg-deb -x "$(fetch busybox-static:$da)" "$dir"
  fi
  echo "$dir/bin/busybox"
}

rtgauge_for() { # arch -> path of a static rtgauge for it
  case $1 in
    x86) "$ROOT/scripts/build-static.sh" x86_64 >&2; echo "$ROOT/dist/rtgauge-x86_64" ;;
    arm64) "$ROOT/scripts/build-static.sh" aarch64 >&2; echo "$ROOT/dist/rtgauge-aarch64" ;;
  esac
}

# Modules the guests load at boot (init.sh), in order: UIO and its generic PCI driver, for the
# event probe on qemu's "edu" device.
MODULES="drivers/uio/uio.ko drivers/uio/uio_pci_generic.ko"

initramfs() { # arch commands-file kernel-dir... -> path of the initramfs
  local arch=$1 cmds=$2 stage out kdir rel m
  shift 2
  stage=$(mktemp -d); out=$WORK/initrd-$arch.cpio.gz
  mkdir -p "$stage"/{bin,sbin,proc,sys,dev,tmp,usr/bin}
  cp "$(busybox_for "$arch")" "$stage/bin/busybox"
  cp "$(rtgauge_for "$arch")" "$stage/bin/rtgauge"
  cp "$VM/edu-events.sh" "$stage/bin/edu-events"; chmod +x "$stage/bin/edu-events"
  cp "$VM/pgrep.sh" "$stage/bin/pgrep"; chmod +x "$stage/bin/pgrep"
  for kdir in "$@"; do # each kernel's modules, under its release
    rel=$(basename "$(ls -d "$kdir"/lib/modules/*/ | head -1)")
    mkdir -p "$stage/lib/modules/$rel"
    for m in $MODULES; do
      cp "$kdir/lib/modules/$rel/kernel/$m" "$stage/lib/modules/$rel/"
      echo "$(basename "$m")" >> "$stage/lib/modules/$rel/load"
    done
  done
  cp "$VM/init.sh" "$stage/init"; chmod +x "$stage/init"
  cp "$cmds" "$stage/commands.txt"
  (cd "$stage" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) > "$out"
  rm -rf "$stage"
  echo "$out"
}

# noirqdebug: under TCG the kernel's spurious-interrupt detector has switched off the serial
# port's interrupt ("Disabling IRQ #4"), and the guest's output then stalls until the time-out.
boot() { # arch kernel initrd log
  local arch=$1 kernel=$2 initrd=$3 logf=$4
  # "edu": qemu's teaching PCI device, whose interrupt a register write raises (the UIO source).
  local common=(-smp 2 -m 512 -nographic -no-reboot -nodefaults -serial stdio -display none -kernel "$kernel" -initrd "$initrd"
                -device edu)
  local rc=0 sender=
  # arm64: the virt board's PL061 GPIO line 3 is the power button; "system_powerdown" on the QMP
  # socket raises it. tests/vm/edges.py sends the edges a guest command asks for on its console.
  if [ "$arch" = arm64 ]; then
    rm -f "$WORK/qmp.sock"
    common+=(-qmp "unix:$WORK/qmp.sock,server=on,wait=off")
    python3 "$VM/edges.py" "$logf" "$WORK/qmp.sock" "$logf.edges" & sender=$!
  fi
  case $arch in
    x86) timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -accel tcg -cpu max "${common[@]}" \
           -append "console=ttyS0 quiet loglevel=1 panic=-1 noirqdebug" < /dev/null > "$logf" 2>&1 || rc=$? ;;
    arm64) timeout -k 5 "$TIMEOUT" qemu-system-aarch64 -M virt -cpu cortex-a53 "${common[@]}" \
           -append "console=ttyAMA0 quiet loglevel=1 panic=-1 noirqdebug" < /dev/null > "$logf" 2>&1 || rc=$? ;;
  esac
  [ $rc = 124 ] || [ $rc = 137 ] && log "guest timed out after ${TIMEOUT}s (see $logf)"
  # The edge sender may have ended already (it exits once it sent what the guest asked for): a
  # failing kill must not end the harness (set -e) without a word, as it once did in CI.
  [ -z "$sender" ] || { kill "$sender" 2>/dev/null || true; wait "$sender" 2>/dev/null || true; }
  return 0
}

unpack() { # log dir: the guest's output directory, or failure when the guest did not finish
  local logf=$1 dir=$2
  rm -rf "$dir"; mkdir -p "$dir"
  if ! grep -q '^@@RTGAUGE-OUT-END@@' <(tr -d '\r' < "$logf"); then
    log "no complete output from the guest (hung, crashed or timed out): see $logf"
    tail -20 "$logf" >&2
    return 1
  fi
  tr -d '\r' < "$logf" | sed -n 's/^@@B64 //p' | base64 -d | tar -C "$dir" -xzf -
}

host_pkgs qemu-system-x86_64 qemu-system-x86 cpio cpio dpkg-deb dpkg file file python3 python3-minimal
case ,$ARCHES, in *,arm64,*)
  host_pkgs qemu-system-aarch64 qemu-system-arm
  dpkg --print-foreign-architectures | grep -qx arm64 || { dpkg --add-architecture arm64; apt_ready=0; apt_update; } ;;
esac

if [ $FETCH_ONLY = 1 ]; then
  for arch in ${ARCHES//,/ }; do
    busybox_for "$arch" >/dev/null
    for flavor in ${KERNELS//,/ }; do log "$arch-$flavor: $(kernel "$arch" "$flavor")"; done
  done
  exit 0
fi

cmds=$COMMANDS
if [ $PROVE_FAILURE = 1 ]; then
  cmds=$WORK/broken-commands.txt
  { echo "version 0 rtgauge --version"; echo "deliberately-broken 0 rtgauge run --interval 0"; } > "$cmds"
  ARCHES=x86; KERNELS=rt
fi

failed=0
dirs=()
for arch in ${ARCHES//,/ }; do
  kdirs=()
  for flavor in ${KERNELS//,/ }; do kimg=$(kernel "$arch" "$flavor"); kdirs+=("$(dirname "$(dirname "$kimg")")"); done
  initrd=$(initramfs "$arch" "$cmds" "${kdirs[@]}")
  for flavor in ${KERNELS//,/ }; do
    kimg=$(kernel "$arch" "$flavor")
    name=$arch-$flavor
    log "booting $name: $(basename "$kimg")"
    start=$(date +%s)
    boot "$arch" "$kimg" "$initrd" "$WORK/$name.log"
    dir=$WORK/out/$name
    # A guest that hangs (TCG has stalled on an emulated device, e.g. "Disabling IRQ #4") is
    # booted once more; the first attempt's last lines say where it stopped.
    if [ $PROVE_FAILURE = 0 ] && ! grep -q '^@@RTGAUGE-OUT-END@@' <(tr -d '\r' < "$WORK/$name.log"); then
      log "$name: no complete output; the guest's last lines, then one retry:"
      tr -d '\r' < "$WORK/$name.log" | grep -v '^@@B64 ' | tail -15 | sed 's/^/    | /' >&2
      last=$(tr -d '\r' < "$WORK/$name.log" | sed -n 's/^@@RTGAUGE-RUN@@ //p' | tail -1)
      log "$name: it was running '${last:-nothing yet: boot}'"
      mv "$WORK/$name.log" "$WORK/$name.first.log"
      boot "$arch" "$kimg" "$initrd" "$WORK/$name.log"
    fi
    if unpack "$WORK/$name.log" "$dir"; then
      { echo "flavor=$flavor"; echo "kernel_image=$(basename "$kimg")"; } > "$dir/host-info"
      [ ! -f "$WORK/$name.log.edges" ] || cp "$WORK/$name.log.edges" "$dir/edges-sent"
      cp "$cmds" "$dir/commands.txt"
      dirs+=("$dir")
      log "$name: guest finished in $(( $(date +%s) - start )) s"
    else
      failed=1
    fi
  done
done

check_rc=0
if [ ${#dirs[@]} -gt 0 ]; then
  (cd "$ROOT" && RTGAUGE_VM_RESULTS=$(IFS=:; echo "${dirs[*]}") cargo test --quiet --test vm_results -- --ignored --nocapture) || check_rc=$?
fi
[ $check_rc = 0 ] || failed=1

if [ $PROVE_FAILURE = 1 ]; then
  [ $failed = 1 ] || { log "FAIL: the harness accepted a deliberately broken command"; exit 1; }
  log "PASS: the harness failed on the deliberately broken command, as it must"
  # A guest that does not finish in time (here: 3 s, too short to boot) must fail the run too.
  TIMEOUT=3 boot x86 "$kimg" "$initrd" "$WORK/timeout.log"
  if unpack "$WORK/timeout.log" "$WORK/out/timeout" 2>/dev/null; then
    log "FAIL: the harness accepted a guest killed by its time-out"; exit 1
  fi
  log "PASS: a guest killed by its time-out fails the run, as it must"
  exit 0
fi
[ $failed = 0 ] && log "all guests passed" || log "FAILED"
exit $failed
