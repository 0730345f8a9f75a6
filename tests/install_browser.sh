#!/bin/sh
# Installs headless Chromium and its WebDriver for the browser test (tests/test_report_browser.py).
# Does nothing when both are present; only where apt is available and we run as root (CI, containers):
# elsewhere the browser test skips itself and says why.
set -u
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install_browser: no chromium/chromedriver and no root apt-get; the browser test will be skipped" >&2
    exit 0
fi
echo "install_browser: apt-get install chromium chromium-driver (for the browser test)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium chromium-driver >/dev/null 2>&1; } \
    || echo "install_browser: apt-get failed; the browser test will be skipped" >&2
exit 0
