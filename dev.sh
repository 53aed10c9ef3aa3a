#!/bin/sh
# Set-up and entry points. On a fresh Debian machine (as root) it installs what is missing:
# Python's venv module and redis-server from Debian's packages, npm (for three.js, which the page
# loads from node_modules) and, for the page's tests, chromium; elsewhere it says what to install.
#
#   ./dev.sh run  [tessera up options]    environment (what running needs), private Redis, API and
#                                         one worker; prints the URL
#   ./dev.sh test [pytest options]        environment with the dev extras, then the CPU test suite
#                                         (on every core, at most 4; TESSERA_TEST_PROCESSES=1: one)
#   ./dev.sh gpu                          on a GPU host: GPU tests and benchmarks, short table last
#                                         (offline: tests needing Chromium, SeaweedFS or
#                                         schemathesis are left out and named; CI runs them)
#   ./dev.sh setup                        only the environment (.venv with the dev extras, node_modules)
set -eu
cd "$(dirname "$0")"
VENV=${TESSERA_VENV:-.venv}

say() { printf 'dev.sh: %s\n' "$*" >&2; }

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing $* from Debian's packages"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 || {
      DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null; }
  else
    say "missing: $*. Install it (Debian: sudo apt-get install $*) and run me again."
    exit 1
  fi
}

ensure_python() {
  if ! command -v python3 >/dev/null 2>&1; then apt_install python3 python3-venv; fi
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    { say "Python 3.10 or newer is needed (found $(python3 --version))"; exit 1; }
  python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv
}

ensure_redis() {
  if [ -z "${TESSERA_REDIS_URL:-}${REDIS_URL:-}${TESSERA_TEST_REDIS_URL:-}" ] &&
     ! command -v redis-server >/dev/null 2>&1; then
    apt_install redis-server
  fi
}

ensure_env() {
  # $1: "" for what running needs, "dev" for the test tools too (pytest, playwright, SeaweedFS...)
  extras=${1:-}
  stamp="$VENV/.installed${extras:+-$extras}"
  if [ -n "$extras" ] || [ ! -f "$VENV/.installed-dev" ] || [ pyproject.toml -nt "$VENV/.installed-dev" ]; then
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
      [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
      say "installing Python packages into $VENV${extras:+ (with the $extras extras)}"
      "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
      "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".${extras:+[$extras]}"
      touch "$stamp"
    fi
  fi
}

ensure_node_deps() {
  # three.js for the browser page, Swagger UI for /docs and (a dev dependency) the Khronos glTF
  # validator the GLB tests run, pinned by package-lock.json; `npm ci` again when it changes (no
  # install scripts: all are plain files; one of swagger-ui-dist's
  # dependencies would otherwise report the install to its vendor)
  stamp=node_modules/.tessera-installed
  if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ package.json -nt "$stamp" ]; then
    command -v npm >/dev/null 2>&1 || apt_install nodejs npm
    say "installing the page's JavaScript dependencies (npm ci)"
    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null  # errors still show
    touch "$stamp"
  fi
}

ensure_chromium() {
  # the page's tests drive Debian's chromium through Playwright (no browser download)
  [ -x /usr/bin/chromium ] || apt_install chromium
}

cmd=${1:-help}
[ $# -gt 0 ] && shift
case "$cmd" in
  run)   ensure_python; ensure_redis; ensure_env; ensure_node_deps
         say "the tessera command is $VENV/bin/tessera (export PATH=\"\$PWD/$VENV/bin:\$PATH\" to type just tessera)"
         exec "$VENV/bin/tessera" up "$@" ;;
  test)  ensure_python; ensure_redis; ensure_env dev; ensure_node_deps; ensure_chromium
         # on every core, at most 4 (pytest-xdist; a file's tests stay on one process): the
         # suite waits on processes and Redis as much as it computes. TESSERA_TEST_PROCESSES=1
         # runs it in this process (for --pdb)
         n=${TESSERA_TEST_PROCESSES:-$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
         case $n in ''|*[!0-9]*) say "TESSERA_TEST_PROCESSES must be a number, not '$n'"; exit 2 ;; esac
         [ "$n" -gt 4 ] && n=4
         if [ "$n" -gt 1 ]; then
           exec "$VENV/bin/python" -m pytest -n "$n" --dist loadfile "$@"
         fi
         exec "$VENV/bin/python" -m pytest "$@" ;;
  setup) ensure_python; ensure_redis; ensure_env dev; ensure_node_deps ;;
  gpu)   exec python3 -m bench.suite "$@" ;;
  *)     sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
