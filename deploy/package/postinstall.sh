#!/bin/sh
# After the package's files are in place (deb: postinst configure; rpm: %post 1 or 2): the user
# and the directories as sysusers.d and tmpfiles.d say (on an upgrade this also gives keepalived's
# directory and file, which an earlier version left to keelson, back to root), the metrics token
# once, and systemd told about the units (daemon-reload). Nothing is enabled, started or
# restarted: docs/install.md says when to.
set -e

case "$1" in
  configure | 1 | 2) ;;
  *) exit 0 ;;
esac

# the package's /usr/lib/sysusers.d/keelson.conf (pre-install made the user already; idempotent)
if command -v systemd-sysusers >/dev/null 2>&1; then
  systemd-sysusers keelson.conf
fi
if command -v systemd-tmpfiles >/dev/null 2>&1; then
  systemd-tmpfiles --create keelson.conf
fi

# /metrics requires this bearer token ([server] metrics_token_file); made once, never replaced
token=/etc/keelson/metrics-token
if [ ! -e "$token" ]; then
  (
    umask 027
    head -c 32 /dev/urandom | base64 >"$token.new"
    chgrp keelson "$token.new"
    mv "$token.new" "$token"
  )
fi

if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
exit 0
