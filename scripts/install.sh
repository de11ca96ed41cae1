#!/usr/bin/env bash
# Installs everything docflow needs on a fresh machine: Tesseract and Chromium (Debian packages,
# when we are root and they are missing; Chromium runs the console's browser tests), a virtual
# environment in .venv and the package with its dev tools.
# Safe to run again: it only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

if ! command -v tesseract >/dev/null 2>&1 || [ ! -f /usr/share/tesseract-ocr/5/tessdata/eng.traineddata ]; then
  if [ "$(id -u)" = "0" ]; then
    echo "installing tesseract-ocr (Debian)"
    # Wait (up to 10 minutes) for another package manager run to release its lock instead of
    # failing at once, as a fresh machine's automatic updates often hold it.
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq tesseract-ocr >/dev/null
  else
    echo "tesseract-ocr is missing: run 'sudo apt-get install -y tesseract-ocr'" >&2
    exit 1
  fi
fi

# pg_dump and pg_restore, for `docflow backup` on PostgreSQL (and its tests).
if ! command -v pg_dump >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    echo "installing postgresql-client (Debian)"
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq postgresql-client >/dev/null
  else
    echo "pg_dump is missing (docflow backup needs it): run 'sudo apt-get install -y postgresql-client'" >&2
    exit 1
  fi
fi

if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = "0" ]; then
    echo "installing chromium (Debian), for the console's browser tests"
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium >/dev/null
  else
    echo "chromium is missing (the console's browser tests need it): run 'sudo apt-get install -y chromium'" >&2
    exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
