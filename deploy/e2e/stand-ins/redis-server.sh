#!/bin/sh
# Debian builds redis-server with protected mode on by default; the official image's build turns
# that default off (no password, reached from other pods). Same default here: "no" is given before
# the caller's arguments, after a config file, so an explicit setting still wins.
case "${1:-}" in
  -v | --version | -h | --help | --test-memory) exec /usr/bin/redis-server "$@" ;;
  "" | -*) exec /usr/bin/redis-server --protected-mode no "$@" ;;
esac
conf="$1"
shift
exec /usr/bin/redis-server "$conf" --protected-mode no "$@"
