#!/usr/bin/env bash
# `npm run setup`: makes a Debian machine ready for `npm test`. PostgreSQL and Redis answer on 127.0.0.1
# (started when they do not), and the Debian packages whose programs and files the tests use are installed
# (`apt-get update` runs once, and only when one is missing). Prints one line per thing it finds or does;
# a second run changes nothing. Exits non-zero when a service does not answer or a package cannot be installed.
# .ci/run calls it before `npm ci`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Commands that need root go through sudo when the script runs as another user.
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

pg_ready() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_ready() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if pg_ready; then
  echo "PostgreSQL: answers on 127.0.0.1:5432"
else
  echo "PostgreSQL: not answering on 127.0.0.1:5432; starting it"
  as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  for _ in $(seq 1 30); do pg_ready && break; sleep 1; done
  pg_ready || { echo "PostgreSQL: still not answering on 127.0.0.1:5432" >&2; exit 1; }
  echo "PostgreSQL: started, answers on 127.0.0.1:5432"
fi

if redis_ready; then
  echo "Redis: answers on 127.0.0.1:6379"
else
  echo "Redis: not answering on 127.0.0.1:6379; starting it"
  as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  for _ in $(seq 1 30); do redis_ready && break; sleep 1; done
  redis_ready || { echo "Redis: still not answering on 127.0.0.1:6379" >&2; exit 1; }
  echo "Redis: started, answers on 127.0.0.1:6379"
fi

# The Debian packages the tests use: the package, what shows it is installed, and why the tests need it.
# A test whose tool is missing is skipped with a line naming the package (under CI=true it fails instead).
has_commands() { for c in "$@"; do command -v "$c" >/dev/null || return 1; done; }
has_chromium() { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; }
has_jxl_testdata() { [ -d /usr/share/libjxl-testdata/jxl/flower ]; }
PACKAGES=(
  "openssl|has_commands openssl|makes the throwaway certificates of the loopback HTTPS test servers"
  "chromium|has_chromium|runs the hub's browser tests (driven by playwright-core, which downloads no browser)"
  "libjxl-testdata|has_jxl_testdata|real-world JPEGs (restart markers, progressive, every chroma subsampling) for the decoder"
  "webp|has_commands cwebp dwebp|cwebp and dwebp write and read the WebP decoder's test files"
  "libjpeg-turbo-progs|has_commands cjpeg|cjpeg writes JPEGs with any chroma subsampling for the decoder's tests"
)

updated=""
for entry in "${PACKAGES[@]}"; do
  IFS='|' read -r package check why <<<"$entry"
  if $check; then
    echo "$package: installed"
    continue
  fi
  echo "$package: missing ($why); installing"
  if [ -z "$updated" ]; then
    as_root apt-get update -qq
    updated=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
  $check || { echo "$package: installed, but the tests still do not find it" >&2; exit 1; }
  echo "$package: installed now"
done
