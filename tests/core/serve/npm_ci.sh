#!/usr/bin/env bash
# The setup of the OpenAI-client test: the committed package.json + package-lock.json installed with
# `npm ci` into a folder of the build tree. npm_ci.sh <client-source-dir> <work-dir>
set -euo pipefail
src=$1 work=$2
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "node and npm are needed for the OpenAI client test (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
mkdir -p "$work"
cp "$src/package.json" "$src/package-lock.json" "$src/check_openai_client.mjs" "$work/"
cd "$work"
npm ci --no-audit --no-fund --loglevel=error
