#!/usr/bin/env bash
# The Makefile's Debian packages: which are missing, and installing them only when asked.
#
#   debian_packages.sh install PACKAGE...       install the missing ones (`make deps`: asked for)
#   debian_packages.sh require GOAL PACKAGE...  a build step's check: nothing when all are there;
#                                               otherwise ask on a terminal, or say the command
#                                               (`make GOAL`) and fail without a terminal
#
# LOADLAB_INSTALL=yes answers the question with yes (`make LOADLAB_INSTALL=yes test`); `make deps
# test` installs first, so the check finds nothing missing. apt-get runs as root, through sudo
# when there is one, never without a yes from the user or the `deps` goal.
set -euo pipefail

missing() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
  done
}

# apt_get PACKAGE...: apt-get as root, or through sudo; fails naming the command without either.
apt_get() {
  local as=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null; then
      as=(sudo)
    else
      echo "deps: not root and no sudo; as root, run:" >&2
      echo "  apt-get install -y $*" >&2
      exit 1
    fi
  fi
  echo "deps: installing $*"
  "${as[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as[@]}" apt-get install -y -qq "$@" >/dev/null
}

install() {
  local todo
  todo=$(missing "$@" | xargs)
  if [ -z "$todo" ]; then
    echo "deps: all packages present"
  else
    # shellcheck disable=SC2086 # one word per package
    apt_get $todo
  fi
}

require() {
  local goal=$1 todo answer
  shift
  todo=$(missing "$@" | xargs)
  [ -n "$todo" ] || return 0
  echo "loadlab needs Debian packages that are not installed: $todo"
  if [ "${LOADLAB_INSTALL:-}" = yes ]; then
    # shellcheck disable=SC2086
    apt_get $todo
    return
  fi
  if [ -t 0 ] && [ -t 1 ]; then
    read -r -p "Install them now with apt-get? [Y/n] " answer || answer=n
    case "$answer" in
      "" | y | Y | yes)
        # shellcheck disable=SC2086
        apt_get $todo
        return
        ;;
    esac
  fi
  echo "Nothing installed. To install them: make $goal (as root), or make $goal <goal>;" >&2
  echo "or yourself: apt-get install -y $todo" >&2
  exit 1
}

case "${1:-}" in
  install) shift && install "$@" ;;
  require) shift && require "$@" ;;
  *) echo "usage: $0 install PACKAGE... | require GOAL PACKAGE..." >&2 && exit 2 ;;
esac
