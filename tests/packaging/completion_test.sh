#!/bin/bash
# Shell completions (packaging/completions): the bash completion is sourced and driven through
# COMP_WORDS/COMP_CWORD for a few prefixes (subcommands, nested subcommands, options, option
# values in both spellings, rule ids, files, directories). The zsh completion, when zsh is
# installed, is loaded with _arguments/_describe stubbed to show the specs it builds.
# Usage: completion_test.sh BINARY SOURCE_DIR
set -uo pipefail
binary=$1 source_dir=$2
cd "$source_dir" || exit 1
failures=0

source packaging/completions/nvte-doctor.bash
complete -p nvte-doctor | grep -q -- "-F _nvte_doctor" || { echo "FAIL: complete -F not registered"; failures=1; }

# expect "WORDS..." EXPECTED...: every EXPECTED word is among the completions, and with "=" only them.
expect() {
  local words=$1; shift
  read -ra COMP_WORDS <<< "$words"
  [[ "$words" == *" " ]] && COMP_WORDS+=("")
  COMP_WORDS[0]=$binary
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _nvte_doctor
  local exact=0 word got=" ${COMPREPLY[*]} "
  [[ "$1" == "=" ]] && { exact=1; shift; }
  for word in "$@"; do
    [[ "$got" == *" $word "* ]] || { echo "FAIL '$words' -> [${COMPREPLY[*]}]: missing $word"; failures=$((failures + 1)); return; }
  done
  if ((exact)) && ((${#COMPREPLY[@]} != $#)); then
    echo "FAIL '$words' -> [${COMPREPLY[*]}]: want exactly $*"; failures=$((failures + 1)); return
  fi
  echo "ok   '$words' -> ${#COMPREPLY[@]} completions"
}

expect "nvte-doctor ch" = check
expect "nvte-doctor " check probe explain rules
expect "nvte-doctor rules " = list show lint
expect "nvte-doctor rules l" = list lint
expect "nvte-doctor check --fo" = --format
expect "nvte-doctor check --format " = text json
expect "nvte-doctor check --format = j" = json
expect "nvte-doctor --format json rules li" = list lint
expect "nvte-doctor explain --sw" = --sweep
expect "nvte-doctor explain --hf-config tests/fixtures/hf/deep" = tests/fixtures/hf/deepseek-v3
expect "nvte-doctor check --facts tests/fixtures/snapshots/h1" = tests/fixtures/snapshots/h100-node.json
expect "nvte-doctor -w tests/fixtures/hf/llama-3-8b/config.json explain --hf" = --hf-config
expect "nvte-doctor check --rules tests/fix" = tests/fixtures
expect "nvte-doctor check --set " =
first_id=$("$binary" rules list 2>/dev/null | awk 'NR == 1 {print $1}')
[[ -n "$first_id" ]] || { echo "FAIL: 'rules list' printed no rule ids"; failures=$((failures + 1)); }
expect "nvte-doctor rules show ${first_id:0:8}" "$first_id"
expect "nvte-doctor rules show attention-no-backend" attention-no-backend
expect "nvte-doctor rules lint tests/fixtures/snap" = tests/fixtures/snapshots

if command -v zsh >/dev/null; then
  out=$(BINARY="$binary" zsh -f -c '
    source packaging/completions/_nvte-doctor
    _arguments() { print -r -- "${(j:\n:)@}"; return 1 }
    _describe() { print -r -- "DESCRIBE ${(P)3}" }
    t() { words=("$BINARY" "$@"); CURRENT=${#words}; state=; _nvte-doctor }
    print "== top"; t ""
    print "== check"; t check --fo
    print "== show"; t rules show ""' 2>&1)
  zexpect() { if grep -qF -- "$1" <<< "$out"; then echo "ok   zsh: $1"; else echo "FAIL zsh: no '$1' in: $out" | head -c 2000; echo; failures=$((failures + 1)); fi; }
  zexpect "--format[Output format\: text or json]:value:(text json)"
  zexpect "--facts[Replay a saved facts snapshot (probe --format json) instead of probing]:file:_files"
  zexpect "--rules[Rules directory (repeatable; default\: the installed rules)]:directory:_files -/"
  zexpect "*::command:->sub"
  zexpect "1:rule id:($first_id "
  zsh -n packaging/completions/_nvte-doctor || { echo "FAIL: zsh -n"; failures=$((failures + 1)); }
else
  echo "zsh not installed: zsh completion not exercised"
fi

((failures == 0)) && echo "all completion cases passed"
((failures == 0))
