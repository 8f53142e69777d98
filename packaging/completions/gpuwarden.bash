# bash completion for gpuwarden (installed as /usr/share/bash-completion/completions/gpuwarden).
# tests/package/man_completions_test.sh checks that it offers every command of gpuwarden --help.
_gpuwarden() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion || return
  else
    cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}
    words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
  fi
  local commands="status why health events clean kill reset cluster history usage capacity advise watch run queue jobs cancel hold release logs"
  local global="--sim --timeout --color --proc-root --dev-dir --socket --help --version"
  case $prev in
    --sim|--from|--kernel-log|--audit-log) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --proc-root|--dev-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
    --signal) COMPREPLY=($(compgen -W "TERM INT HUP QUIT USR1 USR2" -- "$cur")); return ;;
    --on-degraded) COMPREPLY=($(compgen -W "ignore drain" -- "$cur")); return ;;
    --explain) return ;;
  esac
  local command="" i
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      --) return ;;
      -*) ;;
      *) if [[ " $commands " == *" ${words[i]} "* ]]; then command=${words[i]}; break; fi ;;
    esac
  done
  local opts
  case $command in
    "") COMPREPLY=($(compgen -W "$commands $global" -- "$cur")); return ;;
    status) opts="--json -v --verbose --gpu --user --from --slurm-node --no-slurm --slurm-timeout --help" ;;
    why) opts="--now --window --from --kernel-log --no-kernel-log --since --need --nvlink --idle-for --min-age --json --slurm -v --verbose --no-history --explain --slurm-node --no-slurm --slurm-timeout --help" ;;
    health) opts="--now --window --from --kernel-log --no-kernel-log --since --json -v --verbose --slurm-drain --slurm-node --on-degraded --slurm-timeout --help" ;;
    events) opts="--kernel-log --since --json --help" ;;
    clean) opts="--pid --gpu --idle-for --min-age --min-vram --now --window --no-history --user --all-users --tree --no-tree --signal --grace --settle --protect --audit-log --dry-run -y --yes --json --help" ;;
    kill) opts="--user --all-users --tree --no-tree --signal --grace --settle --protect --audit-log --dry-run -y --yes --json --help" ;;
    reset) opts="--plan --json --now --window --from --kernel-log --help" ;;
    cluster) opts="--json --slurm-timeout --help" ;;
    history) opts="--since --gpu --csv --json --help" ;;
    usage) opts="--since --json --help" ;;
    advise) opts="--params --task --precision --batch --seq --optimizer --concurrency --checkpointing --attention --lora-rank --offline --json --help" ;;
    capacity) opts="--since --slurm --slurm-timeout --json --help" ;;
    watch) opts="-n --interval --readonly --history --signal --grace --settle --protect --audit-log --help" ;;
    run) opts="--gpus --vram --max-util --priority --window --after --nvlink --name --time-limit --preemptible --wait --detach --slurm --slurm-timeout --help" ;;
    queue) opts="--json --slurm --slurm-timeout --help" ;;
    jobs) opts="--json --all --mine --slurm --slurm-timeout --help" ;;
    cancel) opts="--slurm --slurm-timeout --help" ;;
    hold) opts="--help" ;;
    release) opts="--help" ;;
    logs) opts="--stderr -f --follow --help" ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts $global" -- "$cur"))
  elif [[ $command == kill ]]; then
    COMPREPLY=($(compgen -W "$(ps -e -o pid= 2>/dev/null)" -- "$cur"))
  elif [[ $command == run ]]; then
    COMPREPLY=($(compgen -c -- "$cur"))
  fi
}
complete -F _gpuwarden gpuwarden

_gpuwardend() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  case $prev in
    --sim|--kernel-log|--web-token-file|--socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --state-dir|--proc-root) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --vram-guard) COMPREPLY=($(compgen -W "stop warn" -- "$cur")); return ;;
  esac
  COMPREPLY=($(compgen -W "--version --socket --state-dir --sim --timeout --proc-root --poll-ms --margin --grace --vram-guard --max-running-per-user --max-gpus-per-user --listen --web-token-file --no-queue --kernel-log --no-kernel-log --metrics-process-min --metrics-max-processes --help" -- "$cur"))
}
complete -F _gpuwardend gpuwardend
