#!/usr/bin/env bash
# Install the Debian packages the end-to-end telemetry tests start for real:
#   prometheus              -> prometheus, promtool
#   prometheus-alertmanager -> prometheus-alertmanager, amtool
#   jq                      -> jq (the shell-style Claude Code hook scripts, tests/engine)
# Idempotent: installs only what is missing, and refreshes the package lists at most once.
# Runs without a terminal (CI has no stdin); needs root, or sudo without a password.
# Exit status: 0 installed (or already there), 2 cannot install here (no apt-get, not root),
# anything else: the install failed.
set -euo pipefail

# package:command that proves it is installed
wanted=(
    prometheus:prometheus prometheus:promtool
    prometheus-alertmanager:prometheus-alertmanager prometheus-alertmanager:amtool
    jq:jq
)

missing=()
for entry in "${wanted[@]}"; do
    package=${entry%%:*} command=${entry#*:}
    if ! command -v "$command" >/dev/null 2>&1 && [[ ! " ${missing[*]} " =~ " $package " ]]; then
        missing+=("$package")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "install-debian-deps: already installed: prometheus prometheus-alertmanager jq"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-debian-deps: apt-get not found; install ${missing[*]} yourself" >&2
    exit 2
fi

as_root=()
if ((EUID != 0)); then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        as_root=(sudo -n)
    else
        echo "install-debian-deps: need root (or passwordless sudo) to install ${missing[*]}" >&2
        exit 2
    fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-debian-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update -qq
# On a systemd host the packages also start their own services (on ports 9090/9093); the
# tests never use those, they start their own instances on free loopback ports.
"${as_root[@]}" apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${missing[@]}" </dev/null
for entry in "${wanted[@]}"; do
    command -v "${entry#*:}" >/dev/null || {
        echo "install-debian-deps: ${entry#*:} still missing after install" >&2
        exit 1
    }
done
