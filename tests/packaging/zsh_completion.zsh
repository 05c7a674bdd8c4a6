# Drives an interactive zsh in a pseudo-terminal (zsh/zpty) to complete nvte-doctor command
# lines for real: compinit loads packaging/completions/_nvte-doctor from fpath, TAB is typed
# after each prefix, and a ZLE widget bound to ^X appends the resulting buffer to OUT.
# Usage: zsh -f zsh_completion.zsh COMPLETIONS_DIR BINARY_DIR OUT PREFIX...
zmodload zsh/zpty || exit 77
dir=$1 bindir=$2 out=$3; shift 3
drain() { local chunk; while zpty -r -t z chunk 2>/dev/null; do :; done }
# wait_for LINES: until OUT has LINES lines (the widget ran), at most ~10 s.
wait_for() {
  local i
  for i in {1..100}; do
    drain
    [[ -f $out && $(wc -l < $out) -ge $1 ]] && return 0
    sleep 0.1
  done
  return 1
}
zpty z zsh -f -i
# compinit's dump file beside OUT: `-d /dev/null` made compinit replace the device node with a
# regular file when the suite ran as root (every later `>/dev/null` on the host then wrote to it).
zpty -w z "PS1='> '; fpath=($dir \$fpath); autoload -Uz compinit; compinit -u -D -d ${out}.zcompdump; path=($bindir \$path)"
zpty -w z "dump() { print -r -- \"\$BUFFER\" >> $out; BUFFER=; }; zle -N dump; bindkey '^X' dump; print -r -- ready >> $out"
wait_for 1 || { print "zsh did not start"; exit 1 }
n=1
for prefix in "$@"; do
  zpty -w -n z "$prefix"$'\t'
  sleep 0.5; drain
  zpty -w -n z $'\x18'
  n=$((n + 1))
  wait_for $n || { print "no buffer after completing '$prefix'"; break }
done
zpty -w z 'exit'
drain
zpty -d z
