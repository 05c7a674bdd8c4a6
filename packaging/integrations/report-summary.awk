# report-summary.awk: the few fields of an nvte-doctor report JSON that health checks act on,
# as tab-separated lines, for nodes without jq or Python. A small recursive-descent JSON
# reader (POSIX awk; mawk, gawk and busybox awk) walks the whole document and keeps
#   status      TAB summary.status                 (OK | WARNING | CRITICAL | UNKNOWN)
#   generated   TAB generated_at                   (RFC 3339)
#   error       TAB finding id TAB finding title   (one line per error finding, report order)
#   warning     TAB finding id TAB finding title   (one line per warning finding)
# then the same split by what a finding is about, for the Slurm health check, which drains for
# the node's findings only and turns each workload's verdict into a node feature:
#   node_error / node_warning          TAB id TAB title               (findings of the node)
#   workload    TAB workload name TAB backend TAB verdict             (one line per workload)
#               the backend the workload's verdict promises (runs or at_risk), else "none";
#               verdict: runs | at_risk | fails | no_backend | unknown (a report from before
#               verdicts: the selected backend, and "runs" or "no_backend")
#   workload_fails TAB workload name TAB why                        (verdict fails or no_backend)
#   workload_error / workload_warning  TAB id TAB title TAB workload  (findings of a workload)
# summary.status is the node's own status (its findings); the workloads' are their verdicts.
# Exit 0 when the input is a report (an object with summary.status), 3 otherwise, with
# "invalid: REASON" on standard output. Tabs and newlines inside strings become spaces.
# Usage: awk -f report-summary.awk report.json

BEGIN { RS = "\001"; text = "" }
{ text = text $0 "\n" }
END {
  pos = 1; n = length(text); bad = ""; nfind = 0; nwork = 0
  skip_ws()
  if (pos > n) fail("empty input")
  parse_value("")
  skip_ws()
  if (bad == "" && pos <= n) fail("trailing data at offset " pos)
  if (bad != "") { print "invalid: " bad; exit 3 }
  if (status == "") { print "invalid: no summary.status (not an nvte-doctor report)"; exit 3 }
  print "status\t" status
  print "generated\t" generated
  for (i = 0; i < nfind; i++) if (sev[i] == "error") print "error\t" fid[i] "\t" ftitle[i]
  for (i = 0; i < nfind; i++) if (sev[i] == "warning") print "warning\t" fid[i] "\t" ftitle[i]
  for (i = 0; i < nfind; i++) if (fwork[i] == "" && sev[i] == "error") print "node_error\t" fid[i] "\t" ftitle[i]
  for (i = 0; i < nfind; i++) if (fwork[i] == "" && sev[i] == "warning") print "node_warning\t" fid[i] "\t" ftitle[i]
  for (i = 0; i < nwork; i++) {
    v = wverdict[i]
    if (v == "") v = (wsel[i] == "" || wsel[i] == "null") ? "no_backend" : "runs"
    b = wverdict[i] == "" ? wsel[i] : wbackend[i]
    if ((v != "runs" && v != "at_risk") || b == "" || b == "null") b = "none"
    print "workload\t" wname[i] "\t" b "\t" v
    if (v == "fails" || v == "no_backend") print "workload_fails\t" wname[i] "\t" (wbecause[i] == "" || wbecause[i] == "null" ? (v == "no_backend" ? "no attention backend" : "fails") : wbecause[i])
  }
  for (i = 0; i < nfind; i++) if (fwork[i] != "" && sev[i] == "error") print "workload_error\t" fid[i] "\t" ftitle[i] "\t" fwork[i]
  for (i = 0; i < nfind; i++) if (fwork[i] != "" && sev[i] == "warning") print "workload_warning\t" fid[i] "\t" ftitle[i] "\t" fwork[i]
  exit 0
}

function fail(why) { if (bad == "") bad = why; pos = n + 1 }

function skip_ws(  c) {
  while (pos <= n) {
    c = substr(text, pos, 1)
    if (c != " " && c != "\t" && c != "\n" && c != "\r") return
    pos++
  }
}

function keep(path, v,  i) {
  if (path == ".summary.status") status = v
  else if (path == ".generated_at") generated = v
  else if (path ~ /^\.findings\[[0-9]+\]\.(id|severity|title|workload)$/) {
    i = substr(path, 11) + 0
    if (i + 1 > nfind) nfind = i + 1
    if (path ~ /\.id$/) fid[i] = v
    else if (path ~ /\.severity$/) sev[i] = v
    else if (path ~ /\.workload$/) fwork[i] = v
    else ftitle[i] = v
  }
  else if (path ~ /^\.workloads\[[0-9]+\]\.(name|selected|verdict|backend|because)$/) {
    i = substr(path, 12) + 0
    if (i + 1 > nwork) nwork = i + 1
    if (path ~ /\.name$/) wname[i] = v
    else if (path ~ /\.selected$/) wsel[i] = v
    else if (path ~ /\.verdict$/) wverdict[i] = v
    else if (path ~ /\.backend$/) wbackend[i] = v
    else wbecause[i] = v
  }
}

function parse_value(path,  c, start) {
  if (bad != "") return
  skip_ws()
  c = substr(text, pos, 1)
  if (c == "{") parse_object(path)
  else if (c == "[") parse_array(path)
  else if (c == "\"") keep(path, parse_string())
  else {
    start = pos
    while (pos <= n && index(",]} \t\r\n", substr(text, pos, 1)) == 0) pos++
    if (pos == start) { fail("unexpected '" c "' at offset " pos); return }
    keep(path, substr(text, start, pos - start))
  }
}

function parse_object(path,  key, c) {
  pos++
  skip_ws()
  if (substr(text, pos, 1) == "}") { pos++; return }
  while (bad == "") {
    skip_ws()
    if (substr(text, pos, 1) != "\"") { fail("expected a key at offset " pos); return }
    key = parse_string()
    skip_ws()
    if (substr(text, pos, 1) != ":") { fail("expected ':' at offset " pos); return }
    pos++
    parse_value(path "." key)
    skip_ws()
    c = substr(text, pos, 1); pos++
    if (c == "}") return
    if (c != ",") { fail("expected ',' or '}' at offset " (pos - 1)); return }
  }
}

function parse_array(path,  i, c) {
  pos++
  skip_ws()
  if (substr(text, pos, 1) == "]") { pos++; return }
  for (i = 0; bad == ""; i++) {
    parse_value(path "[" i "]")
    skip_ws()
    c = substr(text, pos, 1); pos++
    if (c == "]") return
    if (c != ",") { fail("expected ',' or ']' at offset " (pos - 1)); return }
  }
}

# A string from the opening quote at pos; returns its value (escapes resolved, \uXXXX as '?').
function parse_string(  out, c, start) {
  pos++
  out = ""
  while (pos <= n) {
    start = pos
    while (pos <= n && (c = substr(text, pos, 1)) != "\"" && c != "\\") pos++
    out = out substr(text, start, pos - start)
    if (pos > n) break
    if (c == "\"") { pos++; gsub(/[\t\n\r]/, " ", out); return out }
    c = substr(text, pos + 1, 1)
    if (c == "n" || c == "t" || c == "r") out = out " "
    else if (c == "u") { out = out "?"; pos += 4 }
    else if (c == "b" || c == "f") out = out ""
    else out = out c
    pos += 2
  }
  fail("unterminated string")
  return out
}
