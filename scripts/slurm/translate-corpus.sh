#!/usr/bin/env bash
# Translates a corpus on a Slurm cluster with a compiled translator: the
# input is cut into N shards of whole lines, a job array translates one
# shard per task (threads: the task's CPUs), and a job that depends on the
# whole array merges the outputs in order into OUTPUT, checking that every
# shard gave one line per line.
#
#   scripts/slurm/translate-corpus.sh INPUT OUTPUT --shards N
#       [--translator PATH] [--cpus-per-task C] [--partition P] [--wait]
#       [translator options...]
#
# INPUT, OUTPUT and the translator must be on a filesystem every node sees
# (the shards are kept in OUTPUT.shards/ until the merge succeeds).
# --translator: the compiled translator (default: $TFM_TRANSLATOR);
# --cpus-per-task: CPUs (and translator threads) per task, e.g. a node's or
# a socket's cores (default 2); --wait: return when OUTPUT is written, with
# the merge job's status. Other options go to the translator (-b 4, ...).
set -euo pipefail

usage() { sed -n '9,12p' "$0" | sed 's/^# //' >&2; exit 1; }
[ $# -ge 2 ] || usage
input=$1 output=$2
shift 2
shards="" translator=${TFM_TRANSLATOR:-} cpus=2 partition="" wait=0
options=()
while [ $# -gt 0 ]; do
  case $1 in
    --shards) shards=${2:?--shards needs a number}; shift 2 ;;
    --translator) translator=${2:?}; shift 2 ;;
    --cpus-per-task) cpus=${2:?}; shift 2 ;;
    --partition) partition=${2:?}; shift 2 ;;
    --wait) wait=1; shift ;;
    *) options+=("$1"); shift ;;
  esac
done
die() { echo "translate-corpus: $*" >&2; exit 1; }
[[ $shards =~ ^[1-9][0-9]*$ ]] || die "--shards N needs a number >= 1"
[ -f "$input" ] || die "$input: no such file"
[ -n "$translator" ] && [ -x "$translator" ] || die "no translator: pass --translator PATH (or set TFM_TRANSLATOR)"
command -v sbatch > /dev/null || die "sbatch not found: this needs a Slurm cluster (Debian: slurm-wlm)"

abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
input=$(abs "$input") output=$(abs "$output") translator=$(abs "$translator")
work=$output.shards
rm -rf "$work"
mkdir -p "$work"
# N shards of whole lines, in order (GNU split; a shard may be empty).
split -n "l/$shards" -d -a 4 "$input" "$work/in."
lines() { awk 'END { print NR }' "$1"; }

quoted=""
[ ${#options[@]} -gt 0 ] && quoted=$(printf ' %q' "${options[@]}")
cat > "$work/task.sh" <<TASK
#!/usr/bin/env bash
set -euo pipefail
shard=\$(printf %04d "\$SLURM_ARRAY_TASK_ID")
$(printf %q "$translator") -q --threads "\${SLURM_CPUS_PER_TASK:-1}"$quoted \\
  "$work/in.\$shard" -o "$work/out.\$shard.part"
mv "$work/out.\$shard.part" "$work/out.\$shard"
TASK
cat > "$work/merge.sh" <<MERGE
#!/usr/bin/env bash
set -euo pipefail
lines() { awk 'END { print NR }' "\$1"; }
for part in "$work"/in.*; do
  out=${work}/out.\${part##*/in.}
  [ -f "\$out" ] || { echo "translate-corpus: \$out is missing" >&2; exit 1; }
  [ "\$(lines "\$part")" = "\$(lines "\$out")" ] ||
    { echo "translate-corpus: \$out has \$(lines "\$out") lines for \$(lines "\$part")" >&2; exit 1; }
done
cat "$work"/out.* > "$output.part"
mv "$output.part" "$output"
rm -rf "$work"
MERGE
chmod +x "$work/task.sh" "$work/merge.sh"

common=(--parsable --job-name=tfm-translate)
[ -n "$partition" ] && common+=(--partition="$partition")
array=$(sbatch "${common[@]}" --array="0-$((shards - 1))" --cpus-per-task="$cpus" \
  --output="$work/task-%a.log" "$work/task.sh")
array=${array%%;*}
merge=(sbatch "${common[@]}" --dependency="afterok:$array" --kill-on-invalid-dep=yes
  --cpus-per-task=1 --output="$work/merge.log")
if [ "$wait" = 1 ]; then
  echo "translate-corpus: job array $array ($shards shards), then the merge into $output" >&2
  "${merge[@]}" --wait "$work/merge.sh" > /dev/null ||
    die "the translation failed: see $work/task-*.log and $work/merge.log"
  echo "translate-corpus: $output: $(lines "$output") lines"
else
  job=$("${merge[@]}" "$work/merge.sh")
  echo "translate-corpus: job array $array ($shards shards), merge job ${job%%;*} writes $output"
fi
