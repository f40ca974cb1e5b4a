#!/bin/sh
# As the official image's docker-entrypoint.sh: options alone (the base Deployment's args) or a
# config file mean redis-server. (It also drops root for the redis user; the manifests already run
# as uid 999.)
set -e
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
  set -- redis-server "$@"
fi
exec "$@"
