#!/bin/sh
# Before the package's files go (deb: prerm remove; rpm: %preun 0), not on upgrade: the units are
# disabled and, where systemd runs, stopped (Keelson withdraws its VIPs as it stops, and the root
# step installs that last file). An upgrade restarts nothing: docs/install.md says when to restart.
set -e

case "$1" in
  remove | 0) ;;
  *) exit 0 ;;
esac

if [ -d /run/systemd/system ]; then
  systemctl stop keelson.service || true
  systemctl stop keelson-apply.service || true
fi
# the enable links, also where systemd does not run (an image being built)
systemctl disable keelson.service keelson-apply.service >/dev/null 2>&1 || true
exit 0
