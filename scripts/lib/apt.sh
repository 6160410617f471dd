# shellcheck shell=bash
# Sourced (not run) by scripts/setup.sh, and by its test (python/tests/test_setup_apt.py).
#
# apt_candidate PKG: true when apt can install PKG, that is when `apt-cache
# policy PKG` names a candidate version (Debian versions begin with a digit;
# "Candidate: (none)" means that no source offers it).
#
# Every "is this package reachable" question in setup.sh goes through here,
# because the obvious one-liner is wrong under `set -o pipefail`:
# `apt-cache policy PKG | grep -q Candidate` lets grep exit at the first
# match, apt-cache's next write then gets SIGPIPE, the pipeline exits 141,
# and a package that is there reads as missing (issue 34: XRT, Open MPI and
# Chromium were never installed on a fresh machine). So apt-cache's output is
# read whole into a variable and matched afterwards: no pipe, no reader that
# leaves early. An apt-cache that fails is no answer, and so "not reachable".
apt_candidate() {
  local policy candidate_re=$'(^|\n)[[:space:]]*Candidate:[[:space:]]+[0-9]'
  policy=$(apt-cache policy "$1" 2>/dev/null) || return 1
  [[ $policy =~ $candidate_re ]]
}
