#!/bin/sh
# Regenerate the build system: run once after a fresh clone.
set -e
cd "$(dirname "$0")"
mkdir -p m4
autoreconf --install --force
