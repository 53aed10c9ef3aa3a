#!/bin/sh
# Set-up and entry points. On a fresh Debian machine (as root) it installs what is missing:
# Python's venv module and redis-server from Debian's packages; elsewhere it says what to install.
#
#   ./dev.sh run  [tessera up options]    environment, private Redis, API and one worker; prints the URL
#   ./dev.sh test [pytest options]        environment, then the whole CPU test suite
#   ./dev.sh gpu                          on a GPU host: GPU tests and benchmarks, short table last
#   ./dev.sh setup                        only the environment (.venv)
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
  stamp="$VENV/.installed"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e ".[dev]"
    touch "$stamp"
  fi
}

cmd=${1:-help}
[ $# -gt 0 ] && shift
case "$cmd" in
  run)   ensure_python; ensure_redis; ensure_env; exec "$VENV/bin/tessera" up "$@" ;;
  test)  ensure_python; ensure_redis; ensure_env; exec "$VENV/bin/python" -m pytest "$@" ;;
  setup) ensure_python; ensure_redis; ensure_env ;;
  gpu)   exec python3 -m bench.suite "$@" ;;
  *)     sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
