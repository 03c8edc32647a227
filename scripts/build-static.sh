#!/usr/bin/env bash
# Builds static rtgauge binaries for boards: x86_64, aarch64, armv7 (or "all"): the board build
# (docs/builds.md: no dashboard, no PNG images) in the `dist` profile (fat LTO, one codegen unit).
#   scripts/build-static.sh x86_64 aarch64 armv7      -> dist/rtgauge-<arch>
#   scripts/build-static.sh --lab x86_64              -> dist/rtgauge-lab-x86_64: the lab build
# x86_64: static glibc for the host target (no download). aarch64: musl (rustup target, linked
# by rust-lld; Debian's aarch64 gcc compiles the bundled SQLite). armv7: static glibc (rustup target + Debian's gcc-arm-linux-gnueabihf).
# Installs what is missing (rustup targets; Debian packages when run as root).
# Compiles in RTGAUGE_DIST_TARGET_DIR when set (CI builds these beside the host's tests, in a
# directory of their own), else where cargo would (CARGO_TARGET_DIR, or target/).
set -euo pipefail
cd "$(dirname "$0")/.."
build=(--no-default-features)
name=rtgauge
if [ "${1:-}" = --lab ]; then
  build=(); name=rtgauge-lab; shift
fi
[ $# -gt 0 ] || set -- x86_64
[ "$1" = all ] && set -- x86_64 aarch64 armv7
mkdir -p dist

need_pkg() { # command package
  command -v "$1" >/dev/null && return 0
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq "$2" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }
  else
    echo "build-static: '$1' is missing: install the Debian package $2" >&2; exit 2
  fi
}
need_target() {
  rustup target list --installed 2>/dev/null | grep -qx "$1" || rustup target add "$1"
}

# A RUSTFLAGS of the caller's would replace the flag lists below whole (cargo takes one source).
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
dir=${RTGAUGE_DIST_TARGET_DIR:-${CARGO_TARGET_DIR:-target}}
for arch in "$@"; do
  flags=()
  case $arch in
    x86_64)
      target=x86_64-unknown-linux-gnu
      flags=(--config "target.$target.rustflags=[\"-C\", \"target-feature=+crt-static\"]") ;;
    aarch64)
      target=aarch64-unknown-linux-musl
      need_target $target
      need_pkg aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu ;; # the bundled SQLite's C (see .cargo/config.toml)
    armv7)
      target=armv7-unknown-linux-gnueabihf
      need_target $target
      need_pkg arm-linux-gnueabihf-gcc gcc-arm-linux-gnueabihf ;;
    *) echo "build-static: unknown architecture '$arch': use x86_64, aarch64, armv7 or all" >&2; exit 2 ;;
  esac
  # Not position-independent: a static binary loaded at a fixed address has no relocations for
  # the loader to apply at start (a position-independent one rewrote a few hundred KiB of its own
  # pages before main, each then resident and private). Added to the rustflags .cargo/config.toml
  # gives each target (cargo joins the lists); --target keeps them away from build scripts and
  # proc macros.
  cargo build -p rtgauge --profile dist --locked "${build[@]}" --target $target --target-dir "$dir" "${flags[@]}" \
    --config "target.$target.rustflags=[\"-C\", \"relocation-model=static\"]"
  cp "$dir/$target/dist/rtgauge" "dist/$name-$arch"
  echo "dist/$name-$arch: $(stat -c %s "dist/$name-$arch") bytes, $(file -b "dist/$name-$arch" 2>/dev/null | cut -d, -f1-2 || true)"
done
