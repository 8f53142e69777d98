#!/usr/bin/env bash
# Fetches the peer tools the benchmarks compare against into bench/.peers,
# without installing them system-wide: gpustat (Debian contrib, a Python NVML
# client that loads libnvidia-ml.so.1 through pynvml, so it can be pointed at
# gpuwarden's simulated library). Used by the benchmarks only, never by the build.
set -euo pipefail
cd "$(dirname "$0")"
dest=.peers
[ -x "$dest/root/usr/bin/gpustat" ] && exit 0
mkdir -p "$dest/lists/partial" "$dest/debs"
# The Debian mirror this machine already uses (its apt sources, one-line or
# deb822 form), with the release's main and contrib components: gpustat lives
# in contrib, which a system's sources often leave out.
mirror=$(
  { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }'
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
      awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }'
  } | grep -v -- '-security' | head -n 1 || true
)
if [ -z "$mirror" ]; then
  echo "fetch_peers: no Debian mirror found in /etc/apt/sources.list{,.d}" >&2
  exit 1
fi
. /etc/os-release
cat > "$dest/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror ${VERSION_CODENAME:-bookworm} main contrib
SRC
apt_opts=(-o Dir::Etc::SourceList="$PWD/$dest/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists="$PWD/$dest/lists" -o Debug::NoLocking=1)
apt-get "${apt_opts[@]}" update -qq
(cd "$dest/debs" && apt-get "${apt_opts[@]}" download gpustat python3-pynvml python3-blessed \
   python3-psutil python3-wcwidth python3-six 2>&1 | grep -v '^W:' || true)
for deb in "$dest"/debs/*.deb; do dpkg-deb -x "$deb" "$dest/root"; done
test -x "$dest/root/usr/bin/gpustat"
