# Sourced by scripts/fuzz_smoke.sh and scripts/fuzz_long.sh: the fuzz
# targets, their dictionaries and their seeds (docs/reliability.md).

# Every target, cheap ones first.
GW_FUZZ_TARGETS=(units history_point config model_config capacity_sacct slurm_text slurm_json nvrm
                 kernel_log_files scenario nvsmi_xml daemon_requests web_request)

# The dictionary of a target, or nothing.
gw_fuzz_dict() {
  case $1 in
    nvsmi_xml) echo fuzz/dict/nvsmi_xml.dict ;;
    nvrm | kernel_log_files) echo fuzz/dict/kernel_log.dict ;;
    daemon_requests) echo fuzz/dict/protocol.dict ;;
    web_request) echo fuzz/dict/web.dict ;;
  esac
}

# libFuzzer's -max_len for a target, or nothing (then the largest seed's size):
# what people type is short, records and config files are small, and 8 KiB of
# log holds every multi-line NVRM message (larger logs only slow the run).
gw_fuzz_max_len() {
  case $1 in
    units) echo 64 ;;
    history_point | config | web_request | model_config) echo 4096 ;;
    capacity_sacct) echo 1024 ;;  # Ten jobs' lines; every job adds spans to analyse and render.
    nvrm) echo 8192 ;;
  esac
}

# gw_fuzz_seeds TARGET DIR: copies the target's seeds into DIR (made anew):
# the inputs of the tests and the research captures in ../shared/research/samples
# (when that folder is there). fuzz/corpus/TARGET (hand-made seeds and every
# regression input) is passed to the fuzzer as a folder of its own.
gw_fuzz_seeds() {
  local target=$1 dir=$2 samples=../shared/research/samples
  rm -rf "$dir" && mkdir -p "$dir"
  local files=()
  shopt -s nullglob
  case $target in
    nvsmi_xml)
      files=(tests/corpus/*/dump.xml src/import/testdata/* "$samples"/*.xml "$samples"/0[45]_*.txt) ;;
    nvrm | kernel_log_files)
      files=(tests/corpus/*/kernel.log "$samples"/kernel-log_*.log) ;;
    scenario) files=(scenarios/*.json) ;;
    slurm_text) files=(src/slurm/testdata/*.txt "$samples"/slurm-22.05/*.txt) ;;
    slurm_json) files=(src/slurm/testdata/*.json "$samples"/slurm-22.05/*.json) ;;
    model_config) files=(catalog/*.toml) ;;
  esac
  shopt -u nullglob
  local f
  for f in "${files[@]}"; do
    # Flattened names: tests/corpus/<case>/dump.xml are all called dump.xml.
    cp "$f" "$dir/$(echo "$f" | tr '/' '_')"
  done
}
