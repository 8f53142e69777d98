#!/usr/bin/env bash
# The Debian package, installed on this machine and removed again
# (docs/install.md): scripts/package.sh builds it from BUILD_DIR; dpkg -i
# installs it; `gpuwarden status` runs from PATH against the packaged
# simulated server; the simulated NVML library is outside the linker's
# search path; the man pages render; the bash completion loads; the units
# pass systemd-analyze verify; dpkg --purge leaves no file of it behind (no
# path of the system's folders is new after it that is one of the package's
# or named after it).
# Leaves the machine as it found it. Skipped (77) unless root with dpkg, and
# when gpuwarden is already installed here.
#   package_e2e_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)

if [ "$(id -u)" -ne 0 ] || ! command -v dpkg-deb >/dev/null; then
  echo "SKIP: needs root and dpkg"; exit 77
fi
if dpkg-query -W -f='${Status}' gpuwarden 2>/dev/null | grep -q installed ||
   [ -e /usr/bin/gpuwarden ] || [ -e /usr/lib/gpuwarden ]; then
  echo "SKIP: gpuwarden is installed on this machine already; left alone"; exit 77
fi

work=$(mktemp -d)
installed=0
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cleanup() {
  if [ "$installed" -eq 1 ]; then dpkg --purge gpuwarden >/dev/null 2>&1; fi
  rm -rf "$work"
}
trap cleanup EXIT

# What is on the system outside the places other tests and dpkg's own
# bookkeeping write to at the same time.
file_list() {
  find /usr /etc /lib /opt /var/lib /var/log -xdev \
    -path /var/lib/dpkg -prune -o -path /var/log/journal -prune -o -path /var/lib/apt -prune \
    -o -print 2>/dev/null | grep -v -e '^/var/log/dpkg\.log' -e '^/etc/ld\.so\.cache' | sort
}

deb=$("$src/scripts/package.sh" "$build" "$work" | tail -1)
[ -f "$deb" ] || { echo "FAIL: scripts/package.sh made no package"; exit 1; }
contents=$(dpkg-deb --contents "$deb" | awk '{print $6}')
for path in ./usr/bin/gpuwarden ./usr/bin/gpuwardend ./usr/lib/gpuwarden/gpuwarden-tools \
    ./usr/lib/gpuwarden/gpuwarden-supervise ./usr/lib/gpuwarden/sim/libnvidia-ml.so.1 \
    ./usr/lib/gpuwarden/gpuwarden-power ./etc/gpuwarden/slurm/resume ./etc/gpuwarden/slurm/suspend \
    ./usr/share/man/man1/gpuwarden.1.gz ./usr/share/man/man8/gpuwardend.8.gz \
    ./usr/share/man/man5/gpuwarden-config.5.gz ./usr/share/bash-completion/completions/gpuwarden \
    ./usr/share/zsh/vendor-completions/_gpuwarden \
    ./usr/share/fish/vendor_completions.d/gpuwarden.fish \
    ./lib/systemd/system/gpuwardend.service ./lib/systemd/system/gpuwardend-exporter.service \
    ./etc/gpuwarden/config.toml ./etc/default/gpuwardend \
    ./usr/share/gpuwarden/prometheus/gpuwarden.rules.yml \
    ./usr/share/gpuwarden/grafana/gpuwarden.json ./usr/share/gpuwarden/scenarios/demo.json \
    ./usr/share/gpuwarden/catalog/models.toml ./usr/share/gpuwarden/catalog/gpus.toml; do
  grep -qxF "$path" <<<"$contents" || fail "the package lacks $path"
done
conffiles=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)
[ "$conffiles" = $'/etc/default/gpuwardend\n/etc/gpuwarden/config.toml\n/etc/gpuwarden/slurm/resume\n/etc/gpuwarden/slurm/suspend' ] ||
  fail "conffiles: $conffiles"

before=$work/before.txt
file_list >"$before"
DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >"$work/dpkg.log" 2>&1 ||
  { cat "$work/dpkg.log"; fail "dpkg -i failed"; }
installed=1

