#!/usr/bin/env bash
# The man pages and the shell completions against the real binaries' --help
# (docs/install.md): every command of `gpuwarden --help` has its section in
# gpuwarden(1) and is offered by the bash, zsh and fish completions; every
# flag of every command, and of gpuwardend, is in the man page and in the
# bash completion. Each shell that is installed loads its completion.
#   man_completions_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1
src=$2
man1=$src/packaging/man/gpuwarden.1
man8=$src/packaging/man/gpuwardend.8
bash_comp=$src/packaging/completions/gpuwarden.bash
zsh_comp=$src/packaging/completions/_gpuwarden
fish_comp=$src/packaging/completions/gpuwarden.fish
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The subcommands of a --help text, and the flags of its Options section.
subcommands() { awk '/^Subcommands:/ {on = 1; next} on && /^$/ {exit} on {print $1}'; }
flags() {
  awk '/^Options:/ {on = 1; next} on && /^[^ ]/ {exit} on && /^  -/ {print $1}' | tr ',' '\n' |
    grep -v -e '^--help$' -e '^-h$'
}
roff() { printf '%s' "${1//-/\\-}"; }

commands=$("$build/gpuwarden" --help | subcommands)
[ "$(echo "$commands" | wc -w)" -ge 10 ] || fail "gpuwarden --help lists only: $commands"
for flag in $("$build/gpuwarden" --help | flags); do
  [ "$flag" = --version ] && continue
  grep -qF "\\fB$(roff "$flag")\\fR" "$man1" || fail "gpuwarden.1 lacks global option $flag"
  grep -qw -- "$flag" "$bash_comp" || fail "bash completion lacks global option $flag"
done
for command in $commands; do
  grep -qF ".SS \"gpuwarden $command\"" "$man1" || fail "gpuwarden.1 has no section for $command"
  grep -qE "(^| )$command( |\"|$)" <(sed -n 's/^  local commands="\(.*\)"$/\1/p' "$bash_comp") ||
    fail "bash completion does not offer $command"
  grep -qF "'$command:" "$zsh_comp" || fail "zsh completion does not offer $command"
  grep -qF -- "-a $command " "$fish_comp" || fail "fish completion does not offer $command"
  # The flags, within the command's own section of the man page.
  section=$(awk -v c=".SS \"gpuwarden $command\"" '$0 == c {on = 1; next} on && /^\.S[SH] / {exit}
    on {print}' "$man1")
  for flag in $("$build/gpuwarden" "$command" --help | flags); do
    grep -qF "\\fB$(roff "$flag")\\fR" <<<"$section" ||
      fail "gpuwarden.1, section $command, lacks $flag"
    grep -E "^    $command\) opts=" "$bash_comp" | grep -qw -- "$flag" ||
      fail "bash completion of $command lacks $flag"
  done
done
for flag in $("$build/gpuwardend" --help | flags); do
  [ "$flag" = --version ] && continue
  grep -qF "\\fB$(roff "$flag")\\fR" "$man8" || fail "gpuwardend.8 lacks $flag"
done

# The pages render without a warning from groff.
if command -v man >/dev/null; then
  for page in "$man1" "$man8" "$src/packaging/man/gpuwarden-config.5"; do
    warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
    [ -z "$warnings" ] || fail "$page: $warnings"
  done
fi

# bash: sourced, it completes commands and a command's flags.
got=$(bash -c 'source "$1"; complete -p gpuwarden >/dev/null || exit 1
  COMP_WORDS=(gpuwarden sta); COMP_CWORD=1; _gpuwarden; echo "${COMPREPLY[*]}"
  COMP_WORDS=(gpuwarden clean --dry); COMP_CWORD=2; _gpuwarden; echo "${COMPREPLY[*]}"' _ "$bash_comp")
[ "$got" = $'status\n--dry-run' ] || fail "bash completion answered: $got"
# zsh and fish, where installed: the file parses, and fish completes from it.
if command -v zsh >/dev/null; then
  zsh -n "$zsh_comp" || fail "zsh cannot parse $zsh_comp"
else
  echo "zsh not installed: its completion checked by text only"
fi
if command -v fish >/dev/null; then
  fish -n "$fish_comp" || fail "fish cannot parse $fish_comp"
  got=$(fish -c "source $fish_comp; complete -C 'gpuwarden sta'" | cut -f1)
  [ "$got" = status ] || fail "fish completion answered: $got"
else
  echo "fish not installed: its completion checked by text only"
fi

[ "$failures" -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "man pages and completions cover $(echo "$commands" | wc -w) commands"
