# Sourced by scripts/fuzz.sh, scripts/fuzz-campaign.sh and scripts/fuzz-rate.sh: the fuzz targets,
# their seeds, and the ASan options of a campaign.
#
#   fuzz_targets ROOT          every target of ROOT/tests/fuzz (fuzz_<name>.cpp), by name
#   fuzz_seeds ROOT TARGET     the seed directories of TARGET, one per line: its corpus in
#                              tests/fuzz/corpus/ and the repository files that feed it (the same
#                              as tests/fuzz/CMakeLists.txt's NVTE_FUZZ_SEEDS_*, so no seed goes
#                              stale); only those that exist (a carried tree may lack fixtures)
#   fuzz_asan_options          ASAN_OPTIONS of a campaign (and of its rate measurement)

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
    te_log_report) dirs+=(tests/fixtures/te-logs) ;;   # the same logs, through check's report
    side_files) dirs+=(tests/explain) ;;               # every explain case file
    last_report) dirs+=(tests/fixtures/snapshots) ;;   # snapshots hold facts as reports do
  esac
  for dir in "${dirs[@]}"; do
    [[ -d $root/$dir ]] && echo "$root/$dir"
  done
  return 0
}

# detect_leaks=0 as in scripts/fuzz.sh: the YAML and JSON libraries keep process-lifetime caches.
# quarantine_size_mb=16, malloc_context_size=4 (NVTE_FUZZ_ASAN_OPTIONS replaces them): a campaign
# is for volume, and ASan's default 256 MB quarantine kept rules_yaml at 640 MB resident and cost it
# a sixth of its executions on one core (docs/reliability.md). A use-after-free is still caught
# within the last 16 MB of frees; replay a finding with ASan's defaults.
fuzz_asan_options() {
  echo "detect_leaks=0:abort_on_error=1:${NVTE_FUZZ_ASAN_OPTIONS-quarantine_size_mb=16:malloc_context_size=4}"
}
