#!/usr/bin/env bash
# Translates a corpus on a Slurm cluster with a compiled translator: the
# input is cut into N shards of whole lines, a job array translates one
# shard per task (threads: the task's CPUs), and a job that runs after the
# whole array merges the outputs in order into OUTPUT, checking that every
# shard gave one line per line.
#
#   scripts/slurm/translate-corpus.sh INPUT OUTPUT --shards N
#       [--translator PATH] [--cpus-per-task C] [--partition P] [--wait]
#       [translator options...]
#   scripts/slurm/translate-corpus.sh --help
#
# INPUT, OUTPUT and the translator must be on a filesystem every node sees
# (the shards are kept in OUTPUT.shards/ until the merge succeeds).
# --translator: the compiled translator (default: $TFM_TRANSLATOR);
# --cpus-per-task: CPUs (and translator threads) per task, e.g. a node's or
# a socket's cores (default 2); --partition: the jobs' partition; --wait:
# return when the merge job ends, with 0 once OUTPUT is written. Other
# options go to the translator (-b 4, ...).
#
# OUTPUT never replaces a file the run reads (INPUT, the translator, a
# file an option names: the same file by any name); it is written whole,
# when every shard has succeeded, and an OUTPUT of an earlier run stays as
# it was until then. A shard that fails: the merge job fails, naming each
# failed shard and its log (OUTPUT.shards/task-I.log) in
# OUTPUT.shards/merge.log, and --wait exits 1 with the same names and the
# logs' last lines.
set -euo pipefail

# The header above, without its comment signs.
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
for arg in "$@"; do
  case $arg in -h|--help) usage; exit 0 ;; esac
