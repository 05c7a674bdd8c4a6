#!/bin/bash
# Shell completions (packaging/completions): the bash completion is sourced and driven through
# COMP_WORDS/COMP_CWORD for a few prefixes (subcommands, nested subcommands, options, option
# values in both spellings, rule ids, files, directories). The zsh completion, when zsh is
# installed, completes for real in an interactive zsh driven through a pseudo-terminal; the fish
# completion, when fish is installed, through `fish -c 'complete -C LINE'`.
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
expect "nvte-doctor rules " = list show lint update sign keygen
expect "nvte-doctor rules l" = list lint
expect "nvte-doctor check --fo" = --format
expect "nvte-doctor check --format " = text json prometheus nfd
expect "nvte-doctor check --format = j" = json
# Only the formats a command takes are offered (probe refuses prometheus and nfd).
expect "nvte-doctor probe --format " = text json
expect "nvte-doctor fleet --format " = text json
expect "nvte-doctor fleet --b" = --by
expect "nvte-doctor --format json rules li" = list lint
expect "nvte-doctor explain --sw" = --sweep
expect "nvte-doctor explain --hf-config tests/fixtures/hf/kim" = tests/fixtures/hf/kimi-k2
expect "nvte-doctor check --facts tests/fixtures/snapshots/h1" = tests/fixtures/snapshots/h100-node.json tests/fixtures/snapshots/h100-node-te.json
expect "nvte-doctor -w tests/fixtures/hf/llama-3-8b/config.json explain --hf" = --hf-config
expect "nvte-doctor check --rules tests/fix" = tests/fixtures
expect "nvte-doctor check --set " =
first_id=$("$binary" rules list 2>/dev/null | awk 'NR == 1 {print $1}')
[[ -n "$first_id" ]] || { echo "FAIL: 'rules list' printed no rule ids"; failures=$((failures + 1)); }
expect "nvte-doctor rules show ${first_id:0:8}" "$first_id"
expect "nvte-doctor rules show attention-no-backend" attention-no-backend
expect "nvte-doctor rules lint tests/fixtures/snap" = tests/fixtures/snapshots

if command -v zsh >/dev/null; then
  zsh -n packaging/completions/_nvte-doctor || { echo "FAIL: zsh -n"; failures=$((failures + 1)); }
  # Real completion in an interactive zsh (compinit, fpath) driven through a pseudo-terminal.
  bindir=$(mktemp -d); trap 'rm -rf "$bindir"' EXIT
  ln -s "$binary" "$bindir/nvte-doctor"
  prefixes=("nvte-doctor rules sh" "nvte-doctor pro" "nvte-doctor check --fo" "nvte-doctor check --format js"
            "nvte-doctor --format json rules lis" "nvte-doctor rules show nvrtc-missing-w"
            "nvte-doctor explain --hf-config tests/fixtures/hf/kim" "nvte-doctor rules lint tests/fixtures/snap")
  expected=("nvte-doctor rules show " "nvte-doctor probe " "nvte-doctor check --format " "nvte-doctor check --format json "
            "nvte-doctor --format json rules list " "nvte-doctor rules show nvrtc-missing-with-te "
            "nvte-doctor explain --hf-config tests/fixtures/hf/kimi-k2/" "nvte-doctor rules lint tests/fixtures/snapshots/")
  zsh -f "$source_dir/tests/packaging/zsh_completion.zsh" "$source_dir/packaging/completions" "$bindir" "$bindir/out" "${prefixes[@]}"
  mapfile -t got < <(tail -n +2 "$bindir/out" 2>/dev/null)
  for i in "${!prefixes[@]}"; do
    if [[ "${got[i]-}" == "${expected[i]}" ]]; then echo "ok   zsh: '${prefixes[i]}' -> '${expected[i]}'"
    else echo "FAIL zsh: '${prefixes[i]}' -> '${got[i]-<nothing>}', want '${expected[i]}'"; failures=$((failures + 1)); fi
  done
else
  echo "zsh not installed: zsh completion not exercised"
fi

if command -v fish >/dev/null; then
  fish -n packaging/completions/nvte-doctor.fish || { echo "FAIL: fish -n"; failures=$((failures + 1)); }
  # Real completion in fish (complete -C), the binary found on PATH as nvte-doctor.
  fishbin=$(mktemp -d)
  ln -s "$binary" "$fishbin/nvte-doctor"
  # fish_expect "LINE" EXPECTED...: every EXPECTED among the candidates; with "=" only them.
  fish_expect() {
    local line=$1; shift
    local exact=0
    [[ "$1" == "=" ]] && { exact=1; shift; }
    local got
    got=$(PATH="$fishbin:$PATH" fish --no-config -c "source packaging/completions/nvte-doctor.fish; complete -C '$line'" 2>&1 | cut -f1 | sort -u)
    local word
    for word in "$@"; do
      grep -qxF -- "$word" <<< "$got" || { echo "FAIL fish '$line' -> [$(tr '\n' ' ' <<< "$got")]: missing $word"; failures=$((failures + 1)); return; }
    done
    if ((exact)) && [[ "$(grep -c . <<< "$got")" != "$#" ]]; then
      echo "FAIL fish '$line' -> [$(tr '\n' ' ' <<< "$got")]: want exactly $*"; failures=$((failures + 1)); return
    fi
    echo "ok   fish '$line'"
  }
  fish_expect "nvte-doctor ch" = check
  fish_expect "nvte-doctor " check probe explain rules fleet
  fish_expect "nvte-doctor rules " = list show lint update sign keygen
  fish_expect "nvte-doctor check --fo" = --format
  fish_expect "nvte-doctor check --format " = text json prometheus nfd
  fish_expect "nvte-doctor probe --format " = text json
  fish_expect "nvte-doctor check --format=j" = --format=json
  fish_expect "nvte-doctor --format json rules li" = list lint
  fish_expect "nvte-doctor fleet --b" = --by
  fish_expect "nvte-doctor rules show attention-no-back" attention-no-backend
  fish_expect "nvte-doctor check --facts tests/fixtures/snapshots/h1" tests/fixtures/snapshots/h100-node.json
  fish_expect "nvte-doctor explain --hf-config tests/fixtures/hf/kim" = tests/fixtures/hf/kimi-k2/
  rm -rf "$fishbin"
else
  echo "fish not installed: fish completion not exercised"
fi

# The zsh driver once gave compinit `-d /dev/null`, and as root that replaced the device node.
[[ -c /dev/null ]] || { echo "FAIL: /dev/null is no longer a character device"; failures=$((failures + 1)); }

((failures == 0)) && echo "all completion cases passed"
((failures == 0))
