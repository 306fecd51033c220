#!/usr/bin/env bash
# Install the third-party ACP agents the interop tests run (pytest -m interop), each into its
# own folder under $ACP_BRIDGE_INTEROP_DIR (default ~/.cache/acp-bridge-interop). Idempotent:
# an agent whose folder holds a .installed stamp for the same version is skipped.
#
#   tests/interop/install.sh                 # every agent
#   tests/interop/install.sh fast-agent chuk # only these
#
# Agents (versions pinned: the tests assert on their wire behaviour):
#   fast-agent   PyPI fast-agent-mcp, needs Python >= 3.12 ($ACP_BRIDGE_PYTHON312, else python3.12
#                on PATH, else ~/.pyenv/versions/3.12*); ~330 MB, about a minute
#   chuk         PyPI chuk-acp (its echo agent ships as data under the venv's share/)
#   gemini       npm @google/gemini-cli (run against a fake model server on 127.0.0.1)
#   qwen         npm @qwen-code/qwen-code (idem; 0.15.x is the last line for node 20)
#   ts-example   npm @zed-industries/agent-client-protocol: its TypeScript example agent,
#                bundled once with esbuild into agent.mjs for plain node
#   ts-v2        tests/agents/ts_v2: our test agent on npm @agentclientprotocol/sdk (v1 and
#                the v2 Preview behind its protocol router), npm ci from its lockfile
set -euo pipefail

FAST_AGENT_VERSION=0.10.45
CHUK_VERSION=0.3.2
GEMINI_VERSION=0.61.0
QWEN_VERSION=0.15.10
TS_SDK_VERSION=0.4.5
ESBUILD_VERSION=0.25.12

DIR=${ACP_BRIDGE_INTEROP_DIR:-$HOME/.cache/acp-bridge-interop}
mkdir -p "$DIR"

log() { printf '[interop install] %s\n' "$*" >&2; }

# installed NAME VERSION: true when NAME is already installed at VERSION.
installed() { [ "$(cat "$DIR/$1/.installed" 2>/dev/null)" = "$2" ]; }
stamp() { printf '%s\n' "$2" >"$DIR/$1/.installed"; log "$1 $2 ready in $DIR/$1"; }

python312() {
  if [ -n "${ACP_BRIDGE_PYTHON312:-}" ]; then echo "$ACP_BRIDGE_PYTHON312"; return; fi
  local candidate
  for candidate in python3.13 python3.12; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null; then
      command -v "$candidate"; return
    fi
  done
  for candidate in "$HOME"/.pyenv/versions/3.12*/bin/python; do
    if [ -x "$candidate" ]; then echo "$candidate"; return; fi
  done
  return 1
}

# fresh_venv PYTHON NAME: an empty venv at $DIR/NAME (a half-finished one is started over).
fresh_venv() {
  rm -rf "${DIR:?}/$2"
  "$1" -m venv "$DIR/$2"
  "$DIR/$2/bin/python" -m pip install -q --upgrade pip
}

install_fast_agent() {
  installed fast-agent "$FAST_AGENT_VERSION" && { log "fast-agent $FAST_AGENT_VERSION already installed"; return; }
  local py
  py=$(python312) || { log "fast-agent needs Python >= 3.12: set ACP_BRIDGE_PYTHON312"; return 1; }
  log "installing fast-agent-mcp $FAST_AGENT_VERSION with $py (about a minute)"
  fresh_venv "$py" fast-agent
  # Pinned: on Python 3.11 pip would silently pick 0.2.x, which has no ACP at all.
  "$DIR/fast-agent/bin/python" -m pip install -q "fast-agent-mcp==$FAST_AGENT_VERSION"
  stamp fast-agent "$FAST_AGENT_VERSION"
}

