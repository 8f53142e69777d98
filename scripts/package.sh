#!/usr/bin/env bash
# Builds the Debian package of gpuwarden (docs/install.md):
#   scripts/package.sh [BUILD_DIR [OUT_DIR]]
# BUILD_DIR (default: build) is configured when it is not yet, and the
# installed programs are built in it; it must not be a sanitizer build. The
# package is `cmake --install --prefix /usr --strip` into a staging tree, with
# the man pages compressed, the conffiles listed and the dependencies that
# dpkg-shlibdeps finds, built by dpkg-deb (dpkg-dev, a Debian 12 package). It
# lands in OUT_DIR (default: BUILD_DIR/package) as gpuwarden_VERSION_ARCH.deb,
# whose path is the last line printed.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${2:-$build/package}
for tool in cmake dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "package: $tool is missing (scripts/setup.sh)" >&2; exit 1; }
done

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGW_BUILD_TESTS=OFF \
    -DGW_BUILD_BENCH=OFF >/dev/null
fi
if grep -q '^GW_\(SANITIZE\|FUZZ\):BOOL=ON' "$build/CMakeCache.txt"; then
  echo "package: $build is a sanitizer build (GW_SANITIZE or GW_FUZZ); package a plain one" >&2
  exit 1
fi
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" \
  --target gpuwarden gpuwardend gpuwarden-supervise gpuwarden-power gw_nvml_sim >/dev/null

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root

DESTDIR=$root cmake --install "$build" --prefix /usr --strip >/dev/null
# Debian's man pages are compressed (gzip -n: the same bytes at every build).
find "$root/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9n {} +

# The shared libraries the programs and the simulated library need, as
# package names and versions.
mkdir -p "$stage/debian"
printf 'Source: gpuwarden\n\nPackage: gpuwarden\nArchitecture: any\n' >"$stage/debian/control"
mapfile -t elves < <(find "$root" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c \
  'head -c 4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
shlibdeps_args=()
for elf in "${elves[@]}"; do shlibdeps_args+=("-e$elf"); done
depends=$(cd "$stage" && dpkg-shlibdeps -O "${shlibdeps_args[@]}" 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')

mkdir -p "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<CONTROL
Package: gpuwarden
Version: $version
Architecture: $arch
Maintainer: ${GW_MAINTAINER:-gpuwarden maintainers <root@localhost>}
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Recommends: bash-completion
Suggests: prometheus
Section: admin
Priority: optional
Description: who holds which GPU on a shared NVIDIA server, and why
 gpuwarden shows every GPU and every process that holds one (VRAM,
 utilisation, owner, container, systemd unit, Slurm job), says whether the
 server is busy, reclaimable, degraded or faulty and why, stops idle holders
 safely with an audit log, and queues jobs until their GPUs are free
 (gpuwardend). It includes a simulated NVML library for demos (gpuwarden
 --sim), kept out of the linker's search path.
CONTROL
(cd "$root" && find etc -type f | sed 's|^|/|' | sort) >"$root/DEBIAN/conffiles"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | sort |
  xargs -d '\n' md5sum) >"$root/DEBIAN/md5sums"

cat >"$root/DEBIAN/postinst" <<'SCRIPT'
#!/bin/sh
# The units are installed, not enabled (docs/install.md).
set -e
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
SCRIPT
cat >"$root/DEBIAN/prerm" <<'SCRIPT'
#!/bin/sh
# Stops the daemon; queued jobs that run keep running (KillMode=process).
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl disable --now gpuwardend.service gpuwardend-exporter.service >/dev/null 2>&1 || true
fi
SCRIPT
cat >"$root/DEBIAN/postrm" <<'SCRIPT'
#!/bin/sh
# purge: the queue's state and history go too; the audit log of signals sent
# (/var/log/gpuwarden) is kept, as a record (docs/install.md).
set -e
if [ "$1" = purge ]; then
  rm -rf /var/lib/gpuwarden /run/gpuwarden
fi
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
SCRIPT
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

mkdir -p "$out"
deb=$out/gpuwarden_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
