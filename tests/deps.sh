#!/bin/sh
# deps.sh LIST...: make sure the Debian packages named in the LISTs are installed.
# Installs the missing ones with apt-get when root, with sudo when that works
# without a password, and otherwise stops with the exact command to run.
set -u
[ $# -gt 0 ] || { echo "usage: deps.sh LIST..." >&2; exit 2; }
pkgs=$(cat "$@" | grep -v '^#') || { echo "kvscope: cannot read $*" >&2; exit 1; }
missing=""
command -v dpkg-query >/dev/null 2>&1 || {
    echo "kvscope: not a Debian-like system (no dpkg-query); make sure these are installed:" \
        "$(echo $pkgs)" >&2
    exit 0
}
for pkg in $pkgs; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
        missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0

echo "kvscope: installing missing packages:$missing"
if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
    echo "kvscope: cannot install as this user; run:" >&2
    echo "  sudo apt-get install -y$missing" >&2
    exit 1
fi || { echo "kvscope: installing$missing failed; run: sudo apt-get install -y$missing" >&2; exit 1; }
