#!/bin/sh
# Debian builds redis-server with protected mode on by default; the official image's build turns
# that default off (no password, reached from other pods). Same default here: "no" is given before
# the caller's arguments, after a config file, so an explicit setting still wins.
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  conf="$1"
  shift
  exec /usr/bin/redis-server "$conf" --protected-mode no "$@"
fi
exec /usr/bin/redis-server --protected-mode no "$@"