# From PATH, in a clean environment: nothing of the build tree is used.
run() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
[ "$(run sh -c 'command -v gpuwarden')" = /usr/bin/gpuwarden ] || fail "gpuwarden is not on PATH"
out=$(run gpuwarden --sim /usr/share/gpuwarden/scenarios/demo.json status 2>&1)
status=$?
[ "$status" -eq 0 ] || fail "gpuwarden status exited $status: $out"
grep -q "SIMULATED server" <<<"$out" || fail "gpuwarden status: $out"
grep -q "^GPU 0 " <<<"$out" || fail "gpuwarden status shows no GPU 0: $out"
out=$(run gpuwarden --version 2>&1) || fail "gpuwarden --version: $out"
# advise finds the installed catalog from /usr/lib/gpuwarden.
out=$(run gpuwarden advise llama-3-8b --sim /usr/share/gpuwarden/scenarios/demo.json 2>&1) ||
  fail "gpuwarden advise: $out"
grep -q "h100-sxm" <<<"$out" || fail "gpuwarden advise shows no catalog GPU: $out"
grep -q "^  need: " <<<"$out" || fail "gpuwarden advise did not judge the server: $out"
out=$(run gpuwardend --help 2>&1) || fail "gpuwardend --help: $out"
# The installed config file is valid: kill reads it (and refuses PID 1, protected).
out=$(run gpuwarden kill --dry-run --sim /usr/share/gpuwarden/scenarios/demo.json 1 2>&1)
grep -qi "config" <<<"$out" && fail "the shipped config.toml is refused: $out"
# The simulator never stands in for the driver: not in the linker's cache.
if ldconfig -p | grep -q '/usr/lib/gpuwarden'; then
  fail "the simulated libnvidia-ml.so.1 is in the linker's search path"
fi

for page in "1 gpuwarden" "8 gpuwardend" "5 gpuwarden-config"; do
  # shellcheck disable=SC2086
  text=$(run env MANWIDTH=80 man $page 2>&1)
  grep -q "^NAME" <<<"$text" || fail "man $page does not render: $(head -3 <<<"$text")"
done
run env MANWIDTH=80 man 1 gpuwarden | grep -q "gpuwarden status" || fail "man gpuwarden: no status"

got=$(run bash -c 'source /usr/share/bash-completion/completions/gpuwarden &&
  complete -p gpuwarden && COMP_WORDS=(gpuwarden wh); COMP_CWORD=1; _gpuwarden;
  echo "${COMPREPLY[*]}"')
grep -q "^complete -F _gpuwarden gpuwarden$" <<<"$got" || fail "bash completion: $got"
grep -qx "why" <<<"$got" || fail "bash completion of 'wh': $got"
if [ -f /usr/share/bash-completion/bash_completion ]; then
  # bash-completion's own loader finds it where the package put it.
  got=$(run bash -c '. /usr/share/bash-completion/bash_completion;
    __load_completion gpuwarden && complete -p gpuwarden')
  grep -q "_gpuwarden" <<<"$got" || fail "bash-completion does not load it: $got"
fi

if command -v systemd-analyze >/dev/null; then
  out=$(systemd-analyze verify /lib/systemd/system/gpuwardend.service \
    /lib/systemd/system/gpuwardend-exporter.service 2>&1 |
    grep -v -e 'nvidia-persistenced.service' -e '^$')
  [ -z "$out" ] || fail "systemd-analyze verify: $out"
fi

# Every path the package installed, to look for after the purge.
dpkg -L gpuwarden | sort >"$work/package-paths.txt"
DEBIAN_FRONTEND=noninteractive dpkg --purge gpuwarden >>"$work/dpkg.log" 2>&1 ||
  { cat "$work/dpkg.log"; fail "dpkg --purge failed"; }
installed=0
after=$work/after.txt
file_list >"$after"
# Other tests run beside this one and may write in these folders: what
# counts is what is new and is the package's (one of its paths, or named
# after it), and the package's own bookkeeping.
new_paths=$(comm -13 "$before" "$after")
left=$( (comm -12 <(echo "$new_paths") "$work/package-paths.txt"; grep -i gpuwarden <<<"$new_paths") |
  sort -u | grep -v '^$')
[ -z "$left" ] || fail "the purge left files behind: $left"
gone=$(comm -23 "$before" "$after" | grep -v '^$')
[ -z "$gone" ] || echo "note: gone meanwhile (not by this test's package): $(head -5 <<<"$gone")"
[ "$(wc -l <"$work/package-paths.txt")" -gt 30 ] || fail "dpkg -L listed too little"
ls /var/lib/dpkg/info/gpuwarden.* >/dev/null 2>&1 && fail "dpkg still lists gpuwarden's files"

[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "package $(basename "$deb") installed, ran and purged cleanly"
