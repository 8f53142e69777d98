#!/usr/bin/env bash
# Fetches the peer NVML clients into bench/.peers/root, without installing them
# system-wide (python3-pynvml's package would pull in NVIDIA's real library):
# nvtop (Debian contrib, C, dlopens libnvidia-ml.so.1) and gpustat with pynvml
# and their Python dependencies (contrib and main). Both can then be pointed at
# gpuwarden's simulated library with LD_LIBRARY_PATH (and PYTHONPATH).
# scripts/setup.sh runs it for the peer tests (tests/e2e/peers_e2e_test.cc);
# the benchmarks use it too.
#
# Exit status: 0 when both clients are there; 2 when the mirror could not be
# reached (the reason on stderr and in bench/.peers/unreachable, which the
# peer tests name when they skip); 1 on any other failure.
set -euo pipefail
cd "$(dirname "$0")"
dest=.peers
have_all() { [ -x "$dest/root/usr/bin/gpustat" ] && [ -x "$dest/root/usr/bin/nvtop" ]; }
# Byte-compiled once here, so that each run of gpustat does not compile its
# modules again (a test environment may set PYTHONDONTWRITEBYTECODE).
compile() { python3 -m compileall -q "$dest/root/usr/lib/python3/dist-packages" >/dev/null || true; }
if have_all; then
  compile
  rm -f "$dest/unreachable"
  exit 0
fi
mkdir -p "$dest/lists/partial" "$dest/debs"
unreachable() {
  echo "fetch_peers: $*" | tee "$dest/unreachable" >&2
  exit 2
}
# The Debian mirror this machine already uses (its apt sources, one-line or
# deb822 form), with the release's main and contrib components: nvtop and
# gpustat live in contrib, which a system's sources often leave out.
mirror=$(
  { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }'
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
      awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }'
  } | grep -v -- '-security' | head -n 1 || true
)
[ -n "$mirror" ] || unreachable "no Debian mirror found in /etc/apt/sources.list{,.d}"
. /etc/os-release
cat > "$dest/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror ${VERSION_CODENAME:-bookworm} main contrib
SRC
apt_opts=(-o Dir::Etc::SourceList="$PWD/$dest/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists="$PWD/$dest/lists" -o Debug::NoLocking=1)
# apt-get update only warns when an index cannot be fetched: what tells is
# whether contrib's package list is there afterwards.
update_log=$(apt-get "${apt_opts[@]}" update -qq 2>&1 || true)
if ! ls "$dest"/lists/*_contrib_binary-*_Packages* >/dev/null 2>&1; then
  unreachable "cannot read the package lists of $mirror (main, contrib): $(echo "$update_log" |
    grep -m 1 -E '^(E|W):' || echo 'no index downloaded')"
fi
(cd "$dest/debs" && apt-get "${apt_opts[@]}" download nvtop gpustat python3-pynvml \
   python3-blessed python3-psutil python3-wcwidth python3-six 2>&1 | grep -v '^W:' || true)
for deb in "$dest"/debs/*.deb; do dpkg-deb -x "$deb" "$dest/root"; done
if ! have_all; then
  echo "fetch_peers: nvtop or gpustat missing from $dest/root after the download" >&2
  exit 1
fi
compile
rm -f "$dest/unreachable"
