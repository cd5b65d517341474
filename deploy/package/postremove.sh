#!/bin/sh
# After the package's files went (deb: postrm remove or purge; rpm: %postun 0). Remove keeps
# /etc/keelson (dpkg and rpm keep the configuration files). Purge (deb only) removes what the
# package and Keelson made: the inventory (dpkg), the metrics token, the files the root step
# installed for keepalived and BIRD (with the outcome files it leaves beside them, and a temporary
# file a stopped one left), what the agent staged, and the directories when nothing of the
# operator's is left in them.
# User keelson stays, as Debian keeps system users: files it owns elsewhere keep a name.
set -e

case "$1" in
  purge)
    rm -f /etc/keelson/metrics-token
    rm -rf /etc/keelson/bird /run/keelson /run/keelson-daemons
    rm -f /etc/keepalived/conf.d/keelson.conf /etc/keepalived/conf.d/.keelson.conf.outcome \
      /etc/keepalived/conf.d/keelson.conf.*.tmp
    rmdir /etc/keepalived/conf.d 2>/dev/null || true
    if ! rmdir /etc/keelson 2>/dev/null && [ -d /etc/keelson ]; then
      echo "keelson: /etc/keelson kept: it holds files the package did not make:" \
        "$(ls -A /etc/keelson | tr '\n' ' ')" >&2
    fi
    ;;
  remove | 0) ;;
  *) exit 0 ;;
esac

if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
exit 0