install_chuk() {
  installed chuk "$CHUK_VERSION" && { log "chuk $CHUK_VERSION already installed"; return; }
  log "installing chuk-acp $CHUK_VERSION"
  fresh_venv "${ACP_BRIDGE_PYTHON:-python3}" chuk
  "$DIR/chuk/bin/python" -m pip install -q "chuk-acp==$CHUK_VERSION"
  [ -f "$DIR/chuk/share/chuk-acp/examples/echo_agent.py" ] || { log "chuk-acp shipped no echo_agent.py"; return 1; }
  stamp chuk "$CHUK_VERSION"
}

# npm_install NAME SPEC...: packages into the npm prefix $DIR/NAME.
npm_install() {
  local name=$1; shift
  rm -rf "${DIR:?}/$name"
  mkdir -p "$DIR/$name"
  npm install --prefix "$DIR/$name" --no-audit --no-fund --loglevel=error "$@"
}

install_gemini() {
  installed gemini "$GEMINI_VERSION" && { log "gemini $GEMINI_VERSION already installed"; return; }
  log "installing @google/gemini-cli $GEMINI_VERSION"
  npm_install gemini "@google/gemini-cli@$GEMINI_VERSION"
  stamp gemini "$GEMINI_VERSION"
}

install_qwen() {
  installed qwen "$QWEN_VERSION" && { log "qwen $QWEN_VERSION already installed"; return; }
  log "installing @qwen-code/qwen-code $QWEN_VERSION"
  npm_install qwen "@qwen-code/qwen-code@$QWEN_VERSION"
  stamp qwen "$QWEN_VERSION"
}

install_ts_example() {
  installed ts-example "$TS_SDK_VERSION" && { log "ts-example $TS_SDK_VERSION already installed"; return; }
  log "installing @zed-industries/agent-client-protocol $TS_SDK_VERSION and bundling its example agent"
  npm_install ts-example "@zed-industries/agent-client-protocol@$TS_SDK_VERSION" "esbuild@$ESBUILD_VERSION"
  local prefix=$DIR/ts-example
  # Bundled to one file so the agent is plain `node agent.mjs`: no tsx, no esbuild service
  # process hanging around after the agent exits.
  "$prefix/node_modules/.bin/esbuild" \
    "$prefix/node_modules/@zed-industries/agent-client-protocol/typescript/examples/agent.ts" \
    --bundle --platform=node --format=esm --log-level=warning --outfile="$prefix/agent.mjs"
  stamp ts-example "$TS_SDK_VERSION"
}

install_ts_v2() {
  local source version
  source=$(cd "$(dirname "${BASH_SOURCE[0]}")/../agents/ts_v2" && pwd)
  version=$(sha256sum "$source/package-lock.json" "$source/agent.mjs" | sha256sum | cut -c1-16)
  installed ts-v2 "$version" && { log "ts-v2 $version already installed"; return; }
  log "installing the ts-v2 test agent (@agentclientprotocol/sdk from its lockfile)"
  rm -rf "$DIR/ts-v2" && mkdir -p "$DIR/ts-v2"
  cp "$source/package.json" "$source/package-lock.json" "$source/agent.mjs" "$DIR/ts-v2/"
  (cd "$DIR/ts-v2" && npm ci --no-audit --no-fund --loglevel=error)
  stamp ts-v2 "$version"
}

agents=("$@")
[ ${#agents[@]} -gt 0 ] || agents=(fast-agent chuk gemini qwen ts-example ts-v2)
status=0
for agent in "${agents[@]}"; do
  case $agent in
    fast-agent) install_fast_agent || status=1 ;;
    chuk) install_chuk || status=1 ;;
    gemini) install_gemini || status=1 ;;
    qwen) install_qwen || status=1 ;;
    ts-example) install_ts_example || status=1 ;;
    ts-v2) install_ts_v2 || status=1 ;;
    *) log "unknown agent: $agent (known: fast-agent chuk gemini qwen ts-example ts-v2)"; status=2 ;;
  esac
done
exit $status
