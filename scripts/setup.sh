#!/usr/bin/env bash
# Installs the Debian 12 packages gpuwarden needs to build and test, when any is missing.
# Safe to run again: it does nothing when everything is present. Also fetches the peer NVML
# clients the peer tests compare against (bench/fetch_peers.sh), without installing them.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libcli11-dev nlohmann-json3-dev libfmt-dev libpugixml-dev libsqlite3-dev libncurses-dev
  libtomlplusplus-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  zlib1g-dev psmisc procps tmux
  # The peer tests (tests/e2e/peers_e2e_test.cc): gpustat runs on python3 (nvtop and gpustat
  # themselves are fetched into bench/.peers below, not installed).
  python3
  # The fuzz targets (fuzz/, docs/reliability.md): clang with libFuzzer, ASan and UBSan.
  clang-14 libfuzzer-14-dev
  # A real Slurm for the cluster tests (tests/e2e/slurm_cluster.h): the controller, the node
  # daemon, the clients and munge, all started by the tests themselves.
  munge slurmctld slurmd slurm-client
  # Accounting for the QOS and association limit tests: slurmdbd on a private MariaDB that the
  # tests start (the server and client cores only: no system database, no service).
  slurmdbd mariadb-server-core mariadb-client-core
  # The metrics tests: a real Prometheus scrapes gpuwardend, promtool checks the
  # shipped rules (tests/e2e/metrics_e2e_test.cc). No service is enabled.
  prometheus
  # The web page's test: a real headless Chromium loads the page from gpuwardend and reads its
  # DOM over the DevTools pipe; libpng reads back its screenshots (tests/e2e/web_e2e_test.cc).
  chromium libpng-dev
  # The package (scripts/package.sh, docs/install.md): dpkg-deb and dpkg-shlibdeps; man to
  # render its pages, and the three shells whose completions tests/package/ loads.
  dpkg-dev man-db bash-completion zsh fish
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -ne 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages and not root; run: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The peer NVML clients that tests/e2e/peers_e2e_test.cc runs against the simulated library:
# Debian's nvtop and gpustat (with pynvml), downloaded into bench/.peers and unpacked there,
# never installed (pynvml's package would pull in NVIDIA's real library). A mirror that cannot
# be reached is said here and by the test, which then skips; any other failure leaves the
# clients absent and the test fails.
peers_status=0
"$(dirname "$0")/../bench/fetch_peers.sh" >/dev/null || peers_status=$?
case $peers_status in
  0) ;;
  2) echo "setup: WARNING: the Debian mirror could not be reached; nvtop and gpustat are not" \
          "fetched and the peer tests will skip (see bench/.peers/unreachable)" >&2 ;;
  *) echo "setup: fetching nvtop and gpustat failed (bench/fetch_peers.sh);" \
          "the peer tests will fail" >&2 ;;
esac
