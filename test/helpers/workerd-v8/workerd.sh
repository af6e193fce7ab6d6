#!/bin/bash
# workerd with V8 flags, for Miniflare (MINIFLARE_WORKERD_PATH): the config on stdin gets WORKERD_V8_FLAGS
# (patch-config.mjs), and stdout is line-buffered so V8's traces arrive as they happen. REAL_WORKERD is the
# binary. exec keeps the process workerd itself, so Miniflare's signals reach it.
exec stdbuf -oL "$REAL_WORKERD" "$@" < <(node "$(dirname "$0")/patch-config.mjs")
