#!/bin/sh
# Install gradcli into a virtual environment and put its `gradcli` command on PATH:
#   ./install.sh                 # .venv here, the command linked into a folder on PATH
#   VENV=dir ./install.sh        # another environment (made if missing)
#   GRADCLI_BIN=dir ./install.sh # link into dir instead (GRADCLI_BIN=none: no link)
# The folder: ~/.local/bin or ~/bin where PATH has it, else /usr/local/bin where writable, else the
# first writable folder of PATH under $HOME, else ~/.local/bin, made, with a line in the shell's
# start-up files (~/.profile, and ~/.bashrc and ~/.zshrc where they exist) that puts it on PATH in
# new shells, where they do not mention it yet (GRADCLI_PROFILE=none: edit none). This shell's PATH
# is its own: the README's command adds ~/.local/bin to it.
set -eu
cd "$(dirname "$0")"
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install ${PIP_ARGS:-} .
command=$(cd "$VENV/bin" && pwd)/gradcli

on_path() { case ":$PATH:" in *":$1:"*) return 0 ;; esac; return 1; }
bin=${GRADCLI_BIN:-}
if [ -z "$bin" ]; then
    for d in "$HOME/.local/bin" "$HOME/bin"; do
        if on_path "$d" && { [ -d "$d" ] || mkdir -p "$d"; } && [ -w "$d" ]; then bin=$d; break; fi
    done
fi
if [ -z "$bin" ] && on_path /usr/local/bin && [ -w /usr/local/bin ]; then bin=/usr/local/bin; fi
if [ -z "$bin" ]; then
    old_ifs=$IFS; IFS=:
    for d in $PATH; do
        case "$d" in "$HOME"/*) if [ -d "$d" ] && [ -w "$d" ]; then bin=$d; break; fi ;; esac
    done
    IFS=$old_ifs
fi
if [ -z "$bin" ]; then  # no folder on PATH to write to (a user's shell before ~/.local/bin exists)
    bin=$HOME/.local/bin
    if [ "${GRADCLI_PROFILE:-}" != none ]; then
        line='case ":$PATH:" in *":$HOME/.local/bin:"*) ;; *) export PATH="$HOME/.local/bin:$PATH" ;; esac'
        for rc in "$HOME/.profile" "$HOME/.bashrc" "$HOME/.zshrc"; do
            { [ -f "$rc" ] || [ "$rc" = "$HOME/.profile" ]; } || continue
            grep -qs '\.local/bin' "$rc" && continue  # (Debian's ~/.profile adds it once it exists)
            printf '\n# gradcli (install.sh): ~/.local/bin on PATH\n%s\n' "$line" >> "$rc"
            echo "gradcli: added ~/.local/bin to PATH in $rc"
        done
    fi
    echo "gradcli: ~/.local/bin is on PATH in new shells; in this one: export PATH=\"\$HOME/.local/bin:\$PATH\""
fi
if [ "$bin" != none ]; then
    mkdir -p "$bin"
    ln -sf "$command" "$bin/gradcli"
    echo "gradcli: $bin/gradcli -> $command"
else
    echo "gradcli: installed as $command (GRADCLI_BIN=none: no link); run it by that path," \
         "or add $(dirname "$command") to PATH" >&2
fi
