# Sourced by scripts/fuzz.sh and scripts/fuzz-campaign.sh: the fuzz targets and their seeds.
#
#   fuzz_targets ROOT          every target of ROOT/tests/fuzz (fuzz_<name>.cpp), by name
#   fuzz_seeds ROOT TARGET     the seed directories of TARGET, one per line: its corpus in
#                              tests/fuzz/corpus/ and the repository files that feed it (the same
#                              as tests/fuzz/CMakeLists.txt's NVTE_FUZZ_SEEDS_*, so no seed goes
#                              stale); only those that exist (a carried tree may lack fixtures)

fuzz_targets() {
  local f t
  for f in "$1"/tests/fuzz/fuzz_*.cpp; do
    t=$(basename "$f" .cpp)
    echo "${t#fuzz_}"
  done
}

fuzz_seeds() {
  local root=$1 dir
  local dirs=("tests/fuzz/corpus/$2")
  case $2 in
    rules_yaml) dirs+=(rules) ;;                       # every shipped rule file
    hf_config) dirs+=(tests/fixtures/hf) ;;            # every model family's config.json
    megatron) dirs+=(tests/fixtures/megatron) ;;       # every launch script and recipe
    te_log) dirs+=(tests/fixtures/te-logs) ;;          # every TE-generated debug log
    side_files) dirs+=(tests/explain) ;;               # every explain case file
    last_report) dirs+=(tests/fixtures/snapshots) ;;   # snapshots hold facts as reports do
  esac
  for dir in "${dirs[@]}"; do
    [[ -d $root/$dir ]] && echo "$root/$dir"
  done
  return 0
}
