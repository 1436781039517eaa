#!/usr/bin/env bash
# The dashboard's browser tests need a Chromium: Debian's `chromium` package, driven by the
# Playwright pinned in the dev extra (no browser download). Installs it if absent; idempotent.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    echo "browser: $(chromium --version 2>/dev/null | head -1)"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium
echo "browser: $(chromium --version 2>/dev/null | head -1)"
