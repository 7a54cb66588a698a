#!/bin/sh
# examples/chat in a pseudo-terminal (tmux), typed to as a user would: a reply streams, Ctrl-C
# stops it and the program goes on, /reset starts again, Ctrl-C at the prompt does not end it,
# Ctrl-D does, with status 0. The model is random (a SmolLM2-135M layer shape, 4 layers, the
# fortunes tokenizer, written here in a second) so that a reply lasts long enough to interrupt.
#   tests/cli/chat_terminal.sh CHAT_BINARY TESTS_DATA_DIR TOOLS_DIR
set -eu
chat=$1 data=$2 tools=$3
work=$(mktemp -d)
sock="tessera_chat_$$"
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$work"' EXIT
/usr/bin/python3 "$tools/llama_reference.py" checkpoint --config smollm2-135m --vocab 1759 --layers 4 --out "$work/model" >/dev/null
cp "$data/fortunes-smollm/tokenizer.json" "$data/fortunes-smollm/tokenizer_config.json" "$work/model/"
tmux -L "$sock" new-session -d -x 160 -y 50 \
  "$chat --model $work/model --chat-template-file $data/chat/templates/qwen2_5.jinja --temperature 0 --ignore-eos --threads 1 --ctx-size 4096; echo \"chat exited \$?\"; sleep 60"
# -J: a line the terminal wrapped comes back whole (a "[stopped]" at the edge was split in two).
screen() { tmux -L "$sock" capture-pane -p -J -S -200; }
wait_for() {  # an extended regular expression, and how many seconds to wait for it
  i=0
  until screen | grep -Eq "$1"; do
    i=$((i + 1))
    if [ "$i" -gt $(($2 * 10)) ]; then
      echo "timed out waiting for /$1/; the screen:"
      screen
      exit 1
    fi
    sleep 0.1
  done
}
wait_for '^> ?$' 60
tmux -L "$sock" send-keys 'Hello there' Enter
sleep 2
tmux -L "$sock" send-keys C-c
wait_for '\[stopped\]' 30
screen | grep -Eq '^> Hello there$' || { echo "the message is not on the screen"; screen; exit 1; }
# The reply streamed: text came between the message and the [stopped] mark.
reply=$(screen | sed -n '/^> Hello there$/,/\[stopped\]/p' | tr -d '\n' | sed 's/^> Hello there//; s/ \[stopped\].*//')
[ -n "$reply" ] || { echo "no reply text before [stopped]"; screen; exit 1; }
wait_for '\[stopped\]$' 5
tmux -L "$sock" send-keys '/reset' Enter
wait_for '^\(a new conversation\)$' 10
tmux -L "$sock" send-keys C-c
wait_for 'Ctrl-D or /quit to leave' 10
tmux -L "$sock" send-keys C-d
wait_for '^chat exited 0$' 10
echo "chat in a terminal: ok"