done
[ $# -ge 2 ] || { usage >&2; exit 1; }
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
# The translator's rules for its outputs: a file is the same by device and
# inode (-ef), whatever its name.
[ -d "$output" ] && die "$output: cannot write: it is a directory"
[ "$output" -ef "$input" ] && die "$output is the input file $input: writing it would destroy what is being read; choose another output"
[ "$output" -ef "$translator" ] && die "$output is the translator $translator: choose another output"
for option in ${options[@]+"${options[@]}"}; do
  if [ -f "$option" ] && [ "$output" -ef "$option" ]; then
    die "$output is the file $option that an option names: choose another output"
  fi
done
command -v sbatch > /dev/null || die "sbatch not found: this needs a Slurm cluster (Debian: slurm-wlm)"

abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
input=$(abs "$input") output=$(abs "$output") translator=$(abs "$translator")
work=$output.shards
case $input/ in "$work"/*) die "$input lies in $work, which holds this run's shards: choose another output" ;; esac
rm -rf "$work"
mkdir -p "$work"
# N shards of whole lines, in order (GNU split; a shard may be empty).
split -n "l/$shards" -d -a 4 "$input" "$work/in."
rm -f "$output.part"
lines() { awk 'END { print NR }' "$1"; }

# Whether every shard gave one line per line (out.I is written only when the
# translator succeeded); if not, names each failed shard, its input and its
# log, with the log's last lines, on stderr. Run by the merge job, and here
# after it with --wait.
check_shards() {
  local part shard task out log failed=0 count=0
  for part in "$work"/in.*; do
    shard=${part##*/in.} task=$((10#${part##*/in.}))
    out=$work/out.$shard log=$work/task-$task.log
    count=$((count + 1))
    if [ -f "$out" ] && [ "$(lines "$out")" = "$(lines "$part")" ]; then
      continue
    fi
    failed=$((failed + 1))
    if [ -f "$out" ]; then
      echo "translate-corpus: shard $task ($part) gave $(lines "$out") lines for $(lines "$part"): see $log" >&2
    elif [ -s "$work/status.$shard" ]; then
      echo "translate-corpus: shard $task ($part) failed with exit status $(cat "$work/status.$shard"): see $log" >&2
    else
      echo "translate-corpus: shard $task ($part) did not finish (still running, cancelled or killed): see $log" >&2
    fi
    if [ -s "$log" ]; then
      tail -n 5 "$log" | sed 's/^/    /' >&2
    fi
  done
  if [ "$failed" != 0 ]; then
    echo "translate-corpus: $failed of $count shards failed" >&2
    return 1
  fi
}

quoted=""
[ ${#options[@]} -gt 0 ] && quoted=$(printf ' %q' "${options[@]}")
{
  echo '#!/usr/bin/env bash'
  echo 'set -uo pipefail'
  printf 'work=%q translator=%q\n' "$work" "$translator"
  printf 'options=(%s)\n' "$quoted"
  cat <<'TASK'
shard=$(printf %04d "$SLURM_ARRAY_TASK_ID")
# A requeued task starts over.
rm -f "$work/out.$shard" "$work/out.$shard.part" "$work/status.$shard"
status=0
"$translator" -q --threads "${SLURM_CPUS_PER_TASK:-1}" ${options[@]+"${options[@]}"} \
  "$work/in.$shard" -o "$work/out.$shard.part" || status=$?
if [ "$status" = 0 ]; then
  mv "$work/out.$shard.part" "$work/out.$shard" || status=$?
else
  rm -f "$work/out.$shard.part"
fi
echo "$status" > "$work/status.$shard"
exit "$status"
TASK
} > "$work/task.sh"
{
  echo '#!/usr/bin/env bash'
  echo 'set -euo pipefail'
  printf 'work=%q output=%q\n' "$work" "$output"
  declare -f lines check_shards
  cat <<'MERGE'
# Never a partial OUTPUT: a merge that fails or is cancelled removes its part.
trap 'rm -f "$output.part"' EXIT
trap 'exit 143' TERM
if ! check_shards; then
  echo "translate-corpus: $output not written; the shards are kept in $work" >&2
  exit 1
fi
for part in "$work"/in.*; do
  cat "$work/out.${part##*/in.}"
done > "$output.part"
mv "$output.part" "$output"
rm -rf "$work"
MERGE
} > "$work/merge.sh"
chmod +x "$work/task.sh" "$work/merge.sh"

# The merge runs once every task has ended, in whatever state (afterany),
# and checks the shards itself: a failed shard makes the merge job fail
# (state FAILED; merge.log names the shard and its log). With afterok it
# would be cancelled as never runnable, which says nothing of which shard
# failed or why, and which `sbatch --wait` reports as success (exit 0).
common=(--parsable --job-name=tfm-translate)
[ -n "$partition" ] && common+=(--partition="$partition")
array=$(sbatch "${common[@]}" --array="0-$((shards - 1))" --cpus-per-task="$cpus" \
  --output="$work/task-%a.log" "$work/task.sh")
array=${array%%;*}
merge=(sbatch "${common[@]}" --dependency="afterany:$array" --kill-on-invalid-dep=yes
  --cpus-per-task=1 --output="$work/merge.log")
if [ "$wait" = 1 ]; then
  echo "translate-corpus: job array $array ($shards shards), then the merge into $output" >&2
  # sbatch --wait exits with the merge job's status, but with 0 for a job
  # cancelled before it ran: success is that status and the shards gone,
  # which the merge removes only once OUTPUT is in place.
  status=0
  job=$("${merge[@]}" --wait "$work/merge.sh") || status=$?
  job=${job%%;*}
  if [ "$status" != 0 ] || [ -d "$work" ]; then
    [ -n "$job" ] || die "the merge job was not submitted (cancel the job array: scancel $array)"
    if [ -d "$work" ]; then
      check_shards || die "$output not written; the shards are kept in $work"
    fi
    if [ -s "$work/merge.log" ]; then
      tail -n 5 "$work/merge.log" | sed 's/^/    /' >&2
    fi
    die "the merge job $job did not write $output (sbatch --wait: exit $status): see $work/merge.log"
  fi
  echo "translate-corpus: $output: $(lines "$output") lines"
else
  job=$("${merge[@]}" "$work/merge.sh")
  echo "translate-corpus: job array $array ($shards shards), merge job ${job%%;*} writes $output (or fails naming the failed shards in $work/merge.log)"
fi
