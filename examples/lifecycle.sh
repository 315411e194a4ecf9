#!/usr/bin/env bash
# The execution-host lifecycle end to end: provision from a git repository at
# a named revision, run a command, checkpoint, change the workspace, restore
# into a new execution, show that it holds the checkpointed bytes, terminate
# both. `cordon ls` is empty afterwards.
#
#   bash examples/lifecycle.sh [PROVIDER [IMAGE]]     (default: trusted-local)
set -euo pipefail
cordon=${CORDON:-cordon}
provider=${1:-trusted-local}
image=${2:-}
work=$(mktemp -d /tmp/cordon-example.XXXXXX)
state="$work/state"
trap 'rm -rf "$work"' EXIT
c() { "$cordon" --state-dir "$state" "$@"; }

# A small repository with two revisions; the workspace comes from v1.
repo="$work/repo"
git init -q -b main "$repo"
git -C "$repo" -c user.email=ex@example.invalid -c user.name=ex commit -q --allow-empty -m root
printf 'print("revision one")\n' >"$repo/app.py"
git -C "$repo" add app.py
git -C "$repo" -c user.email=ex@example.invalid -c user.name=ex commit -q -m one
git -C "$repo" tag v1
printf 'print("revision two")\n' >"$repo/app.py"
git -C "$repo" -c user.email=ex@example.invalid -c user.name=ex commit -qam two

limits=(--cpus 1 --memory 256M --disk 64M --pids 128 --runtime 10m --max-output 1M)
extra=()
[ "$provider" = trusted-local ] && extra+=(--allow-unsafe-local)
[ -n "$image" ] && extra+=(--image "$image")

echo "== provision $provider from $repo at v1"
id=$(c provision --provider "$provider" --workspace "git:$repo@v1" "${limits[@]}" "${extra[@]}")
echo "execution: $id"
echo "== exec: cat app.py"
c exec "$id" -- cat app.py
echo "== exec: write notes.txt"
c exec "$id" -- sh -c 'echo "checkpointed note" > notes.txt'
echo "== checkpoint"
ckpt=$(c checkpoint "$id" --metadata '{"reason":"example"}')
echo "checkpoint: $ckpt"
echo "== change the workspace after the checkpoint"
c exec "$id" -- sh -c 'echo "changed later" > notes.txt'
c exec "$id" -- cat notes.txt
echo "== restore into a new execution"
restored_args=()
[ "$provider" = trusted-local ] && restored_args+=(--allow-unsafe-local)
new=$(c restore "$ckpt" "${restored_args[@]}")
echo "restored execution: $new"
c exec "$new" -- cat notes.txt app.py
echo "== terminate both"
c terminate "$id"
c terminate "$new"
echo "== cordon ls (empty)"
c ls --json
